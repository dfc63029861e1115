"""The MLSys graph generator of the benchmarks (bench/gen_mlsys.py): every family gives graphs
the scheduler accepts, deterministic in (family, seed), with the shape its docstring promises;
a short schedule of each is valid under the evaluator."""
import os
import sys

import pytest

from scratchplan import mlsys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import gen_mlsys  # noqa: E402


@pytest.mark.parametrize("family", gen_mlsys.FAMILIES)
def test_family_is_deterministic_and_schedulable(family):
    for seed in range(3):
        g = gen_mlsys.generate(family, seed)
        assert g == gen_mlsys.generate(family, seed)
        s = mlsys.schedule(g, iterations=200, threads=1)
        ev = mlsys.evaluate(g, s, check_reported=True)
        assert ev.valid, ev.errors
        assert ev.total == pytest.approx(s.total)


def test_mm15_pw5_has_the_reported_graphs_shape():
    for seed in range(20):
        g = gen_mlsys.generate("mm15_pw5", seed)
        assert len(g["op_types"]) == 20
        assert g["op_types"].count("MatMul") == 15
        assert len(g["widths"]) == 30
        assert g["fast_memory_capacity"] == 25000 and g["native_granularity"] == [128, 128]
        produced = {t for outs in g["outputs"] for t in outs}
        assert len(produced) == 20  # one input and nine weights are not produced
        for ins, kind in zip(g["inputs"], g["op_types"]):
            if kind == "MatMul":
                a, b = ins
                assert a != b and g["widths"][a] == g["heights"][b]


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="unknown family"):
        gen_mlsys.generate("nope", 0)
