"""scratchplan.alloc: pack / select over numpy arrays, the ``alloc`` verb on documents, and the
result's outputs (to_dict == the CLI's JSON, to_csv, svg). Plans are re-checked here with an
independent overlap / capacity / alignment test."""
import json

import numpy as np
import pytest

import scratchplan as sp
from conftest import cli, data, load

SMALL_CSV = data("..", "..", "fuzz", "corpus", "alloc_input", "small.csv")


def check_plan(sizes, starts, ends, offsets, capacity=None, alignment=None, allow_spill=False):
    """Independent legality check: placed buffers that are live at the same time do not overlap."""
    sizes, starts, ends, offsets = map(np.asarray, (sizes, starts, ends, offsets))
    placed = np.nonzero(offsets >= 0)[0]
    if not allow_spill:
        assert len(placed) == len(sizes)
    for i in placed:
        if capacity is not None:
            assert offsets[i] + sizes[i] <= capacity
        if alignment is not None:
            a = alignment if np.isscalar(alignment) else alignment[i]
            assert offsets[i] % a == 0
    for x in range(len(placed)):
        i = placed[x]
        for j in placed[x + 1:]:
            if starts[i] < ends[j] and starts[j] < ends[i] and sizes[i] and sizes[j]:
                assert offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i], (i, j)


def random_problem(n, seed):
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 50, n)
    ends = starts + rng.integers(1, 20, n)
    sizes = rng.integers(1, 1000, n)
    return sizes, starts, ends


def test_pack_minimizes_height_without_capacity():
    sizes, starts, ends = [10, 20, 30], [0, 1, 2], [3, 4, 5]
    r = sp.alloc.pack(sizes, starts, ends)
    assert isinstance(r.offsets, np.ndarray) and r.offsets.dtype == np.int64
    assert r.height == 60 and r.lower_bound == 60 and r.proven  # all three overlap at tick 2
    check_plan(sizes, starts, ends, r.offsets)
    assert r.capacity is None and r.feasible
    assert not r.spilled.any()
    assert "3 buffers" in repr(r)


def test_no_capacity_is_none_and_null_as_in_the_cli(tmp_path):
    # --minimize without --capacity: None in Python, null in the JSON (not the internal sentinel).
    r = sp.alloc.alloc(SMALL_CSV, minimize=True)
    assert r.capacity is None and r.to_dict()["capacity"] is None
    c = cli("alloc", SMALL_CSV, "--minimize", "-o", "-")
    assert c.returncode == 0, c.stderr
    want = json.loads(c.stdout)
    assert want["capacity"] is None and '"capacity": null,' in c.stdout
    got = r.to_dict()
    want.pop("seconds"), got.pop("seconds")
    assert got == want


def test_pack_random_problems_are_legal_and_bounded():
    for seed in range(5):
        sizes, starts, ends = random_problem(200, seed)
        r = sp.alloc.pack(sizes, starts, ends, time_limit=0.5)
        check_plan(sizes, starts, ends, r.offsets)
        assert r.lower_bound <= r.height
        assert r.height == max(int(o + s) for o, s in zip(r.offsets, sizes))
        assert r.seconds >= 0 and r.solver


def test_pack_with_capacity_alignment_and_fixed_offsets():
    sizes, starts, ends = random_problem(60, 7)
    cap = int(sizes.sum())
    fixed = np.full(60, -1)
    fixed[3] = 128 * 5
    r = sp.alloc.pack(sizes, starts, ends, capacity=cap, alignment=128, fixed_offsets=fixed)
    check_plan(sizes, starts, ends, r.offsets, capacity=cap, alignment=128)
    assert r.offsets[3] == 640
    assert r.capacity == cap
    r2 = sp.alloc.pack(sizes, starts, ends, capacity=cap, alignment=np.full(60, 64), minimize=True, time_limit=0.3)
    check_plan(sizes, starts, ends, r2.offsets, capacity=cap, alignment=64)


def test_pack_accepts_lists_and_other_integer_dtypes():
    a = sp.alloc.pack(np.array([4, 4], dtype=np.int32), np.array([0, 0], dtype=np.uint8), [1, 1])
    assert sorted(a.offsets.tolist()) == [0, 4]
    assert not a.offsets.flags.writeable  # results are read-only views of the plan


def test_pack_infeasible_raises_the_cli_line():
    with pytest.raises(sp.BadInput) as e:
        sp.alloc.pack([10, 10], [0, 0], [1, 1], capacity=15)
    assert str(e.value) == "<arrays>: no plan within capacity 15 (proven infeasible; lower bound 20); no output written"
    assert isinstance(e.value, ValueError)


