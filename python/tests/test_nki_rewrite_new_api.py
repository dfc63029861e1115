"""`nki plan --rewrite` of new-API kernels (issue 55): the planned addresses written as
`address=(partition, byte)` in place of literal ones, added where the compiler placed a tensor,
and one-line refusals when the kernel's addresses are computed or a tensor needs several tiles."""
import re
import subprocess
import sys
import os

sys.path.insert(0, os.path.dirname(__file__))
from conftest import CLI  # noqa: E402

HEAD = """import nki
import nki.language as nl
import nki.isa as nisa
"""

# `b` reuses a's bytes once a is read: its load waits for the add. The plan separates them.
REUSE = HEAD + """
@nki.jit
def kernel(x, y):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 2048))
    b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0,
                                                                          0))  # spans lines
    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)  # placed by the compiler
    p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 4096))
    nisa.dma_copy(dst=a, src=x)
    nisa.tensor_tensor(dst=t, data1=a, data2=a, op=nl.add)
    nisa.tensor_tensor(dst=t, data1=t, data2=a, op=nl.multiply)
    nisa.dma_copy(dst=b, src=y)
    nisa.tensor_tensor(dst=c, data1=t, data2=b, op=nl.add)
    nisa.tensor_copy(dst=p, src=c)
    nisa.tensor_copy(dst=t, src=p)
    nisa.dma_copy(dst=out, src=t)
    return out
"""

INPUTS = ("--input", "x=128x512:fp32", "--input", "y=128x512:fp32", "--hardware", "trn2")


def nki(*args):
    return subprocess.run([CLI, "nki", *args], capture_output=True, text=True, timeout=120)


def cycles(report, what):
    pattern = {"planned": r"simulated time: (\d+) cycles", "own": r"the kernel's own allocation: (\d+) cycles"}[what]
    return int(re.search(pattern, report).group(1))


def test_rewrite_writes_planned_addresses_in_new_api_terms(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(REUSE)
    out = tmp_path / "planned.py"
    r = nki("plan", f"{src}:kernel", *INPUTS, "--rewrite", str(out))
    assert r.returncode == 0, r.stderr
    planned = cycles(r.stdout, "planned")
    text = out.read_text()
    # only address= values changed or were added; no old-API allocation appears
    assert "mod_alloc" not in text and "ncc" not in text
    assert re.sub(r"address=\([^)]*\)", "A", text).replace(", A)", ")") == \
        re.sub(r"address=\([^)]*\)", "A", REUSE).replace(", A)", ")")
    assert re.search(r"c = nl\.ndarray\(\(128, 512\), dtype=nl\.float32, buffer=nl\.sbuf, address=\(\d+, \d+\)\)", text)
    # the rewritten kernel checks clean and its own allocation is the plan, cycle for cycle
    r = nki("check", f"{out}:kernel", *INPUTS)
    assert r.returncode == 0 and "violations: 0" in r.stdout, r.stdout + r.stderr
    r = nki("plan", f"{out}:kernel", *INPUTS)
    assert r.returncode == 0, r.stderr
    assert cycles(r.stdout, "own") == planned


def test_rewrite_separates_a_reused_address_when_that_is_faster(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(REUSE.replace("    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)  # placed by the compiler",
                                 "    c = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 8192))"))
    r = nki("plan", f"{src}:kernel", *INPUTS, "--rewrite", str(tmp_path / "o.py"))
    assert r.returncode == 0, r.stderr
    own, planned = cycles(r.stdout, "own"), cycles(r.stdout, "planned")
    assert planned < own  # b's load no longer waits for the reads of a
    addr = dict(re.findall(r"^    (\w+) = nl\.ndarray\([^=]*=[^=]*=[^=]*address=\((\d+, \d+)\)", (tmp_path / "o.py").read_text(),
                           re.M))
    assert addr["a"] != addr["b"]


def test_rewrite_refuses_computed_addresses_in_one_line(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(REUSE.replace("address=(0, 2048)", "address=(0, base + 2048)").replace(
        "def kernel(x, y):", "def kernel(x, y, base=0):"))
    out = tmp_path / "o.py"
    r = nki("plan", f"{src}:kernel", *INPUTS, "--rewrite", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "k.py:9:" in r.stderr and "(0, base + 2048)" in r.stderr and "not a literal" in r.stderr
    assert not out.exists()


def test_rewrite_refuses_addresses_from_a_helper_in_one_line(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(HEAD + """
def place(shape, offset):
    return nl.ndarray(shape, dtype=nl.float32, buffer=nl.sbuf, address=(0, offset))

@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = place((128, 512), 0)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=out, src=a)
    return out
""")
    r = nki("plan", f"{src}:kernel", "--input", "x=128x512:fp32", "--rewrite", str(tmp_path / "o.py"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "not a literal" in r.stderr or "computed" in r.stderr


def test_rewrite_refuses_one_declaration_of_several_tensors(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(HEAD + """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    bufs = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0)) for i in range(2)]
    for a in bufs:
        nisa.dma_copy(dst=a, src=x)
        nisa.dma_copy(dst=out, src=a)
    return out
""")
    r = nki("plan", f"{src}:kernel", "--input", "x=128x512:fp32", "--rewrite", str(tmp_path / "o.py"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "several tensors" in r.stderr and "one address=" in r.stderr
