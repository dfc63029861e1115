"""New-API Python `range` loops (issue 41): a loop whose body is exact to trace once runs once
with a symbolic index; otherwise (the index reaches a list, an `if`, the first write of a matmul
dst) the trace is rolled back and the loop unrolled. State carried between iterations that repeats
with a period runs once per phase; state that does not repeat unrolls. Either way the checker sees
the same executions as with every loop unrolled."""
import pytest

from scratchplan import BadInput, nki
from scratchplan.nki.tracing import loops

HEAD = """import nki
import nki.language as nl
import nki.isa as nisa

"""

STREAM = """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(3):
        for j in range(4):
            b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 0))
            nisa.dma_copy(dst=b, src=x[j * 128:(j + 1) * 128, :])
            nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.add)
            nisa.dma_copy(dst=out[j * 128:(j + 1) * 128, :], src=b)
    return out
"""
LIST = STREAM.replace("    for i in range(3):\n", "    bufs = [nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, "
                      "address=(0, k * 1024)) for k in range(2)]\n    for i in range(3):\n").replace(
    "            b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 0))", "            b = bufs[j % 2]")
BRANCH = STREAM.replace("            nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.add)",
                        "            if j == 0:\n                nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.add)")
CARRIED = STREAM.replace("    for i in range(3):\n", "    addr = 0\n    for i in range(3):\n").replace(
    "address=(0, 0))", "address=(0, addr))\n            addr = (addr + 1024) % 4096")
MATMUL = """
@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
    sa = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf, address=(0, 0))
    sb = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf, address=(0, 256))
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 1280))
    for k in range(4):
        nisa.dma_copy(dst=sa, src=a[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=sb, src=b[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(acc, sa, sb)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out
"""
# two SBUF tiles for a swapped each iteration, the matmul overwriting acc at k == 0 only
MATMUL_SWAP = MATMUL.replace("    for k in range(4):\n", "    sa2 = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf, "
                             "address=(0, 3328))\n    for k in range(6):\n").replace(
    "        nisa.nc_matmul(acc, sa, sb)\n", "        nisa.nc_matmul(acc, sa, sb)\n        sa, sa2 = sa2, sa\n")

X = {"x": ((512, 512), "bf16")}
AB = {"a": ((512, 128), "bf16"), "b": ((512, 512), "bf16")}


def executions(body, env=None, out=None):
    """(instruction name, source line, accumulates) -> times executed: every iteration enumerated,
    `when` guards (affine texts of the loop names, each >= 0) evaluated."""
    env, out = env or {}, {} if out is None else out
    for n in body:
        if "loop" in n:
            for v in range(n["trip"]):
                executions(n["body"], {**env, n["loop"]: v}, out)
        elif all((g if isinstance(g, int) else eval(g, {}, dict(env))) >= 0 for g in n.get("when", [])):
            key = (n["name"], n["source"], any(w.get("accumulate") for w in n["writes"]))
            out[key] = out.get(key, 0) + 1
    return out


def loop_trips(body):
    return [n["trip"] for n in body if "loop" in n] + [t for n in body if "loop" in n for t in loop_trips(n["body"])]


def both(tmp_path, monkeypatch, src, inputs):
    p = tmp_path / "k.py"
    p.write_text(HEAD + src)
    sym = nki.trace(str(p), **inputs)
    monkeypatch.setattr(loops, "SPECULATE", False)
    unrolled = nki.trace(str(p), **inputs)
    monkeypatch.setattr(loops, "SPECULATE", True)
    assert loop_trips(unrolled["body"]) == []
    return sym, unrolled


@pytest.mark.parametrize("src,inputs,trips", [
    (STREAM, X, [3, 4]),      # traced once per loop
    (LIST, X, [3]),           # bufs[j % 2]: j unrolled inside a symbolic i
    (BRANCH, X, [3]),         # if j == 0: j unrolled
    (CARRIED, X, [2]),        # addr carried with period 4 = j's trip: j unrolled, i periodic after i = 0
    (MATMUL, AB, [4]),        # the first nc_matmul into acc overwrites (k == 0), the others accumulate
    (MATMUL_SWAP, {"a": ((768, 128), "bf16"), "b": ((768, 512), "bf16")}, [2]),  # period 2: 2 + 2*2
    (MATMUL.replace("    for k in range(4):", "    nisa.memset(dst=acc, value=0.0)\n    for k in range(4):"), AB, [4]),
])
def test_symbolic_ranges_execute_what_unrolling_does(tmp_path, monkeypatch, src, inputs, trips):
    sym, unrolled = both(tmp_path, monkeypatch, src, inputs)
    assert loop_trips(sym["body"]) == trips
    assert executions(sym["body"]) == executions(unrolled["body"])
    a, b = nki.check(sym), nki.check(unrolled)
    assert a.clean and b.clean
    # every tensor is placed by the kernel: the timeline of its own allocation
    assert nki.plan(sym, keep_direct=True).simulated_cycles == nki.plan(unrolled, keep_direct=True).simulated_cycles


