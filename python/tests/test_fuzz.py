"""The Python entry points on broken input: every document of the repository's corpora (fuzz
seed corpora, examples, tests/data, torch-spyre captures), mutated the way the CLI fuzzer
mutates them (tests/cli/fuzz_cli.py: dropped keys, typos, wrong types, huge/negative numbers,
NaN, truncation, cycles), plus random option values and arrays. Each call must return a result
or raise BadInput: never another exception, never a crash of the interpreter. Deterministic."""
import copy
import glob
import importlib.util
import json
import math
import os
import random

import numpy as np
import pytest

import scratchplan as sp
from conftest import EXAMPLES, ROOT, data

spec = importlib.util.spec_from_file_location("fuzz_cli", os.path.join(ROOT, "tests", "cli", "fuzz_cli.py"))
fuzz_cli = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz_cli)  # reuse the CLI fuzzer's mutations


def corpus(*patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(os.path.join(ROOT, p)))
    return out


FAST = dict(time_limit=0.05)
# entry point -> (documents, call)
TARGETS = {
    "lx.plan": (corpus("fuzz/corpus/program/*.json", "fuzz/corpus/lx/softmax_lastdim.json", "fuzz/corpus/lx/sdpa.json",
                       "examples/programs/*.json"),
                lambda d: sp.lx.plan(d, cores=4, **FAST)),
    "lx.plan(hardware)": (corpus("fuzz/corpus/lx/hardware.json"),
                          lambda d: sp.lx.plan(os.path.join(EXAMPLES, "programs", "matmul.json"), hardware=d, **FAST)),
    "program.load": (corpus("fuzz/corpus/program/*.json", "examples/programs/*.json"), lambda d: sp.program.load(d)),
    "workdiv.divide": (corpus("fuzz/corpus/program/*.json", "examples/programs/*.json"),
                       lambda d: sp.workdiv.divide(d, cores=8)),
    "mlsys.evaluate": (corpus("fuzz/corpus/mlsys_problem/*.json", "examples/mlsys/mlp_block.json"),
                       lambda d: sp.mlsys.evaluate(d, os.path.join(EXAMPLES, "mlsys", "mlp_block_solution.json"))),
    "mlsys.evaluate(solution)": (corpus("examples/mlsys/mlp_block_solution.json", "fuzz/corpus/mlsys_schedule/*.json"),
                                 lambda d: sp.mlsys.evaluate(os.path.join(EXAMPLES, "mlsys", "mlp_block.json"), d)),
    "mlsys.schedule": (corpus("fuzz/corpus/mlsys_problem/*.json", "tests/data/mlsys2026/examples/ex*_problem.json"),
                       lambda d: sp.mlsys.schedule(d, iterations=20, threads=1)),
    "nki.check": (corpus("fuzz/corpus/nki_kernel/*.json", "examples/nki/[!h]*.json"), lambda d: sp.nki.check(d)),
    "nki.plan": (corpus("fuzz/corpus/nki_kernel/*.json"), lambda d: sp.nki.plan(d, max_buffers=3, time_limit=0.05)),
    "alloc.alloc": (corpus("fuzz/corpus/alloc_input/*.json"),
                    lambda d: sp.alloc.alloc(d, capacity=4096, objective="select", **FAST)),
    "spyre.solve_core_divisions": ([data("spyre", "captures", "cooptimization_captures.json")],
                                   lambda d: sp.spyre.solve_core_divisions(d, 1625344, time_limit=0.05)),
}


def attempt(call, arg):
    try:
        call(arg)
    except sp.BadInput as e:
        msg = str(e)
        assert msg and "\n" not in msg, msg


def as_argument(text, tmp_path, rng, i):
    """A mutated document as a dict (when it still parses) or as a file path."""
    try:
        value = json.loads(text)
        if rng.random() < 0.5 and isinstance(value, (dict, list)):
            return value
    except ValueError:
        pass
    path = tmp_path / f"doc{i}.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_corpus_as_is(target):
    docs, call = TARGETS[target]
    assert docs, target
    for path in docs:
        attempt(call, path)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_mutated_corpus(target, tmp_path):
    docs, call = TARGETS[target]
    rng = random.Random(sum(map(ord, target)))
    runs = 150 if target != "spyre.solve_core_divisions" else 30
    for i in range(runs):
        path = docs[i % len(docs)]
        with open(path) as f:
            doc = json.load(f)
        if target == "spyre.solve_core_divisions":
            doc = doc["softmax"][0]["inputs"]
        text, _ = fuzz_cli.mutate_json(doc, rng)
        arg = as_argument(text, tmp_path, rng, i)
        if target == "spyre.solve_core_divisions" and not isinstance(arg, list):
            continue  # takes buffer objects, not paths
        attempt(call, arg)


