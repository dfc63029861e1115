"""Bad input raises scratchplan.BadInput (a ValueError) carrying the CLI's one-line message for
the same mistake: flag values (one rule per kind of value), malformed documents (file, JSON
path, what was expected) and infeasible requests."""
import json
import re
import os
import tempfile

import pytest

import scratchplan as sp
from conftest import EXAMPLES, cli_error, data

SMALL = os.path.join(os.path.dirname(EXAMPLES), "fuzz", "corpus", "alloc_input", "small.csv")
PROG = os.path.join(EXAMPLES, "programs", "softmax_lastdim.json")
MLP = os.path.join(EXAMPLES, "mlsys", "mlp_block.json")
MLP_SOL = os.path.join(EXAMPLES, "mlsys", "mlp_block_solution.json")
KERNEL = os.path.join(EXAMPLES, "nki", "softmax_rows.json")
NAN, INF = float("nan"), float("inf")
OUT = os.path.join(tempfile.gettempdir(), "scratchplan_pytest_never_written.json")  # errors write nothing

# (python call, CLI arguments of the same request)
CASES = [
    (lambda: sp.alloc.alloc(SMALL, capacity=-5), ["alloc", SMALL, "--capacity", "-5", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=2 ** 63), ["alloc", SMALL, "--capacity", str(2 ** 63), "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=5), ["alloc", SMALL, "--capacity", "5", "-o", OUT]),
    (lambda: sp.alloc.alloc(SMALL), ["alloc", SMALL, "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, objective="foo"), ["alloc", SMALL, "--capacity", "100", "--objective", "foo", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, solver="foo"), ["alloc", SMALL, "--capacity", "100", "--solver", "foo", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, exact_off=["foo"]), ["alloc", SMALL, "--capacity", "100", "--exact-off", "foo", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=4, objective="select", minimize=True),
     ["alloc", SMALL, "--capacity", "4", "--objective", "select", "--minimize", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, time_limit=NAN), ["alloc", SMALL, "--capacity", "100", "--time-limit", "nan", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, time_limit=-1), ["alloc", SMALL, "--capacity", "100", "--time-limit", "-1", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, time_limit=INF), ["alloc", SMALL, "--capacity", "100", "--time-limit", "inf", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, threads=0), ["alloc", SMALL, "--capacity", "100", "--threads", "0", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, threads=1000), ["alloc", SMALL, "--capacity", "100", "--threads", "1000", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, seed=-1), ["alloc", SMALL, "--capacity", "100", "--seed", "-1", "-o", "-"]),
    (lambda: sp.alloc.alloc(SMALL, capacity=100, iterations=0), ["alloc", SMALL, "--capacity", "100", "--iterations", "0", "-o", "-"]),
    # A seed given is a seed given, even the default one (it was taken as not given).
    (lambda: sp.alloc.alloc(SMALL, capacity=100, solver="firstfit", seed=1),
     ["alloc", SMALL, "--capacity", "100", "--solver", "firstfit", "--seed", "1", "-o", "-"]),
    (lambda: sp.alloc.pack([8], [0], [1], solver="sweep", threads=1), ["alloc", SMALL, "--minimize", "--solver", "sweep", "--threads", "1", "-o", "-"]),
    (lambda: sp.alloc.alloc("/nonexistent/x.csv", capacity=100), ["alloc", "/nonexistent/x.csv", "--capacity", "100", "-o", "-"]),
    (lambda: sp.lx.plan(PROG, cores=40), ["plan", PROG, "--cores", "40"]),
    (lambda: sp.lx.plan(PROG, cores=0), ["plan", PROG, "--cores", "0"]),
    (lambda: sp.lx.plan(PROG, time_limit=NAN), ["plan", PROG, "--time-limit", "nan"]),
    (lambda: sp.lx.plan(PROG, stage=5), ["plan", PROG, "--stage", "5"]),
    (lambda: sp.lx.plan(PROG, capacity=-1), ["plan", PROG, "--capacity", "-1"]),
    (lambda: sp.lx.plan(PROG, hbm_gbps=0), ["plan", PROG, "--hbm-gbps", "0"]),
    (lambda: sp.lx.plan(PROG, hbm_gbps=2e9), ["plan", PROG, "--hbm-gbps", "2000000000"]),
    (lambda: sp.lx.plan(PROG, hardware="/nonexistent.json"), ["plan", PROG, "--hardware", "/nonexistent.json"]),
    (lambda: sp.lx.plan("/nonexistent.json"), ["plan", "/nonexistent.json"]),
    (lambda: sp.workdiv.divide(PROG, cores=33), ["divide", PROG, "--cores", "33"]),
    (lambda: sp.layout.layout([5, 0]), ["layout", "--size", "5,0"]),
    (lambda: sp.layout.layout([5, 3], "fp17"), ["layout", "--size", "5,3", "--dtype", "fp17"]),
    (lambda: sp.layout.layout([5, 3], dim_order=[5, 0]), ["layout", "--size", "5,3", "--dim-order", "5,0"]),
    (lambda: sp.mlsys.evaluate(MLP, MLP_SOL, mm_compute="foo"), ["evaluate", MLP, MLP_SOL, "--mm-compute", "foo"]),
    (lambda: sp.mlsys.schedule(MLP, seed=-1), ["schedule", MLP, "--seed", "-1", "-o", "-"]),
    (lambda: sp.mlsys.schedule(MLP, max_segment_ops=0), ["schedule", MLP, "--max-segment-ops", "0", "-o", "-"]),
    (lambda: sp.mlsys.schedule(MLP, threads=300), ["schedule", MLP, "--threads", "300", "-o", "-"]),
    (lambda: sp.mlsys.schedule(MLP, time_limit=1, iterations=5), ["schedule", MLP, "--iterations", "5", "--time-limit", "1", "-o", "-"]),
    (lambda: sp.nki.plan(KERNEL, max_buffers=0), ["nki", "plan", KERNEL, "--max-buffers", "0"]),
    (lambda: sp.nki.plan(KERNEL, single=True, max_buffers=3), ["nki", "plan", KERNEL, "--single", "--max-buffers", "3"]),
    (lambda: sp.nki.plan(KERNEL, time_limit=-2), ["nki", "plan", KERNEL, "--time-limit", "-2"]),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_same_message_as_cli(i):
    call, args = CASES[i]
    want = cli_error(*args)
    with pytest.raises(sp.BadInput) as e:
        call()
    # The same words, with each flag named as the keyword argument that sets it.
    want = re.sub(r"give --([a-z-]+) N", lambda m: f"pass {m.group(1).replace('-', '_')}=N", want)
    assert str(e.value) == re.sub(r"(?:(?<=^)|(?<=[ ('\"]))--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), want)
    assert "--" not in str(e.value)
    assert isinstance(e.value, ValueError)
    assert "\n" not in str(e.value)


# Broken documents, as files (the CLI reads the same file) and as dicts (named "<what>").
DOC_CASES = [
    ("plan", PROG, lambda d: d["ops"][0].update(kindd="x"), lambda x: sp.lx.plan(x), []),
    ("plan", PROG, lambda d: d.pop("ops"), lambda x: sp.lx.plan(x), []),
    ("divide", PROG, lambda d: d["tensors"][0].update(shape=[-1]), lambda x: sp.workdiv.divide(x), []),
    ("evaluate", MLP, lambda d: d.update(fast_memory_capacity="big"), lambda x: sp.mlsys.evaluate(x, MLP_SOL), [MLP_SOL]),
    ("schedule", MLP, lambda d: d.pop("widths"), lambda x: sp.mlsys.schedule(x, iterations=1), ["--iterations", "1", "-o", "-"]),
    ("nki check", KERNEL, lambda d: d.update(tensors=5), lambda x: sp.nki.check(x), []),
    ("nki plan", KERNEL, lambda d: d.update(loops="x"), lambda x: sp.nki.plan(x), []),
    ("alloc", data("..", "..", "fuzz", "corpus", "alloc_input", "inplace.json"),
     lambda d: d["buffers"][0].update(size=-3), lambda x: sp.alloc.alloc(x, capacity=100), ["--capacity", "100", "-o", "-"]),
]


@pytest.mark.parametrize("i", range(len(DOC_CASES)))
def test_broken_documents(i, tmp_path):
    verb, path, mutate, call, extra = DOC_CASES[i]
    with open(path) as f:
        doc = json.load(f)
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    want = cli_error(*verb.split(), bad, *extra)
    with pytest.raises(sp.BadInput) as e:
        call(str(bad))
    assert str(e.value) == want
    assert str(bad) in str(e.value)
    # The same document as a dict: the same message, naming the document instead of the file.
    with pytest.raises(sp.BadInput) as e:
        call(doc)
    name = "<" + {"plan": "program", "divide": "program", "evaluate": "problem", "schedule": "problem",
                  "nki check": "kernel", "nki plan": "kernel", "alloc": "alloc"}[verb] + ">"
    assert str(e.value) == want.replace(str(bad), name)


def test_bad_python_values():
    with pytest.raises(sp.BadInput, match=r"sizes\[0\]: expected an integer, got the string"):
        sp.alloc.pack(["a"], [0], [1])
    with pytest.raises(sp.BadInput, match="starts: expected 2 values"):
        sp.alloc.pack([1, 2], [0], [1, 1])
    with pytest.raises(sp.BadInput, match="expected a 1-d array"):
        sp.alloc.pack([[1, 2]], [[0, 0]], [[1, 1]])
    with pytest.raises(sp.BadInput, match=r"sizes\[0\]: expected an integer, got a float 1.5"):
        sp.alloc.pack([1.5], [0], [1])
    with pytest.raises(sp.BadInput):
        sp.alloc.pack([1], [5], [2])  # ends before it starts
    with pytest.raises(sp.BadInput):
        sp.alloc.pack([-1], [0], [1])
    with pytest.raises(sp.BadInput, match="<program>: expected a dict"):
        sp.lx.plan(42)
    with pytest.raises(sp.BadInput, match="not JSON"):
        sp.lx.plan({"x": float("nan")})
    with pytest.raises(sp.BadInput, match="^cores: expected an integer 1..32, got 2.5"):
        sp.lx.plan(PROG, cores=2.5)
    with pytest.raises(sp.BadInput):
        sp.layout.layout(["a"])
    with pytest.raises(sp.BadInput, match="no capacity"):
        sp.alloc.select([1], [0], [1], None)
    # The generators' arguments take the flags' rule (they raised ValueError / OverflowError).
    for bad in ("x", float("nan"), float("inf"), 0, 2 ** 63):
        with pytest.raises(sp.BadInput, match="num_ops: expected an integer 1..100000"):
            sp.program.synthetic(bad)
        with pytest.raises(sp.BadInput, match="n: expected an integer 1..100000000"):
            sp.alloc.generate_stream(bad)