def test_pack_deterministic_for_seed_and_iterations():
    sizes, starts, ends = random_problem(60, 3)
    a = sp.alloc.pack(sizes, starts, ends, solver="annealing", iterations=200, seed=5)
    b = sp.alloc.pack(sizes, starts, ends, solver="annealing", iterations=200, seed=5)
    assert np.array_equal(a.offsets, b.offsets)


@pytest.mark.parametrize("solver", sp.alloc.SOLVERS)
def test_every_solver(solver):
    sizes, starts, ends = random_problem(40, 11)
    r = sp.alloc.pack(sizes, starts, ends, capacity=int(sizes.sum()), solver=solver, time_limit=0.5, iterations=500
                      if solver == "annealing" else None)
    check_plan(sizes, starts, ends, r.offsets, capacity=int(sizes.sum()))


def test_select_spills_minimum_cost():
    # Three buffers live together, capacity for two: the cheapest is spilled.
    r = sp.alloc.select([100, 100, 100], [0, 0, 0], [2, 2, 2], capacity=200, spill_costs=[5, 1, 9])
    assert r.offsets.tolist().count(-1) == 1 and r.offsets[1] == -1
    assert r.spill_cost == 1 and r.proven and r.lower_bound == 1
    assert r.spilled.tolist() == [False, True, False]
    check_plan([100] * 3, [0] * 3, [2] * 3, r.offsets, capacity=200, allow_spill=True)


def test_repr_says_which_quantity_each_number_is():
    # select: the bound is on the spill cost, not on the height.
    r = sp.alloc.select([100, 100, 100], [0, 0, 0], [2, 2, 2], capacity=200, spill_costs=[5, 1, 9])
    assert r.objective == "select"
    assert ("3 buffers, spill cost 1 (1 spilled), lower bound on the spill cost 1, proven, height 200, solver"
            in repr(r)), repr(r)
    p = sp.alloc.pack([10, 20, 30], [0, 1, 2], [3, 4, 5])
    assert p.objective == "pack-min" == p.to_dict()["objective"]
    assert "3 buffers, height 60, lower bound on the height 60, proven, solver" in repr(p), repr(p)
    assert sp.alloc.pack([10], [0], [1], capacity=10).objective == "pack"


def test_select_default_costs_and_random_legality():
    sizes, starts, ends = random_problem(150, 2)
    cap = int(sizes.sum() // 6)
    r = sp.alloc.select(sizes, starts, ends, cap, time_limit=0.5)
    check_plan(sizes, starts, ends, r.offsets, capacity=cap, allow_spill=True)
    assert r.lower_bound <= r.spill_cost
    assert r.spilled.any()


def test_alloc_document_path_matches_cli(tmp_path):
    out = tmp_path / "plan.json"
    c = cli("alloc", SMALL_CSV, "--capacity", "100", "-o", out)
    assert c.returncode == 0, c.stderr
    want = load(out)
    r = sp.alloc.alloc(SMALL_CSV, capacity=100)
    got = r.to_dict()
    want.pop("seconds"), got.pop("seconds")  # wall time differs run to run
    assert got == want
    assert json.loads(r.to_json())["format"] == "scratchplan-alloc-plan"
    c = cli("alloc", SMALL_CSV, "--capacity", "100", "-o", tmp_path / "plan.csv", "--svg", tmp_path / "p.svg")
    assert c.returncode == 0
    assert r.to_csv() == (tmp_path / "plan.csv").read_text()
    assert r.svg() == (tmp_path / "p.svg").read_text()
    assert r._repr_svg_().startswith("<svg") or "<svg" in r._repr_svg_()
    r.svg(tmp_path / "q.svg")
    assert (tmp_path / "q.svg").read_text() == r.svg()


def test_alloc_document_dict_select_with_inplace():
    problem = load(data("..", "..", "fuzz", "corpus", "alloc_input", "inplace.json"))
    r = sp.alloc.alloc(problem, objective="select", capacity=problem.get("capacity", 10 ** 6))
    assert len(r.offsets) == len(problem["buffers"])
    m = sp.alloc.alloc(problem, minimize=True, capacity=10 ** 9)
    assert m.lower_bound <= m.height


def test_alloc_minimize_matches_cli_height():
    path = data("dsa", "idealloc", "iree_mobilenet.csv")
    c = cli("alloc", path, "--capacity", str(10 ** 15), "--minimize", "-o", "-")
    assert c.returncode == 0
    want = json.loads(c.stdout)
    r = sp.alloc.alloc(path, capacity=10 ** 15, minimize=True)
    assert r.height == want["height"] and r.lower_bound == want["lower_bound"]