def test_mutated_csv(tmp_path):
    rng = random.Random(5)
    for i in range(60):
        doc = fuzz_cli.random_alloc_problem(rng)
        text, _ = fuzz_cli.mutate_csv(fuzz_cli.alloc_csv(doc), rng)
        p = tmp_path / f"p{i}.csv"
        p.write_text(text)
        attempt(lambda x: sp.alloc.alloc(x, capacity=rng.choice([0, 64, 4096, 2 ** 62]), minimize=rng.random() < 0.3,
                                         time_limit=0.05), str(p))


WEIRD = fuzz_cli.WEIRD + [float("nan"), float("inf"), -0.0, "3", b"3", np.int64(-1), np.float64("nan"), object()]


def test_random_option_values():
    rng = random.Random(9)
    prog = os.path.join(EXAMPLES, "programs", "softmax_lastdim.json")
    kernel = os.path.join(EXAMPLES, "nki", "softmax_rows.json")
    mlp = os.path.join(EXAMPLES, "mlsys", "mlp_block.json")
    calls = [
        lambda v: sp.lx.plan(prog, cores=v, time_limit=0.05),
        lambda v: sp.lx.plan(prog, time_limit=v if not isinstance(v, (int, float)) or not v or v < 0.1 else 0.05),
        lambda v: sp.lx.plan(prog, stage=v, time_limit=0.05),
        lambda v: sp.lx.plan(prog, capacity=v, time_limit=0.05),
        lambda v: sp.lx.plan(prog, hbm_gbps=v, time_limit=0.05),
        lambda v: sp.workdiv.divide(prog, cores=v),
        lambda v: sp.layout.layout([4, 64], v),
        lambda v: sp.layout.layout(v),
        lambda v: sp.layout.layout([4, 64], dim_order=v),
        lambda v: sp.layout.layout([4, 64], strides=v),
        lambda v: sp.nki.plan(kernel, max_buffers=v, time_limit=0.05),
        lambda v: sp.mlsys.schedule(mlp, iterations=v if not isinstance(v, int) or v < 100 else 5, threads=1),
        lambda v: sp.mlsys.schedule(mlp, seed=v, iterations=5, threads=1),
        lambda v: sp.mlsys.evaluate(mlp, mlp, mm_compute=v),
        lambda v: sp.alloc.pack([1, 2], [0, 0], [1, 1], capacity=v, time_limit=0.05),
        lambda v: sp.alloc.pack([1, 2], [0, 0], [1, 1], threads=v, time_limit=0.05),
        lambda v: sp.alloc.pack([1, 2], [0, 0], [1, 1], alignment=v, time_limit=0.05),
        lambda v: sp.alloc.pack([1, 2], [0, 0], [1, 1], fixed_offsets=v, time_limit=0.05),
        lambda v: sp.alloc.select([1, 2], [0, 0], [1, 1], 2, spill_costs=v, time_limit=0.05),
        lambda v: sp.alloc.pack([v, 2], [0, 0], [1, 1], time_limit=0.05),
        lambda v: sp.alloc.pack(v, v, v, time_limit=0.05),
        lambda v: sp.spyre.solve([{"name": "a", "size": v, "uses": [0, 1]}], 100),
        lambda v: sp.spyre.solve([{"name": "a", "size": 10, "uses": v}], 100),
        lambda v: sp.spyre.solve([{"name": "a", "size": 10, "uses": [0, 1]}], v),
    ]
    for call in calls:
        for v in WEIRD:
            try:
                call(copy.deepcopy(v) if isinstance(v, (list, dict)) else v)
            except sp.BadInput:
                pass
    for _ in range(100):  # random arrays, including mismatched lengths and extreme values
        n = rng.randint(0, 30)
        arr = lambda lo, hi: np.array([rng.randint(lo, hi) for _ in range(n + rng.choice([0, 0, 0, 1]))], dtype=np.int64)
        try:
            sp.alloc.pack(arr(-5, 2 ** 40), arr(-5, 50), arr(-5, 60), capacity=rng.choice([None, 0, 100, 2 ** 62]),
                          alignment=rng.choice([None, 1, 3, 64, 0, -1]), time_limit=0.05)
        except sp.BadInput:
            pass