# Carried state: a loop whose carried values repeat with period p runs p iterations concretely,
# then the whole periods as one symbolic loop of p phases, then the rest concretely.
PIPE = """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
{before}    for j in range({trip}):
{take}        nisa.dma_copy(dst=b, src=x[j * 128:(j + 1) * 128, :])
        nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.add)
        nisa.dma_copy(dst=out[j * 128:(j + 1) * 128, :], src=b)
{carry}    return out
"""
SLOT = ("    slot = 0\n", "        b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, slot * 1024))\n",
        "        slot = 1 - slot\n")
SWAP = ("    b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 0))\n"
        "    c = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 1024))\n", "",
        "        b, c = c, b\n")
ROTATE = ("    b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 0))\n"
          "    c = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 1024))\n"
          "    d = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 2048))\n", "",
          "        b, c, d = c, d, b\n")
MOD3 = ("    k, tag = 0, 'a'\n",
        "        b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, k * 1024))\n",
        "        k = (k + 1) % 3\n        tag = {'a': 'b', 'b': 'c', 'c': 'a'}[tag]\n")
COUNTER = ("    k = 0\n", "        b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, (k % 3) * 1024))\n",
           "        k += 1\n")
# the toggle's value is read after the loop (an address), so its final value must be exact
AFTER = (SLOT[0], SLOT[1], SLOT[2] + "    e = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 2048 + slot * 512))\n"
         "    nisa.dma_copy(dst=e, src=x[0:128, :])\n    nisa.dma_copy(dst=out[0:128, :], src=e)\n")
# prev is None at first, then b and c alternate: periodic from iteration 1 on (3 + 4*2 + 1 for 12)
PRE = (SWAP[0] + "    prev = None\n",
       "        if prev is not None:\n            nisa.dma_copy(dst=out[0:128, :], src=prev)\n",
       "        prev = b\n        b, c = c, b\n")
# the carried state reaching the index: j // 16 is not affine in the symbolic run; prev = j is symbolic
INDEXED = ("    slot = 0\n", SLOT[1], "        slot = 1 - slot + min(j // 16, 0)\n")
PREV = ("    prev = 0\n", "        b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, (prev % 2) * 1024))\n",
        "        prev = j\n")


def pipe(case, trip, mod4=False):
    before, take, carry = case
    src = PIPE.format(before=before, take=take, carry=carry, trip=trip)
    return src.replace("j * 128:(j + 1) * 128", "(j % 4) * 128:(j % 4 + 1) * 128") if mod4 else src


@pytest.mark.parametrize("case,trip,trips,mod4", [
    (SLOT, 12, [5], False),    # period 2: 2 concrete, 5 periods of 2 phases
    (SLOT, 12, [3, 2], True),  # x[j % 4]: j = 2*q + 2 + r, (2*q + 2) % 4 splits q by 2
    (SLOT, 13, [5], False),    # 13 = 2 + 5*2 + 1: the last iteration concrete
    (SWAP, 12, [5], False),    # two tensors swapped (identity)
    (ROTATE, 14, [3], False),  # period 3: 3 + 3*3 + 2
    (PRE, 12, [4], False),       # a period of 2 after a first iteration of its own
    (MOD3, 12, [3], False),    # k = (k + 1) % 3 and a string following it
    (COUNTER, 12, [], False),  # k += 1 never repeats: unrolled
    (AFTER, 11, [4], False),   # slot read after the loop: 2 + 4*2 + 1
    (INDEXED, 12, [], False),  # j // 16 is not affine in the symbolic run: rolled back, unrolled
    (PREV, 12, [], False),     # period 1 concretely (prev = 0 = j), but prev = j is symbolic: rolled back
])
def test_periodic_carried_state_executes_what_unrolling_does(tmp_path, monkeypatch, case, trip, trips, mod4):
    rows = {"x": ((512 if mod4 else 128 * trip, 512), "bf16")}
    sym, unrolled = both(tmp_path, monkeypatch, pipe(case, trip, mod4), rows)
    assert loop_trips(sym["body"]) == trips
    assert executions(sym["body"]) == executions(unrolled["body"])
    a, b = nki.check(sym), nki.check(unrolled)
    assert a.clean == b.clean
    assert nki.plan(sym, keep_direct=True).simulated_cycles == nki.plan(unrolled, keep_direct=True).simulated_cycles


NESTED = """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    slot = 0
    for i in range(5):
        for j in range(6):
            b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, slot * 1024))
            slot = 1 - slot
            nisa.dma_copy(dst=b, src=x[j * 128:(j + 1) * 128, :])
            nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.multiply)
            nisa.dma_copy(dst=out[j * 128:(j + 1) * 128, :], src=b)
    return out
"""


