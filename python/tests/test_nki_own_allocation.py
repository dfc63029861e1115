"""The kernel's own allocation when it leaves tensors to the compiler (issue 55): new-API kernels
mix address= tensors with tensors the compiler places. Their own allocation is the addressed
tensors where the kernel puts them and the compiler-placed ones placed by our planner around them
(the keep-direct plan: the compiler's placement is not known), simulated on the same timeline,
reported as such, and the plan is never slower than it."""
import json
import os
import subprocess
import sys

from scratchplan import nki

sys.path.insert(0, os.path.dirname(__file__))
from conftest import CLI  # noqa: E402

# a and b share bytes by address (legal: a is dead when b is loaded), so b's load waits for a's
# last read; t and u have no address=: the compiler places them.
MIXED = """import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def kernel(x, y):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    out2 = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, B_ADDRESS))
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.activation(dst=t, op=nl.exp, data=a)
    nisa.dma_copy(dst=b, src=y)
    nisa.activation(dst=u, op=nl.exp, data=b)
    nisa.dma_copy(dst=out, src=t)
    nisa.dma_copy(dst=out2, src=u)
    return out, out2
"""
INPUTS = ("128x512:fp32", "128x512:fp32")


def kernel_file(tmp_path, b_address):
    p = tmp_path / f"mixed{b_address}.py"
    p.write_text(MIXED.replace("B_ADDRESS", str(b_address)))
    return str(p)


def test_own_allocation_places_the_compiler_placed_share_and_says_so(tmp_path):
    k = nki.trace(kernel_file(tmp_path, 0), *INPUTS)
    assert sorted(t["name"] for t in k["tensors"] if t.get("alloc", {}).get("compiler_placed")) == ["t", "u"]
    assert nki.check(k).clean
    d = nki.plan(k).to_dict()
    assert d["input_compiler_placed_by_planner"] is True and d["input_allocation_cycles"] is not None
    # The kernel's shared address orders b's load after a's reads; the plan separates them.
    assert d["simulated_cycles"] < d["input_allocation_cycles"]
    # The own allocation is the keep-direct plan: the kernel's addresses, ours for t and u.
    kept = nki.plan(k, keep_direct=True).to_dict()
    assert kept["simulated_cycles"] == d["input_allocation_cycles"] == kept["input_allocation_cycles"]
    assert kept["input_compiler_placed_by_planner"] is True
    by = {t["tensor"]: t for t in kept["tensors"]}
    assert by["a"]["kept"] and by["b"]["kept"] and not by["t"]["kept"] and not by["u"]["kept"]


def test_no_slower_than_the_own_allocation_and_the_cli_reports_it(tmp_path):
    for b_address in (0, 2048):  # shared (the plan wins) and apart (nothing to win)
        path = kernel_file(tmp_path, b_address)
        args = [a for i, s in zip("xy", INPUTS) for a in ("--input", f"{i}={s}")]
        r = subprocess.run([CLI, "nki", "plan", path, *args, "--json"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["input_compiler_placed_by_planner"] is True
        assert d["simulated_cycles"] <= d["input_allocation_cycles"]
        amap = os.path.join(str(tmp_path), f"addr{b_address}.json")
        r = subprocess.run([CLI, "nki", "plan", path, *args, "--addresses", amap], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert "its compiler-placed tensors placed by this planner" in r.stdout
        m = json.load(open(amap))
        assert m["own_compiler_placed_by_planner"] is True and m["planned_cycles"] <= m["own_cycles"]
        own = {t["tensor"]: t["own_address"] for t in m["tensors"]}
        assert own["t"] is None and own["u"] is None and own["b"] == [[0, b_address]]


def test_a_kernel_without_compiler_placed_tensors_reports_as_before(tmp_path):
    text = MIXED.replace("B_ADDRESS", "2048").replace(
        "t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)",
        "t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4096))").replace(
        "u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)",
        "u = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 6144))")
    p = tmp_path / "addressed.py"
    p.write_text(text)
    d = nki.plan(nki.trace(str(p), *INPUTS)).to_dict()
    assert "input_compiler_placed_by_planner" not in d and d["input_allocation_cycles"] is not None
    assert d["simulated_cycles"] <= d["input_allocation_cycles"]
