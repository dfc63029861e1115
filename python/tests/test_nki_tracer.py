"""The NKI tracer (scratchplan.nki.trace and `scratchplan nki check|plan FILE.py`): the direct
allocation guide's snippets, completed into kernels, give the guide's numbers; tutorial-style
kernels in both import spellings trace, check and plan, and their --rewrite traces and checks
clean; bad kernels are one line with file:line, exit 2, no output file."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import scratchplan
from scratchplan import _core, nki

sys.path.insert(0, os.path.dirname(__file__))
import nki_kernels as K  # noqa: E402

# The CLI next to the package in the build tree (build/<preset>/python/scratchplan -> build/<preset>).
CLI = os.environ.get("SCRATCHPLAN_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(scratchplan.__file__)))), "scratchplan")
if not os.path.exists(CLI):  # an installed package: the installed CLI
    CLI = shutil.which("scratchplan") or CLI

OLD = K.HEADERS["modules"]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def cli(*args):
    return subprocess.run([CLI, "nki", *args], capture_output=True, text=True, timeout=120)


def inputs_args(inputs, grid=None):
    out = []
    for i in inputs:
        out += ["--input", i]
    if grid:
        out += ["--grid", grid]
    return out


def line_of(src, snippet):
    """1-based line of the first line starting (after indentation) with `snippet`."""
    return next(i for i, l in enumerate(src.splitlines(), 1) if l.strip().startswith(snippet))


def placements(kernel):
    """Allocation of every directly allocated tensor, evaluated by the C++ checker."""
    return nki.check(kernel).placements()


# ---- the guide's snippets --------------------------------------------------------------------

SIMPLE_1D = OLD + '''
def simple_1d_alloc_func(idx, pdim_size, fdim_size):
    idx, = idx  # unpack the tuple
    return (0, idx * fdim_size)


@nki.jit
def kernel(x):
    out = nl.ndarray((4, 128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((4, par_dim(128), 512), dtype=nl.bfloat16, buffer=ncc.sbuf.alloc(simple_1d_alloc_func))
    for i in nl.affine_range(4):
        t[i] = nl.load(x[i])
        nl.store(out[i], value=t[i])
    return out
'''

FACTORY = OLD + '''
next_addr = 0


def simple_1d_alloc_factory(total_fdim_size):
    global next_addr
    base_addr = next_addr
    next_addr += total_fdim_size

    def simple_1d_alloc_func(idx, pdim_size, fdim_size):
        idx, = idx
        start_partition = 0
        return (start_partition, base_addr + idx * fdim_size)
    return simple_1d_alloc_func


@nki.jit
def kernel(x):
    out = nl.ndarray((4, 128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t0 = nl.ndarray((4, par_dim(128), 512), dtype=nl.bfloat16, buffer=ncc.sbuf.alloc(simple_1d_alloc_factory(512*2*4)))
    t1 = nl.ndarray((4, par_dim(128), 512), dtype=nl.bfloat16, buffer=ncc.sbuf.alloc(simple_1d_alloc_factory(512*2*4)))
    for i in nl.affine_range(4):
        t0[i] = nl.load(x[i])
        t1[i] = nl.square(t0[i])
        nl.store(out[i], value=t1[i])
    return out
'''

MODULO = OLD + '''
@nki.jit
def kernel(x):
    out = nl.ndarray((4, 128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nki_tensor = nl.ndarray((4, par_dim(128), 512), dtype=nl.bfloat16,
                            buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2, )))
    for i in nl.affine_range(4):
        nki_tensor[i] = nl.load(x[i])
        nl.store(out[i], value=nki_tensor[i])
    return out
'''

# The guide's lifetime conflict is the bundled example (examples/nki/lifetime_conflict.py).
EXAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "nki")
with open(os.path.join(EXAMPLE_DIR, "lifetime_conflict.py")) as f:
    LIFETIME_CONFLICT = f.read()

LIFETIME_FIXED = OLD + '''
@nki.jit
def kernel(x):
    result = nl.ndarray((8, 128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    bias = nl.ndarray((128, 1), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=8192))
    bias[...] = 0.0
    for i in nl.affine_range(4):
        t1 = nl.ndarray((2, par_dim(128), 512), dtype=nl.bfloat16,
                        buffer=ncc.sbuf.mod_alloc(byte_addr=0, num_free_tiles=(2, )))
        r = nl.ndarray((2, par_dim(128), 512), dtype=nl.bfloat16,
                       buffer=ncc.sbuf.mod_alloc(base_addr=4096, num_free_tiles=(2, )))
        for j in nl.affine_range(2):
            t1[j] = nl.load(x[i * 2 + j])
            r[j] = nl.exp(t1[j], bias=bias)
            nl.store(result[i * 2 + j], value=r[j])
    return result
'''

MIXING = OLD + '''
@nki.jit
def kernel(input):
    out = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    u = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    t = nl.load(input)
    u[...] = nl.square(t)
    nl.store(out, value=u)
    return out
'''

X4 = ((4, 128, 512), "bf16")


def test_simple_1d_alloc_func_addresses(tmp_path):
    k = nki.trace(write(tmp_path, "simple.py", SIMPLE_1D), x=X4)
    t = next(t for t in k["tensors"] if t["name"] == "t")
    assert t["alloc"] == {"kind": "table", "tiles": [[0, 0], [0, 1024], [0, 2048], [0, 3072]]}
    assert t["source"] == "simple.py:%d" % line_of(SIMPLE_1D, "t = nl.ndarray")
    assert nki.check(k).clean


def test_factory_allocator_places_t0_at_0_and_t1_at_4096(tmp_path):
    k = nki.trace(write(tmp_path, "factory.py", FACTORY), x=X4)
    pl = placements(k)
    assert [b for _, b in pl["t0"]] == [0, 1024, 2048, 3072]
    assert [b for _, b in pl["t1"]] == [4096, 5120, 6144, 7168]
    assert nki.check(k).clean


def test_mod_alloc_double_buffering_table(tmp_path):
    k = nki.trace(write(tmp_path, "modulo.py", MODULO), x=X4)
    assert [b for _, b in placements(k)["nki_tensor"]] == [0, 1024, 0, 1024]
    assert nki.check(k).clean


def test_eight_tiles_on_two_physical_tiles_are_flagged_with_source_lines(tmp_path):
    path = write(tmp_path, "conflict.py", LIFETIME_CONFLICT)
    rep = nki.check(nki.trace(path, x=((8, 128, 512), "bf16")))
    assert not rep.clean
    vs = rep.violations
    assert [v["kind"] for v in vs] == ["lifetime_conflict"] * 6
    for b, v in enumerate(vs):
        assert v["tensor"] == "t1" and v["block"] == [b]
        assert v["declared_at"] == "conflict.py:%d" % line_of(LIFETIME_CONFLICT, "t1 = nl.ndarray")
        assert v["source"] == "conflict.py:%d" % line_of(LIFETIME_CONFLICT, "r[j] = nl.exp(t1[j]")
        assert v["overwritten_by"]["source"] == "conflict.py:%d" % line_of(LIFETIME_CONFLICT, "t1[i] = nl.load")
        assert v["overwritten_by"]["block"] == [b + 2]
        assert v["iteration"] == "{j=%d}" % b
    # The CLI says the same, as one line on stderr with exit 2.
    r = cli("check", path, "--input", "x=8x128x512:bf16")
    assert r.returncode == 2
    for snippet in ("t1 = nl.ndarray", "r[j] = nl.exp(t1[j]", "t1[i] = nl.load"):
        assert "conflict.py:%d" % line_of(LIFETIME_CONFLICT, snippet) in r.stderr
    assert r.stderr.count("\n") == 1


def test_corrected_form_is_clean(tmp_path):
    k = nki.trace(write(tmp_path, "fixed.py", LIFETIME_FIXED), x=((8, 128, 512), "bf16"))
    # Declared inside the i loop, traced once: one tensor each, not four.
    assert sum(t["name"].startswith("t1") for t in k["tensors"]) == 1
    assert nki.check(k).clean


def test_implicit_result_in_a_direct_allocation_kernel_is_mixing(tmp_path):
    rep = nki.check(nki.trace(write(tmp_path, "mixing.py", MIXING), input=((128, 512), "bf16")))
    kinds = {(v["kind"], v["tensor"]) for v in rep.violations}
    assert ("mixed_allocation", "t") in kinds
    v = next(v for v in rep.violations if v["kind"] == "mixed_allocation")
    assert v["declared_at"] == "mixing.py:%d" % line_of(MIXING, "t = nl.load(input)")


# ---- semantics of the stand-ins ----------------------------------------------------------------

def test_loops_run_once_and_static_range_unrolls(tmp_path):
    src = OLD + '''
count = 0


@nki.jit
def kernel(x):
    global count
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(8):
        count += 1
    for i in range(16):
        count += 1
    for i in nl.static_range(3):
        t = nl.load(x)
        nl.store(out, value=t)
    assert count == 2
    return out
'''
    k = nki.trace(write(tmp_path, "once.py", src), x=((128, 512), "fp32"))
    names = [n.get("name") for n in k["body"]]
    assert names.count("load") == 3 and names.count("store") == 3


def test_modules_are_installed_only_while_tracing(tmp_path):
    before = {m for m in sys.modules if m == "nki" or m.startswith(("nki.", "neuronxcc"))}
    nki.trace(write(tmp_path, "modulo.py", MODULO), x=X4)
    after = {m for m in sys.modules if m == "nki" or m.startswith(("nki.", "neuronxcc"))}
    assert before == after


def test_trace_accepts_the_function_and_a_grid(tmp_path):
    path = write(tmp_path, "add.py", OLD + K.TENSOR_ADD_SPMD)
    k = nki.trace(path + ":kernel", a_input=((256, 1024), "fp32"), b_input="256x1024:fp32", grid=(2, 2))
    assert k["body"][0]["loop"] == "pid0" and k["body"][0]["trip"] == 2
    assert k["body"][0]["body"][0]["loop"] == "pid1"
    assert nki.check(k).clean
    # The launch syntax kernel[g0, g1] on an imported kernel (importing needs the stand-ins).
    import importlib.util
    spec = importlib.util.spec_from_file_location("sp_add_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    with nki.stand_ins():
        spec.loader.exec_module(mod)
    assert nki.trace(mod.kernel[2, 2], a_input=((256, 1024), "fp32"), b_input=((256, 1024), "fp32")) == k


def test_psum_accumulation_and_engines(tmp_path):
    k = nki.trace(write(tmp_path, "mm.py", OLD + K.MATMUL_PSUM), lhsT=((256, 256), "bf16"), rhs=((256, 1024), "bf16"))
    flat = []

    def walk(b):
        for n in b:
            walk(n["body"]) if "loop" in n else flat.append(n)
    walk(k["body"])
    first, mm = [n for n in flat if n["name"] == "nc_matmul"]
    assert mm["engine"] == "Tensor" and mm["writes"] == [{"tensor": "res_psum", "accumulate": True}]
    # the group's first iteration overwrites the tile (accumulate flag off), the others add
    assert first["writes"] == [{"tensor": "res_psum"}] and first["when"] == ["-1*k"] and mm["when"] == ["k - 1"]
    assert {n["name"]: n["engine"] for n in flat}["load"] == "DMA"
    # max(min(64, 128), 512) Tensor cycles at 2.8 GHz in 1.4 GHz reference cycles
    assert mm["cost"] == 256


def test_exact_partitions_and_bytes(tmp_path):
    src = OLD + '''
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    t[0:64, 128:256] = nl.load(x[0:64, 128:256])
    ip, jf = nl.mgrid[0:32, 0:16]
    t[ip + 64, jf] = nl.load(x[ip, jf])
    t[:, nl.ds(256, 128)] = 0.0
    nl.store(out, value=t)
    return out
'''
    k = nki.trace(write(tmp_path, "rect.py", src), x=((128, 512), "fp32"))
    w = [n["writes"][0] for n in k["body"] if n["writes"] and n["writes"][0]["tensor"] == "t"]
    assert w[0] == {"tensor": "t", "partitions": [0, 64], "bytes": [512, 1024]}
    assert w[1] == {"tensor": "t", "partitions": [64, 96], "bytes": [0, 64]}
    assert w[2] == {"tensor": "t", "bytes": [1024, 1536]}


HW_KERNEL = """import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def kernel(x, want):
    assert (nl.tile_size.pmax, nl.tile_size.total_available_sbuf_size, nl.tile_size.psum_bank_fmax_bytes,
            nl.tile_size.psum_num_banks) == want, (nl.tile_size.pmax, nl.tile_size.total_available_sbuf_size)
    a = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.tensor_copy(dst=a, src=a)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def test_tracer_hardware_numbers_are_the_cpp_description(tmp_path):
    # One description: nl.tile_size and the cycle model come from the C++ built-in hardware (no copy
    # in Python); without hardware= the default core's, and the CLI hands the same to the script.
    path = write(tmp_path, "hw.py", HW_KERNEL)
    for name in (None, "trn1", "trn2"):
        hw = json.loads(_core.nki_builtin_hardware(name or "trn1"))
        want = (hw["partitions"], hw["sbuf_partition_bytes"] - hw["sbuf_reserved_bytes"], hw["psum_bank_bytes"],
                hw["psum_banks"])
        k = nki.trace(path, "128x512:fp32", want=want, hardware=name)
        copy = [i for i in k["body"] if i["name"] == "tensor_copy"][0]
        cm = hw["cycle_model"]  # 512 fp32 per partition on Vector, converted to the reference clock
        assert copy["cost"] == round(max(cm["min_ii"], 512) * cm["reference_clock_ghz"] / cm["vector_clock_ghz"])
    assert nki.DEFAULT_CYCLE_MODEL == _core.nki_default_cycle_model() == \
        json.loads(_core.nki_builtin_hardware("trn1"))["cycle_model"]
    # The script takes the description from the command line: a core of 64 partitions refuses 128.
    hw = json.loads(_core.nki_builtin_hardware("trn1"))
    hw["partitions"] = 64
    tracer = os.path.join(os.path.dirname(nki.__file__), "tracer.py")
    r = subprocess.run([sys.executable, tracer, "trace", path, "--input", "x=128x512:fp32", "--arg", "want=(64, 180224, 2048, 8)",
                        "--hardware-defaults", json.dumps(hw)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "exceeds the 64 partitions" in r.stderr, r.stderr
    r = subprocess.run([CLI, "nki", "check", path, "--input", "x=128x512:fp32", "--arg", "want=(128, 212992, 2048, 8)",
                        "--hardware", "trn2"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_cycle_model_is_overridable(tmp_path):
    path = write(tmp_path, "modulo.py", MODULO)
    a = nki.trace(path, x=X4)
    b = nki.trace(path, x=X4, cycle_model={"dma_fixed": 0})
    cost = lambda k: k["body"][0]["body"][0]["cost"]
    assert cost(a) - cost(b) == 2000


# ---- tutorial kernels, both spellings: trace, check, plan, rewrite ----------------------------

@pytest.mark.parametrize("spelling", sorted(K.HEADERS))
@pytest.mark.parametrize("name", sorted(K.KERNELS))
def test_tutorial_kernel(tmp_path, name, spelling):
    body, inputs, grid, direct = K.KERNELS[name]
    path = write(tmp_path, f"{name}.py", K.HEADERS[spelling] + body)
    args = inputs_args(inputs, grid)
    r = cli("check", path, *args)
    assert r.returncode == 0, r.stderr
    r = cli("plan", path, *args, "--json", "--time-limit", "2")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    if direct:
        assert summary["input_allocation_cycles"] is not None
        assert summary["simulated_cycles"] <= summary["input_allocation_cycles"]
    out = str(tmp_path / "planned.py")
    r = cli("plan", path, *args, "--time-limit", "2", "--rewrite", out)
    implicit = any(t.get("alloc", {}).get("kind") == "auto" and t["name"] not in declared(path)
                   for t in nki.trace(path, grid=grid_of(grid), **input_kw(inputs))["tensors"])
    if implicit:  # a call result without a declaration has no buffer= to rewrite
        assert r.returncode == 2 and "without a declaration" in r.stderr, r.stderr
        assert not os.path.exists(out)
    else:
        assert r.returncode == 0, r.stderr
        original = open(path).read().splitlines()
        rewritten = open(out).read().splitlines()
        assert len(original) == len(rewritten)
        for a, b in zip(original, rewritten):  # only buffer= arguments change
            if a != b:
                assert "buffer=" in b and a[: a.index("buffer=")] == b[: b.index("buffer=")]
        r = cli("check", out, *args)
        assert r.returncode == 0, r.stderr
    assert direct or implicit or name == "transpose_identity"


def declared(path):
    """Names assigned from a declaration call in the kernel file."""
    return set(re.findall(r"^\s*(\w+)\s*=\s*nl\.(?:ndarray|zeros|ones|full|zeros_like|empty_like)\(",
                          open(path).read(), re.M))


def grid_of(grid):
    return tuple(int(g) for g in grid.split("x")) if grid else None


def input_kw(inputs):
    from scratchplan.nki import tracer
    kw = {}
    for i in inputs:
        n, shape, dt = tracer.parse_input(i)
        kw[n] = (shape, dt)
    return kw


def test_bump_allocator_runs_the_loop_body_once(tmp_path):
    path = write(tmp_path, "bump.py", OLD + K.BUMP_ALLOCATOR)
    pl = placements(nki.trace(path, x=((1024, 512), "bf16")))
    assert pl["t"] == [(0, 0)] and pl["e"] == [(0, 1024)]


# ---- bad kernels --------------------------------------------------------------------------------

BAD = {  # kernel source, line of the error (lines 1-7 are the imports), what the message says
    "syntax": (OLD + "@nki.jit\ndef kernel(x):\n    out = nl.ndarray((128, 512) dtype=nl.float32)\n", 10, "syntax error"),
    "unknown_api": (OLD + "@nki.jit\ndef kernel(x):\n    t = nl.load(x)\n    u = nl.frobnicate(t)\n", 11,
                    "nl.frobnicate is not in the tracer's API table and writes no explicit dst="),
    "partition_dim": (OLD + "@nki.jit\ndef kernel(x):\n    t = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)\n",
                      10, "partition dim 256"),
    "out_of_range": (OLD + "@nki.jit\ndef kernel(x):\n    t = nl.load(x[0:256, :])\n", 10, "out of range"),
    "branch": (OLD + "@nki.jit\ndef kernel(x):\n    for i in nl.affine_range(4):\n        if i:\n"
               "            t = nl.load(x)\n", 11, "branch on a symbolic index"),
    "mixed_indexing": (OLD + "@nki.jit\ndef kernel(x):\n    t = nl.load(x)\n"
                       "    u = nl.exp(t[nl.arange(128)[:, None], 0:64])\n", 11, "vectors and slices in one subscript"),
    "return_in_branch": (OLD + "def helper(x, i):\n    if i == 0:\n        return nl.exp(x)\n    return nl.log(x)\n\n\n"
                         "@nki.jit\ndef kernel(x):\n    for i in nl.affine_range(4):\n        t = helper(nl.load(x), i)\n",
                         9, "return, break or continue inside a branch on a loop index"),
    "else_of_compound": (OLD + "@nki.jit\ndef kernel(x):\n    for i in nl.affine_range(4):\n"
                         "        for j in nl.affine_range(4):\n            if (i >= 1) & (j >= 1):\n"
                         "                t = nl.load(x)\n            else:\n                u = nl.load(x)\n",
                         12, "else branch of a compound symbolic condition"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_kernel_is_one_located_line_exit_2_no_output(tmp_path, case):
    src, line, what = BAD[case]
    path = write(tmp_path, "bad.py", src)
    out, rw = str(tmp_path / "o.json"), str(tmp_path / "o.py")
    r = cli("plan", path, "--input", "x=128x512:fp32", "-o", out, "--rewrite", rw)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1, r.stderr
    assert re.search(r"bad\.py:%d\b" % line, r.stderr), r.stderr
    assert what in r.stderr
    assert not os.path.exists(out) and not os.path.exists(rw)
    with pytest.raises(nki.TraceError, match=r"bad\.py:%d" % line):
        nki.trace(path, x=((128, 512), "fp32"))


PSUM_PARTIAL = OLD + '''
import functools

BANKS = {0: 2, 1: 5}


def bank_of(idx, pdim_size, fdim_size, table):
    return (table[idx[0]], 0, 0)


@nki.jit
def kernel(x, w):
    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xs = nl.ndarray((2, par_dim(128), 128), dtype=nl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    ws = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=512))
    ps = nl.ndarray((2, par_dim(128), 512), dtype=nl.float32, buffer=ncc.psum.alloc(functools.partial(bank_of, table=BANKS)))
    o_sb = nl.ndarray((2, par_dim(128), 512), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=1536, num_free_tiles=(2,)))
    ws[...] = nl.load(w)
    for i in nl.affine_range(2):
        xs[i] = nl.load(x[i])
        ps[i] += nisa.nc_matmul(xs[i], ws)
        o_sb[i] = nl.copy(ps[i])
        nl.store(out[i], value=o_sb[i])
    return out
'''


def test_psum_alloc_with_functools_partial_and_a_dict(tmp_path):
    k = nki.trace(write(tmp_path, "partial.py", PSUM_PARTIAL), x=((2, 128, 128), "bf16"), w=((128, 512), "bf16"))
    assert placements(k)["ps"] == [(0, 2 * 2048), (0, 5 * 2048)]
    assert nki.check(k).clean


def test_allocation_function_errors_are_located(tmp_path):
    src = PSUM_PARTIAL.replace("BANKS = {0: 2, 1: 5}", "BANKS = {0: 2}")
    path = write(tmp_path, "partial.py", src)
    with pytest.raises(nki.TraceError, match=r"partial\.py:%d: allocation function of ps failed on block \(1,\): KeyError"
                       % line_of(src, "return (table[idx[0]]")):
        nki.trace(path, x=((2, 128, 128), "bf16"), w=((128, 512), "bf16"))


def test_hardware_cycle_model_reaches_the_costs_and_the_checker(tmp_path):
    path = write(tmp_path, "modulo.py", MODULO)
    k = nki.trace(path, x=X4, hardware={"cycle_model": {"dma_fixed": 0, "dma_bytes_per_cycle": 64}})
    assert k["body"][0]["body"][0]["cost"] == 128 * 1024 // 64
    assert nki.check(k).clean
    with pytest.raises(scratchplan.BadInput, match="dma_fixd"):
        nki.check(nki.trace(path, x=X4, hardware={"cycle_model": {"dma_fixd": 0}}))


def test_new_namespace_unrolls_and_takes_addresses(tmp_path):
    src = '''import nki
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    bufs = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, i * 2048)) for i in range(2)]
    for i in nl.affine_range(2):
        bufs[i][...] = nl.load(x[i])
        nl.store(out[i], value=bufs[i])
    return out
'''
    k = nki.trace(write(tmp_path, "newapi.py", src), x=((2, 128, 512), "fp32"))
    assert [n["name"] for n in k["body"]] == ["load", "store", "load", "store"]
    assert placements(k) == {"bufs": [(0, 0)], "bufs_2": [(0, 2048)]}
    assert nki.check(k).clean


def test_four_byte_aligned_addresses_of_real_kernels_check_clean(tmp_path):
    # AWS's allocated kernels place SBUF tensors at 260, 772, 4356 (multiples of 4, not of 32).
    src = OLD + '''
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 2), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 2), dtype=nl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=260))
    b = nl.ndarray((128, 2), dtype=nl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=772))
    c = nl.ndarray((128, 2), dtype=nl.bfloat16, buffer=ncc.sbuf.mod_alloc(base_addr=4356))
    a[...] = nl.load(x)
    b[...] = nl.square(a)
    c[...] = nl.square(b)
    nl.store(out, value=c)
    return out
'''
    k = nki.trace(write(tmp_path, "aligned.py", src), x=((128, 2), "bf16"))
    assert nki.check(k).clean
    k2 = nki.trace(write(tmp_path, "aligned.py", src.replace("base_addr=772", "base_addr=774")), x=((128, 2), "bf16"))
    kinds = [v["kind"] for v in nki.check(k2).violations]
    assert kinds == ["misaligned"]


GUARDED = OLD + '''
@nki.jit
def kernel(x):
    out = nl.ndarray((4, 128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((4, par_dim(128), 512), dtype=nl.bfloat16,
                   buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    for i in nl.affine_range(4):
        t[i] = nl.load(x[i], mask=(i * 128 < 200))
    for j in nl.affine_range(2):
        nl.store(out[j], value=t[j])
    return out
'''


def test_masks_on_loop_indices_switch_instructions_off(tmp_path):
    # allocated_fused_rms_norm_qkv style: (i * 128 < seqlen) turns whole loads off, so blocks 2
    # and 3 never overwrite the tiles of blocks 0 and 1.
    k = nki.trace(write(tmp_path, "guarded.py", GUARDED), x=X4)
    load = k["body"][0]["body"][0]
    assert load["when"] == ["-128*i + 199"]
    rep = nki.check(k)
    assert rep.clean
    assert rep.to_dict()["executions"] == 4
    # Without the mask, the same kernel has two lifetime conflicts.
    k2 = nki.trace(write(tmp_path, "guarded.py", GUARDED.replace(", mask=(i * 128 < 200)", "")), x=X4)
    assert [v["kind"] for v in nki.check(k2).violations] == ["lifetime_conflict"] * 2


def test_mutated_kernels_fail_only_with_located_errors(tmp_path):
    """Random edits of the tutorial kernels (a line deleted, duplicated, or a word replaced)
    either trace or raise TraceError naming the file; never another exception, and never one
    raised by the tracer's own code."""
    import random
    from scratchplan.nki import tracer
    rng = random.Random(7)
    words = ["if i == 0:", "if i >= 1:", "else:", "return", "t > 0", "i", "0", "128", "nl.sbuf", "nl.psum", "(128, 512)", "x", "-1", "None", "nl.arange(128)[:, None]",
             "[...]", "t", "2", "nl.ds(i, 128)"]
    for n in range(150):
        name = rng.choice(sorted(K.KERNELS))
        body, inputs, grid, _ = K.KERNELS[name]
        lines = (OLD + body).splitlines()
        j = rng.randrange(8, len(lines))
        op = rng.randrange(3)
        if op == 0:
            del lines[j]
        elif op == 1:
            w = lines[j].split(" ")
            w[rng.randrange(len(w))] = rng.choice(words)
            lines[j] = " ".join(w)
        else:
            lines.insert(j, lines[rng.randrange(8, len(lines))])
        path = write(tmp_path, "mutant.py", "\n".join(lines) + "\n")
        kw = {}
        for i in inputs:
            nm, shape, dt = tracer.parse_input(i)
            kw[nm] = (shape, dt)
        try:
            nki.trace(path, grid=tuple(int(g) for g in grid.split("x")) if grid else None, **kw)
        except nki.TraceError as e:
            assert str(e).startswith("mutant.py:"), str(e)
            assert "\n" not in str(e)
            c = e.__context__
            if c is not None and not isinstance(c, nki.TraceError):
                tb, last = c.__traceback__, None
                while tb is not None:
                    last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
                assert os.sep + "tracing" + os.sep not in last, f"tracer bug on mutant {n}: {type(c).__name__}: {c}"


# ---- more of the API surface real kernels use ---------------------------------------------------

def test_new_api_instructions_write_their_dst(tmp_path):
    # New API (nki 0.2+): nisa calls take dst first or as dst= and return nothing; nc_matmul's
    # default accumulate=None overwrites dst the first time and adds into it afterwards.
    src = '''import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        at = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a[k * 128:(k + 1) * 128, :])
        bt = nl.ndarray((128, 256), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(bt, b[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(acc, at, bt)
    zero = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    e = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=acc, bias=zero)
    s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(s, nl.add, e, 1)
    y = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(y, e, nl.multiply, s)
    nisa.dma_copy(dst=out, src=y)
    return out
'''
    k = nki.trace(write(tmp_path, "dst.py", src), a=((256, 128), "bf16"), b=((256, 256), "bf16"))
    # the k loop is traced once (python/tests/test_nki_ranges.py compares this with unrolling)
    loop, rest = k["body"][0], k["body"][1:]
    assert loop["trip"] == 2 and [n["name"] for n in rest] == ["memset", "activation", "tensor_reduce",
                                                               "tensor_scalar", "dma_copy"]
    assert [n["name"] for n in loop["body"]] == ["dma_copy", "dma_copy", "nc_matmul", "nc_matmul"]
    # the first write overwrites where k == 0; the other iterations accumulate
    mm = loop["body"][2:]
    assert [(n["when"], [w.get("accumulate", False) for w in n["writes"]]) for n in mm] == \
        [(["-1*k"], [False]), (["k - 1"], [True])]
    assert all(n["writes"] for n in loop["body"] + rest), "every instruction writes its dst"
    assert [t["name"] for t in k["tensors"] if t.get("implicit")] == []  # no hidden result tensors
    assert nki.check(k).clean


def test_zeros_of_a_block_tensor_fills_every_block(tmp_path):
    src = OLD + '''
@nki.jit
def kernel(x):
    out = nl.ndarray((2, 3, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, 3, par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        for j in nl.affine_range(3):
            acc[i, j, :, :] += nl.load(x[i, j])
            nl.store(out[i, j], value=acc[i, j, :, :])
    return out
'''
    k = nki.trace(write(tmp_path, "blocks.py", src), x=((2, 3, 128, 64), "fp32"))
    outer = k["body"][0]
    inner = outer["body"][0]
    assert (outer["trip"], inner["trip"]) == (2, 3)
    fill = inner["body"][0]
    assert fill["name"] == "memset"
    assert fill["writes"][0]["block"] == [outer["loop"], inner["loop"]]
    report = nki.check(k)
    assert report.clean


def test_tile_broadcasts_comparisons_and_iota(tmp_path):
    src = OLD + '''
@nki.jit
def kernel(x, g):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    gt = nl.load(g.expand_dims(0))
    gb = gt.broadcast_to((128, 64))
    hb = nl.load(g.expand_dims(0).broadcast_to((128, 64)))
    pos = nl.where(t > 0.0, t * gb, hb)
    idx = nisa.iota(nl.arange(64)[None, :], dtype=nl.int32)
    y = nl.multiply(pos, (idx <= 31) | (idx >= 48))
    nl.store(out, value=y)
    return out
'''
    k = nki.trace(write(tmp_path, "bcast.py", src), x=((128, 64), "fp32"), g=((64,), "fp32"))
    shapes = {t["name"]: [t["partitions"]] + t["free"] for t in k["tensors"]}
    assert shapes["gt"] == [1, 64] and shapes["gb"] == [128, 64] and shapes["hb"] == [128, 64]
    assert shapes["idx"] == [1, 64]
    names = [n["name"] for n in k["body"]]
    assert names.count("greater") + names.count("less_equal") + names.count("greater_equal") == 3, names
    assert "logical_or" in names and "broadcast_to" in names
    assert nki.check(k).clean


def test_dataclass_configs_sub_kernels_and_more_calls(tmp_path):
    # Real kernel files define @dataclass configs (the flash-attention kernel's FlashConfig) and
    # helper kernels decorated @nki.jit(mode="trace"); the entry point is the other kernel.
    src = OLD + '''from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    tile: int = 128


@nki.jit(mode="trace")
def helper(t, s):
    return nl.multiply(t, s)


@nki.jit
def kernel(x, acc_out, cfg=Config()):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // cfg.tile):
        t = nl.load(x[i * cfg.tile:(i + 1) * cfg.tile, :])
        g = helper(t, 2.0)
        nl.device_print("g", g)
        r = nl.loop_reduce(g, op=np.add, loop_indices=[i], dtype=nl.float32)
        d = nisa.dropout(g, 0.1)
        tt = nisa.dma_transpose(x[0:128, 0:128])
        nl.atomic_rmw(acc_out[0:128, 0:128], value=tt, op=np.add)
        nl.store(out[i * cfg.tile:(i + 1) * cfg.tile, :], value=d)
    return out
'''
    k = nki.trace(write(tmp_path, "cfg.py", src), x=((256, 128), "fp32"), acc_out=((128, 128), "fp32"))
    loop = k["body"][0]
    assert loop["trip"] == 2
    names = [n["name"] for n in loop["body"]]
    assert names == ["load", "multiply", "loop_reduce", "dropout", "dma_transpose", "atomic_rmw", "store"], names
    rmw = loop["body"][5]
    assert [r["tensor"] for r in rmw["reads"]] == ["tt", "acc_out"] and rmw["writes"][0]["tensor"] == "acc_out"
    assert nki.check(k).clean
    with pytest.raises(nki.TraceError, match="several @nki.jit kernels"):
        nki.trace(write(tmp_path, "two.py", src.replace('@nki.jit(mode="trace")', "@nki.jit")),
                  x=((256, 128), "fp32"), acc_out=((128, 128), "fp32"))


def test_if_on_loop_indices_guards_each_branch(tmp_path):
    # `if i == 0` inside a traced loop (pipelined_attention) and a causal test of two tile indices
    # (flash attention): both branches are traced once, each instruction guarded by its branch.
    src = OLD + """
@nki.jit
def kernel(x, causal=True):
    out = nl.ndarray((4, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):
        t = nl.load(x[i])
        if i == 0:
            acc[...] = nl.copy(t)
        else:
            acc[...] = nl.add(acc, t)
        for j in nl.affine_range(4):
            if causal:
                if i >= j:
                    nl.store(out[j], value=acc)
    return out
"""
    path = write(tmp_path, "branch.py", src)
    k = nki.trace(path, x=((4, 128, 512), "fp32"))
    body = k["body"][0]["body"]
    assert [n.get("name") or n["loop"] for n in body] == ["load", "copy", "add", "j"]
    assert body[0].get("when") is None
    assert body[1]["when"] == ["-1*i"] and body[2]["when"] == ["i - 1"]  # i <= 0, i >= 1
    assert body[3]["body"][0]["when"] == ["i - 1*j"]
    report = nki.check(k)
    # 4 loads, the copy once, the add 3 times, a store for each i >= j (1 + 2 + 3 + 4).
    assert report.clean and report.to_dict()["executions"] == 4 + 1 + 3 + 10
    # A plain value takes one branch only: no store at all without `causal`.
    k2 = nki.trace(path, x=((4, 128, 512), "fp32"), causal=False)
    assert "store" not in json.dumps(k2["body"])


def test_selection_gather_and_dynamic_copies_are_recorded(tmp_path):
    src = OLD + '''
@nki.jit
def kernel(x, idx):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    lo = nl.zeros((128, 1), dtype=nl.float32)
    hi = nl.full((128, 1), 100.0, dtype=nl.float32)
    mx = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    r = nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less, bound0=lo, bound1=hi,
                          reduce_res=mx, reduce_op=np.max, on_false_value=-1e9)
    sel = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=sel, predicate=nl.greater(t, 0.0), on_true=r, on_false=0.0)
    sh = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(sel, sh, shuffle_mask=list(range(32)))
    it = nl.load(idx)
    g = nisa.local_gather(sh, it, num_elem_per_idx=2)
    dd = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy_dynamic_dst(dst=dd, src=sh)
    nl.store(out, value=nl.add(dd, mx))
    return out
'''
    k = nki.trace(write(tmp_path, "sel.py", src), x=((128, 512), "fp32"), idx=((128, 256), "int32"))
    by = {n["name"]: n for n in k["body"]}
    assert [w["tensor"] for w in by["range_select"]["writes"]] == ["mx", "r"]
    assert [r["tensor"] for r in by["select_reduce"]["reads"]][1:] == ["r"] and by["select_reduce"]["writes"][0]["tensor"] == "sel"
    assert [r["tensor"] for r in by["nc_stream_shuffle"]["reads"]] == ["sel"]  # old API: (src, dst)
    assert by["local_gather"]["engine"] == "GpSimd"
    assert {t["name"]: t["free"] for t in k["tensors"]}["g"] == [512]
    assert by["tensor_copy_dynamic_dst"]["writes"][0]["tensor"] == "dd"
    assert nki.check(k).clean