def test_nested_toggle_is_periodic_in_both_loops(tmp_path, monkeypatch):
    # j: 2 concrete + 2 periods; i (6 toggles per iteration): period 1, 1 concrete + 4 symbolic
    sym, unrolled = both(tmp_path, monkeypatch, NESTED, {"x": ((768, 512), "bf16")})
    assert loop_trips(sym["body"]) == [2, 4, 2]
    assert executions(sym["body"]) == executions(unrolled["body"])
    assert nki.check(sym).clean and nki.check(unrolled).clean
    assert nki.plan(sym, keep_direct=True).simulated_cycles == nki.plan(unrolled, keep_direct=True).simulated_cycles


# Counters: k and n advance by a constant step per iteration (no period within loops.MAX_PERIOD),
# used in indices and read after the loop.
COUNT = """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    k, n, tag = 0, 2, "t"
    for j in range({trip}):
        b = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 0))
        nisa.dma_copy(dst=b, src=x[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=out[(n // 2 - 1) * 128:(n // 2) * 128, :], src=b)
        k += 1
        n = n + 2
        tag = tag
    e = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 1024))
    nisa.dma_copy(dst=e, src=x[(k - 1) * 128:k * 128, :])
    nisa.dma_copy(dst=out[(n // 2 - 2) * 128:(n // 2 - 1) * 128, :], src=e)
    return out
"""


@pytest.mark.parametrize("trip,trips", [
    (16, [6]),  # 9 concrete looking for a period, 6 symbolic, the last concrete
    (11, []),   # 9 concrete, 1 left: not worth a loop
])
def test_counters_execute_what_unrolling_does(tmp_path, monkeypatch, trip, trips):
    sym, unrolled = both(tmp_path, monkeypatch, COUNT.format(trip=trip), {"x": ((128 * trip, 512), "bf16")})
    assert loop_trips(sym["body"]) == trips
    assert executions(sym["body"]) == executions(unrolled["body"])
    assert nki.check(sym).clean and nki.check(unrolled).clean
    assert nki.plan(sym, keep_direct=True).simulated_cycles == nki.plan(unrolled, keep_direct=True).simulated_cycles


def test_a_counter_in_an_address_unrolls(tmp_path, monkeypatch):
    src = COUNT.format(trip=16).replace("address=(0, 0))", "address=(0, (k % 2) * 1024))")
    sym, unrolled = both(tmp_path, monkeypatch, src, {"x": ((128 * 16, 512), "bf16")})
    assert loop_trips(sym["body"]) == []
    assert executions(sym["body"]) == executions(unrolled["body"])


def test_periodic_carried_state_keeps_a_violation(tmp_path, monkeypatch):
    # c at slot's address + 512 overlaps b while b still waits to be stored
    src = pipe(SLOT, 12, mod4=True).replace(
        "        nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.add)\n",
        "        c = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, slot * 1024 + 512))\n"
        "        nisa.dma_copy(dst=c, src=x[0:128, :])\n"
        "        nisa.dma_copy(dst=out[0:128, :], src=c)\n")
    sym, unrolled = both(tmp_path, monkeypatch, src, X)
    assert loop_trips(sym["body"]) == [3, 2]
    assert executions(sym["body"]) == executions(unrolled["body"])
    a, b = nki.check(sym), nki.check(unrolled)
    assert not a.clean and not b.clean
    base = lambda name: name.rstrip("_0123456789")
    what = lambda r: {(base(v["tensor"]), base(v["overwritten_by"]["tensor"])) for v in r.violations}
    assert what(a) == what(b) == {("b", "c")}


def test_symbolic_range_keeps_an_overlap_violation(tmp_path, monkeypatch):
    # two tiles at the same address, the first still to be stored when the second is loaded
    src = STREAM.replace("            nisa.tensor_tensor(dst=b, data1=b, data2=b, op=nl.add)\n",
                         "            c = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf, address=(0, 512))\n"
                         "            nisa.dma_copy(dst=c, src=x[j * 128:(j + 1) * 128, :])\n"
                         "            nisa.dma_copy(dst=out[j * 128:(j + 1) * 128, :], src=c)\n")
    sym, unrolled = both(tmp_path, monkeypatch, src, X)
    assert loop_trips(sym["body"]) == [3, 4]
    a, b = nki.check(sym), nki.check(unrolled)
    assert not a.clean and not b.clean
    base = lambda name: name.rstrip("_0123456789")  # unrolled declarations are b, b_2, ...
    what = lambda r: {(base(v["tensor"]), base(v["overwritten_by"]["tensor"])) for v in r.violations}
    assert what(a) == what(b) == {("b", "c")}


def test_a_kernel_error_in_a_symbolic_range_is_reported_at_its_line(tmp_path):
    p = tmp_path / "k.py"
    p.write_text(HEAD + STREAM.replace("x[j * 128:(j + 1) * 128, :])", "x[j * 128:(j + 2) * 128, :])"))
    with pytest.raises(BadInput, match=r"^k\.py:12: index range \[384, 639\] of partition dim 0"):
        nki.trace(str(p), **X)
