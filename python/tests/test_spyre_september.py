"""Conformance of scratchplan.spyre to torch-spyre's September solver contract.

Inputs are built the way torch-spyre's allocator builds them: with torch-spyre's own frozen
dataclasses (``TileAxis``, ``TileSpec``), its mutable ``CoreDivision`` and buffer dataclasses with
their field names and defaults (written below from the contract, nothing of ours in them), and
the dict form. Covered: integer-only fields (issue 53), the untiled default ``TileSpec()``,
``lx_view`` pass-through, real tilings and the cut stage, the objective ladder with its balance
stage, cost expressions (linear, reciprocal in the core count, one that cannot be lowered),
``last_solve_stats``, the residency gate and spill reasons, relayout copies, the solver helpers
(``excluded``, ``record_exclusions``, ``partition``), and an exact reference (every division
choice and residency set enumerated) that the engine must match on small random programs.
"""
from __future__ import annotations

import dataclasses
import enum
import itertools
import math
import random
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import numpy as np
import pytest

import scratchplan as sp

sympy = pytest.importorskip("sympy")

Spyre = sp.spyre
ContractError = Spyre.ContractError


# --------------------------------------------------------------------------------------------
# torch-spyre's data model (plan_solver.py, September): field names, defaults, properties

from spyre_model import TileAxis, TileSpec, CoreDivision, BufferType, _int_sym, LifetimeBoundBuffer, CoreDivisionBuffer, RelayoutCopyBuffer  # noqa: E402,F401


WHOLE = CoreDivision()
SPEC = TileSpec((TileAxis(0, 2),))   # d0:2
SPEC1 = TileSpec((TileAxis(1, 2),))  # d1:2 (same nest (2,) as d0:2)


def cdb(name, size, uses, menu=None, **kw):
    return CoreDivisionBuffer(name, size, uses, core_divisions=list(menu or [CoreDivision()]), **kw)


def by_name(bufs):
    return {b.name: b for b in bufs}


def joint(bufs, size, alignment=128, cost_expr=None, **kw):
    s = Spyre.LayoutSolver(bufs, size, alignment, **kw)
    out = s.plan_layout_and_core_divisions(cost_expr) if cost_expr is not None else s.plan_layout_and_core_divisions()
    return s, out


# --------------------------------------------------------------------------------------------
# Issue 53 item 1: integer-valued fields only

def test_issue_53_float_size_refused_never_a_legal_looking_plan():
    bufs = [LifetimeBoundBuffer("a", 100.7, [0, 5]), LifetimeBoundBuffer("b", 100, [0, 5])]
    with pytest.raises(ContractError) as e:
        Spyre.solve(bufs, 1000, alignment=1)
    assert "'a'" in str(e.value) and "size" in str(e.value)
    assert all(b.address is None for b in bufs)  # nothing written


BAD_VALUES = [100.7, 100.0, "100", True, False, np.float64(100.0), None]


@pytest.mark.parametrize("value", BAD_VALUES[:-1], ids=repr)
@pytest.mark.parametrize("field_", ["size", "uses", "lifetime_end_override", "lifetime_start_override"])
@pytest.mark.parametrize("entry", ["solve", "cd", "solver", "placement"])
def test_non_integer_fields_refused(entry, field_, value):
    b = cdb("x", 128, [2, 5])
    other = cdb("y", 128, [0, 6])
    if field_ == "uses":
        b.uses = [value, 5] if not isinstance(value, str) else [2, value]
    elif field_ == "lifetime_end_override":
        b.lifetime_end_override = value
    elif field_ == "lifetime_start_override":
        b.lifetime_start_override = value
    else:
        b.size = value
    with pytest.raises(ContractError) as e:
        if entry == "solve":
            Spyre.solve([other, b], 1000, alignment=1)
        elif entry == "cd":
            Spyre.solve_core_divisions([other, b], 1000, alignment=1)
        elif entry == "solver":
            joint([other, b], 1000, 1)
        else:
            Spyre.LayoutSolver([other, b], 1000, 1).plan_layout()
    assert "'x'" in str(e.value) and field_ in str(e.value), str(e.value)
    assert other.address is None


@pytest.mark.parametrize("value", [2.0, "2", True])
def test_non_integer_split_factors_and_matches_refused(value):
    a = cdb("a", 256, [0, 1], [CoreDivision({"x": value})])
    with pytest.raises(ContractError) as e:
        joint([a], 1000, 1)
    assert "'a'" in str(e.value) and "splits" in str(e.value)
    p = cdb("p", 256, [0, 1])
    c = cdb("c", 256, [1, 2], parents=["p"], cd_parent_matches={"p": [(0, value)]})
    with pytest.raises(ContractError) as e:
        joint([p, c], 1000, 1)
    assert "'c'" in str(e.value) and "cd_parent_matches" in str(e.value)


@pytest.mark.parametrize("value", [1000.5, "1000", True])
def test_non_integer_capacity_refused(value):
    with pytest.raises(ContractError):
        Spyre.solve([LifetimeBoundBuffer("a", 10, [0, 1])], value)
    with pytest.raises(ContractError):
        Spyre.LayoutSolver([cdb("a", 10, [0, 1])], value)


class Index:
    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


@pytest.mark.parametrize("make", [int, np.int64, np.int32, sympy.Integer, Index], ids=lambda m: m.__name__)
def test_integral_types_accepted(make):
    tick = int if make is Index else make  # torch-spyre's constructor compares ticks
    bufs = [LifetimeBoundBuffer("a", make(100), [tick(0), tick(5)], lifetime_end_override=tick(7)),
            LifetimeBoundBuffer("b", make(100), [0, 5])]
    if make is Index:
        bufs[0].uses = [make(0), make(5)]  # set behind the constructor's back
    Spyre.solve(bufs, make(1000), alignment=make(1))
    assert sorted([bufs[0].address, bufs[1].address]) == [0, 100]
    c = [cdb("a", make(256), [0, 1], [CoreDivision({"x": make(2)})])]
    c[0].uses = [make(0), 1]
    joint(c, make(1000), make(1))
    assert c[0].address == 0 and c[0].chosen_division == 0


def test_exact_int_helper():
    from scratchplan._common import exact_int
    assert exact_int(np.uint8(7), "w") == 7 and exact_int(sympy.Integer(5), "w") == 5
    for bad in (1.0, "1", True, np.bool_(True), np.float32(1), sympy.Float(1.0), None, [1]):
        with pytest.raises(sp.BadInput) as e:
            exact_int(bad, "buffer 'q': size")
        assert "buffer 'q': size" in str(e.value)


# --------------------------------------------------------------------------------------------
# The data model: untiled default, lx_view, splits + reduction_syms

def test_empty_tilespec_is_untiled_on_every_entry_point():
    assert dataclasses.is_dataclass(TileSpec()) and bool(TileSpec())  # truthy, and still untiled
    for entry in ("cd", "solver"):
        p = cdb("p", 400, [0, 1], [CoreDivision({256: 4}), CoreDivision()])
        c = cdb("c", 400, [1, 2], [CoreDivision({256: 4}), CoreDivision()], parents=["p"],
                cd_parent_matches={"p": [(0, 0), (1, 1)]})
        if entry == "cd":
            Spyre.solve_core_divisions([p, c], 256, alignment=1)
        else:
            joint([p, c], 256, 1)
        assert p.address is not None and c.address is not None and p.chosen_division == 0 == c.chosen_division


def test_lx_view_passed_back_untouched_on_every_placed_buffer():
    views = [object() for _ in range(4)]
    plans = [["plan"], [], [], []]
    for entry in ("solve", "cd", "solver", "placement"):
        bufs = [cdb(f"b{i}", 128, [i, i + 2], lx_view=v, lx_relayout_plans=p) for i, (v, p) in
                enumerate(zip(views, plans))]
        ids = [id(b) for b in bufs]
        if entry == "solve":
            out = bufs
            Spyre.solve(bufs, 1 << 20)
        elif entry == "cd":
            out = bufs
            Spyre.solve_core_divisions(bufs, 1 << 20)
        elif entry == "solver":
            _, out = joint(bufs, 1 << 20)
        else:
            out = Spyre.LayoutSolver(bufs, 1 << 20).plan_layout()
        assert [id(b) for b in out] == ids
        assert all(b.address is not None for b in out)
        assert [b.lx_view for b in out] == views and [b.lx_relayout_plans for b in out] == plans


def test_core_division_properties_and_split_keys():
    cd = CoreDivision({"y": 2, "x": 4, "ry": 8, "rx": 16}, frozenset({"rx", "ry"}))
    assert cd.label == "sx/4,sy/2 ~srx/16,~sry/8" and cd.output_partition == 8 and cd.cores_used == 1024
    # Keys: int strides, strings and sympy symbols; a reduction split does not shrink the footprint.
    x = sympy.Symbol("x")
    for key in (256, "b", x):
        a = cdb("a", 1024, [0, 1], [CoreDivision({key: 4, "k": 2}, frozenset({"k"}))])
        joint([a], 256, 1)
        assert a.address == 0  # 1024 / 4 = 256 B fits; the reduction factor 2 is not a partition
        a = cdb("a", 1024, [0, 1], [CoreDivision({key: 2, "k": 2}, frozenset({"k"}))])
        s, _ = joint([a], 256, 1)
        assert a.address is None and "capacity" in s.spill_reasons["a"]


def test_min_footprint_divides_by_output_tile_count():
    """512 B split 2 ways and tiled d0:2 (output) fits 128 B; a reduction tile level does not shrink it."""
    out_tiled = CoreDivision({"x": 2}, tiling=TileSpec((TileAxis(0, 2),)))
    red_tiled = CoreDivision({"x": 2}, tiling=TileSpec((TileAxis(0, 2, True),)))
    a = cdb("a", 512, [0, 1], [out_tiled])
    s, _ = joint([a], 128, 1)
    assert a.address == 0 and s.excluded(a) is None
    b = cdb("b", 512, [0, 1], [red_tiled])
    s, _ = joint([b], 128, 1)
    assert b.address is None and s.excluded(b) == "min footprint 256 B > LX capacity 128 B"
    assert s.spill_reasons == {"b": "min footprint 256 B > LX capacity 128 B"}


# --------------------------------------------------------------------------------------------
# The cut stage (NOTES 1.14.2): each case has capacity 1<<20, alignment 1, a whole-only sink

def sink(parent, tick):
    return cdb("sink", 16, [tick, tick + 1], [CoreDivision()], parents=[parent],
               cd_parent_matches={parent: [(0, 0)]}, residency_reason="barred")


def test_cut_stage_joins_the_op_between():
    a = cdb("a", 64, [0, 2], [CoreDivision(tiling=SPEC)], residency_reason="barred")
    b = cdb("b", 64, [1, 2], [CoreDivision(), CoreDivision(tiling=SPEC)], residency_reason="barred")
    c = cdb("c", 64, [2, 3], [CoreDivision(tiling=SPEC)], parents=["a", "b"],
            cd_parent_matches={"a": [(0, 0)], "b": [(0, 0), (1, 0)]}, residency_reason="barred")
    joint([a, b, c, sink("c", 3)], 1 << 20, 1)
    assert b.chosen_division == 1


def test_cut_stage_counts_a_tiled_graph_output():
    out = cdb("out", 64, [0, 1], [CoreDivision(), CoreDivision({"x": 2}, tiling=SPEC)], boundary=BufferType.Output,
              residency_reason="barred")
    c = cdb("c", 64, [1, 2], [CoreDivision(tiling=SPEC)], parents=["out"], cd_parent_matches={"out": [(0, 0), (1, 0)]},
            residency_reason="barred")
    joint([out, c, sink("c", 2)], 1 << 20, 1)
    assert out.chosen_division == 0  # 1 cut against 2, though the tiled one has 2 cores


def test_cut_stage_splits_a_pair_the_table_does_not_match():
    a = cdb("a", 64, [0, 1], [CoreDivision(tiling=SPEC)], residency_reason="barred")
    b = cdb("b", 64, [1, 2], [CoreDivision(), CoreDivision({"x": 2}, tiling=SPEC)], parents=["a"],
            cd_parent_matches={"a": [(0, 0)]}, residency_reason="barred")
    joint([a, b, sink("b", 2)], 1 << 20, 1)
    assert b.chosen_division == 0


def test_cut_stage_splits_a_pair_an_untileable_op_sits_between():
    a = cdb("a", 64, [0, 2], [CoreDivision(), CoreDivision({"x": 2}, tiling=SPEC)], residency_reason="barred")
    b = cdb("b", 64, [1, 2], [CoreDivision()], residency_reason="barred")
    c = cdb("c", 64, [2, 3], [CoreDivision(tiling=SPEC)], parents=["a"], cd_parent_matches={"a": [(0, 0), (1, 0)]},
            residency_reason="barred")
    joint([a, b, c, sink("c", 3)], 1 << 20, 1)
    assert a.chosen_division == 0


def test_cut_stage_joins_a_matched_pair_with_different_specs():
    a = cdb("a", 64, [0, 1], [CoreDivision(tiling=SPEC)], residency_reason="barred")
    b = cdb("b", 64, [1, 2], [CoreDivision(), CoreDivision(tiling=SPEC1)], parents=["a"],
            cd_parent_matches={"a": [(0, 1)]}, residency_reason="barred")
    c = cdb("c", 64, [2, 3], [CoreDivision(tiling=SPEC)], parents=["b"], cd_parent_matches={"b": [(1, 0)]},
            residency_reason="barred")
    s, _ = joint([a, b, c, sink("c", 3)], 1 << 20, 1)
    assert b.chosen_division == 1
    assert s.last_solve_stats["status"] == "OPTIMAL"


# --------------------------------------------------------------------------------------------
# The ladder: residency, cores, balance; placement-only and joint cases of the tests

def test_balance_prefers_balanced_division():
    a = cdb("a", 64, [0, 1], [CoreDivision({256: 4}), CoreDivision({256: 2, 128: 2})], residency_reason="barred")
    b = cdb("b", 64, [0, 1], [CoreDivision({256: 2, 128: 2}), CoreDivision({256: 4})], residency_reason="barred")
    joint([a, b], 256)
    assert a.core_divisions[a.chosen_division].splits == {256: 2, 128: 2}
    assert b.core_divisions[b.chosen_division].splits == {256: 2, 128: 2}


def test_parallelism_before_balance():
    """8 cores beat 4 even unbalanced: stage 3 (sum of cores) comes before stage 4."""
    a = cdb("a", 64, [0, 1], [CoreDivision({1: 2, 2: 2}), CoreDivision({1: 8})], residency_reason="barred")
    joint([a], 256)
    assert a.chosen_division == 1


def test_picks_matching_division_to_fit():
    menu = [CoreDivision({256: 4}), CoreDivision()]
    P = cdb("P", 400, [0, 1], menu)
    C = cdb("C", 400, [0, 1, 2], menu, parents=["P"], cd_parent_matches={"P": [(0, 0), (1, 1)]})
    D = cdb("D", 400, [2, 3], menu, parents=["C"], cd_parent_matches={"C": [(0, 0), (1, 1)]})
    joint([P, C, D], 256)
    assert P.address is not None and C.address is not None
    assert P.core_divisions[P.chosen_division].output_partition == 4 == C.core_divisions[C.chosen_division].output_partition


def test_oversized_min_footprint_is_spilled():
    P = cdb("P", 1000, [0, 1], [CoreDivision({1: 4}), CoreDivision()])
    C = cdb("C", 1000, [1, 2], [CoreDivision({1: 4}), CoreDivision()], parents=["P"],
            cd_parent_matches={"P": [(0, 0), (1, 1)]})
    s, _ = joint([P, C], 200, 1)
    assert P.address is None and "capacity" in s.spill_reasons["P"]


def test_unset_core_divisions_raises():
    with pytest.raises(AssertionError):
        joint([CoreDivisionBuffer("a", 128, [0, 1])], 1 << 20)
    # plan_layout places a CoreDivisionBuffer without candidates
    b = CoreDivisionBuffer("a", 128, [0, 1])
    Spyre.LayoutSolver([b], 1 << 20).plan_layout()
    assert b.address == 0


def test_unallocated_reads_gate():
    """TestCpSatUnallocatedReads: single-division 128 B buffers, joint entry point."""
    solo = cdb("solo", 128, [0, 1])
    joint([solo], 1 << 20)
    assert solo.address is not None
    barred = cdb("barred", 128, [0, 1], residency_reason="no consumer reads it from LX")
    s, _ = joint([barred], 1 << 20)
    assert barred.address is None and s.spill_reasons == {"barred": "no consumer reads it from LX"}
    for pairs, resident in (([(0, 0)], True), ([], False)):
        b0 = cdb("b0", 128, [0, 1])
        b1 = cdb("b1", 128, [1, 2], parents=["b0"], cd_parent_matches={"b0": pairs})
        s, _ = joint([b0, b1], 1 << 20)
        assert (b0.address is not None) is resident
        if not resident:
            assert s.spill_reasons["b0"] == "core div mismatch" and b1.address is not None


def test_placement_only():
    solo = LifetimeBoundBuffer("solo", 128, [0, 1])
    huge = LifetimeBoundBuffer("huge", 4000, [0, 1])
    barred = LifetimeBoundBuffer("barred", 128, [0, 1], residency_reason="read by restickify (cross-frame barrier)")
    s = Spyre.LayoutSolver([solo, huge, barred], 256)
    s.plan_layout()
    assert solo.address is not None and huge.address is None and "capacity" in s.spill_reasons["huge"]
    assert s.spill_reasons["barred"] == "read by restickify (cross-frame barrier)" and set(s.spill_reasons) == {"huge", "barred"}
    parent = LifetimeBoundBuffer("parent", 100, [0, 1])
    child = LifetimeBoundBuffer("child", 100, [1, 2], in_place_parents=["parent"])
    Spyre.LayoutSolver([parent, child], 150, 1).plan_layout()
    assert parent.address == child.address == 0


def test_spill_reasons_recorded_iff_spilled():
    big = cdb("big", 4096, [0, 1])
    leaf = cdb("leaf", 128, [0, 1], residency_reason="no consumer reads it from LX")
    x = cdb("x", 200, [0, 1, 2])
    y = cdb("y", 200, [0, 1])
    s, bufs = joint([big, leaf, x, y], 256, 1)
    for b in bufs:
        assert (b.address is None) == (b.name in s.spill_reasons), b
    assert "capacity" in s.spill_reasons["big"] and "no consumer" in s.spill_reasons["leaf"]
    assert x.address is not None and s.spill_reasons["y"] == "spilled by solver (no residency benefit / no room)"


def test_mismatch_spills_the_reader_input_not_the_reader():
    """TestExhaustiveSearchResidency: producer -> consumer with {"producer": []}; the consumer's own
    reader (a barred sink) keeps the consumer gate-free."""
    producer = cdb("producer", 128, [0, 1])
    consumer = cdb("consumer", 128, [1, 2], parents=["producer"], cd_parent_matches={"producer": []})
    snk = cdb("sink", 128, [2, 3], parents=["consumer"], cd_parent_matches={"consumer": [(0, 0)]},
              residency_reason="barred")
    s, _ = joint([producer, consumer, snk], 1 << 20)
    assert producer.address is None and s.spill_reasons["producer"] == "core div mismatch"
    assert consumer.address is not None and type(consumer.chosen_division) is int


def test_overrides_passed_through():
    a = cdb("a", 128, [0, 5], lifetime_end_override=7)
    b = cdb("b", 128, [6, 8])
    joint([a, b], 128)
    assert (a.address is None) != (b.address is None)  # co-live through tick 6: only one fits
    a = cdb("a", 128, [0, 5])
    b = cdb("b", 128, [6, 8])
    joint([a, b], 128)
    assert a.address == b.address == 0


# --------------------------------------------------------------------------------------------
# Cost expressions and last_solve_stats

def test_reciprocal_core_count():
    r = cdb("reduction_out", 4096, [0, 1], [CoreDivision({"b": 1, "h": 4, "q": 2}), CoreDivision({"b": 2, "h": 4, "q": 4})],
            residency_reason="barred")
    s, bufs = joint([r], 1 << 20, cost_expr=32000 / r.sym_cores)
    assert r.chosen_division == 1
    assert float((32000 / r.sym_cores).xreplace(Spyre.solved_bindings(bufs))) == 1000.0
    assert s.last_solve_stats["objective_used"] is True and s.last_solve_stats["status"] == "OPTIMAL"


def test_all_core_counts_positive():
    m = cdb("mm_out", 4096, [0, 1], [CoreDivision({"b": 4, "m": 8}), CoreDivision({"b": 4, "m": 4, "k": 2}, frozenset({"k"}))])
    joint([m], 1 << 20, cost_expr=1 / m.sym_cores)
    assert m.chosen_division is not None


def two_buffers():
    return [cdb("b0", 128, [0, 2]), cdb("b1", 128, [1, 3])]


def test_linear_cost_and_stats():
    bufs = two_buffers()
    s = Spyre.LayoutSolver(bufs, 1 << 20)
    assert s.last_solve_stats == {}
    s.plan_layout_and_core_divisions(4000 * (1 - bufs[0].sym_is_lx))
    st = s.last_solve_stats
    assert st["status"] == "OPTIMAL" and st["objective_used"] is True and st["variables"] > 0 and st["constraints"] > 0
    assert isinstance(st["solve_s"], float) and st["limit_s"] == 30.0
    assert bufs[0].address is not None
    b = two_buffers()
    s = Spyre.LayoutSolver(b, 1 << 20)
    s.plan_layout_and_core_divisions()
    assert s.last_solve_stats["status"] == "OPTIMAL" and s.last_solve_stats["objective_used"] is False


def test_cost_can_prefer_hbm():
    """A cost that charges residency spills the buffer the ladder would keep (the expression is the only objective)."""
    bufs = two_buffers()
    joint(bufs, 1 << 20, cost_expr=5 * bufs[1].sym_is_lx - bufs[0].sym_is_lx)
    assert bufs[0].address is not None and bufs[1].address is None


def test_cost_expression_respects_capacity():
    """Both want LX but only one fits: the expression's better choice of the two that fit wins."""
    bufs = [cdb("b0", 128, [0, 2]), cdb("b1", 128, [1, 3])]
    joint(bufs, 128, cost_expr=-3 * bufs[0].sym_is_lx - 5 * bufs[1].sym_is_lx)
    assert bufs[0].address is None and bufs[1].address == 0


def test_unlowerable_cost_falls_back_and_says_so():
    bufs = two_buffers()
    f = sympy.Function("NoSuchNode")(bufs[0].sym_is_lx)
    s = Spyre.LayoutSolver(bufs, 1 << 20)
    with pytest.warns(RuntimeWarning, match="cannot linearize"):
        s.plan_layout_and_core_divisions(f)
    assert s.last_solve_stats["objective_used"] is False and s.last_solve_stats["status"] == "OPTIMAL"
    assert all(b.address is not None for b in bufs)
    bufs = two_buffers()
    s = Spyre.LayoutSolver(bufs, 1 << 20, warn_on_cost_expr=False)
    with pytest.raises(NotImplementedError):
        s.plan_layout_and_core_divisions(f)
    # an unbound symbol cannot be lowered either
    bufs = two_buffers()
    s = Spyre.LayoutSolver(bufs, 1 << 20)
    with pytest.warns(RuntimeWarning):
        s.plan_layout_and_core_divisions(sympy.Symbol("stranger") * bufs[0].sym_is_lx)
    assert s.last_solve_stats["objective_used"] is False


def test_solved_bindings():
    a = cdb("a", 256, [0, 1], [CoreDivision({"x": 2}), CoreDivision({"x": 4, "k": 2}, frozenset({"k"}))],
            residency_reason="barred")
    b = LifetimeBoundBuffer("b", 64, [0, 1])
    joint_bufs = [a]
    s = Spyre.LayoutSolver(joint_bufs + [b], 1 << 20)
    s.plan_layout()
    got = Spyre.solved_bindings([a, b])
    sd = a.sym_core_divs
    assert got[a.sym_is_lx] == 0 and got[b.sym_is_lx] == 1
    assert got[a.sym_division] == a.chosen_division == 1  # 8 cores beat 2
    assert got[sd["x"]] == 4 and got[sd["k"]] == 2 and float(a.sym_cores.xreplace(got)) == 8
    assert all(type(v) is int for v in got.values())


# --------------------------------------------------------------------------------------------
# Relayout copies and the solver helpers

def test_relayout_copy_is_kept_out_and_chosen_relayouts_set():
    src = cdb("src", 128, [0, 1])
    copy = RelayoutCopyBuffer(f"{Spyre.RELAYOUT_PREFIX}copy:src:g0", 128, [1], core_divisions=[CoreDivision({"relayout_copy": 2})],
                              relayout_parent="src", group=0)
    c = cdb("c", 128, [1, 2], parents=["src"], cd_parent_matches={"src": [(0, 0)]})
    s, _ = joint([src, copy, c], 1 << 20)
    assert copy.address is None and src.address is not None and c.chosen_relayouts == {}
    assert Spyre.LayoutSolver.decides_lx_relayouts is True and Spyre.LayoutSolver.supports_paired_buffers is True


def test_paired_group_all_or_nothing_and_disjoint():
    src = LifetimeBoundBuffer("src", 128, [0, 1], paired_with=[f"{Spyre.RELAYOUT_PREFIX}src:c"],
                              lx_relayout_plans=["plan"])
    dst = LifetimeBoundBuffer(f"{Spyre.RELAYOUT_PREFIX}src:c", 128, [2, 3], lx_view="dst-view")
    Spyre.LayoutSolver([dst, src], 256).plan_layout()
    assert src.address is not None and dst.address is not None and src.address != dst.address
    assert src.lx_relayout_plans == ["plan"] and dst.lx_view == "dst-view"
    src = LifetimeBoundBuffer("src", 128, [0, 1], paired_with=["d"])
    dst = LifetimeBoundBuffer("d", 128, [2, 3])
    Spyre.LayoutSolver([dst, src], 128).plan_layout()
    assert src.address is None and dst.address is None  # both cannot be disjoint in 128 B: none


def test_helpers_exact_semantics():
    a = LifetimeBoundBuffer("a", 100, [0, 1])
    b = LifetimeBoundBuffer("b", 300, [0, 1])
    c = LifetimeBoundBuffer("c", 10, [0, 1], residency_reason="op not allowed")
    d = cdb("d", 1000, [0, 1], [CoreDivision({1: 4}), CoreDivision()])
    s = Spyre.LayoutSolver([a, b, c, d], 256)
    assert s.spill_reasons == {}
    assert s.excluded(a) is None and s.excluded(d) is None  # min footprint 250 <= 256
    assert s.excluded(b) == "min footprint 300 B > LX capacity 256 B" and s.excluded(c) == "op not allowed"
    s.spill_reasons = {"stale": "x"}
    got = s.record_exclusions()
    assert got is s.spill_reasons and got == {"b": "min footprint 300 B > LX capacity 256 B", "c": "op not allowed"}
    placeable, excluded = s.partition()
    assert placeable == [a, d] and excluded == [b, c]
    # "limit" compared in bytes, no alignment rounding: 129 B against 128 is excluded, 128 is not
    assert Spyre.LayoutSolver([], 128).excluded(LifetimeBoundBuffer("e", 129, [0])) is not None
    assert Spyre.LayoutSolver([], 128).excluded(LifetimeBoundBuffer("e", 128, [0])) is None


def test_never_read_parent_is_value_error_on_both_entry_points():
    for entry in ("placement", "joint"):
        p = cdb("p", 20, [3])
        c = cdb("c", 10, [3, 8], in_place_parents=["p"])
        s = Spyre.LayoutSolver([p, c], 1000)
        with pytest.raises(ValueError, match="computed buffer that is never read"):
            s.plan_layout() if entry == "placement" else s.plan_layout_and_core_divisions()


def test_dict_form():
    bufs = [{"name": "a", "size": 256, "uses": [0, 1], "core_divisions": [{"splits": {"x": 2}, "reduction_syms": []},
                                                                           {"splits": {"x": 4}, "reduction_syms": []}]},
            {"name": "b", "size": 64, "uses": [0, 1]}]
    s = Spyre.LayoutSolver(bufs, 128, 1)
    s.plan_layout()
    assert bufs[0]["chosen_division"] == 1 and bufs[0]["address"] is not None and bufs[1]["address"] is not None
    assert "chosen_division" not in bufs[1]


# --------------------------------------------------------------------------------------------
# Exact reference: every division choice and every residency set, on small programs whose
# buffers are all co-live (so a resident set fits iff its footprints sum to at most the capacity)

def reference(bufs, capacity, cost=None):
    n = len(bufs)
    names = {b.name: i for i, b in enumerate(bufs)}
    children = [[j for j, c in enumerate(bufs) if b.name in c.parents] for b in bufs]
    best = None
    for div in itertools.product(*[range(len(b.core_divisions)) for b in bufs]):
        fp = [math.ceil(b.size / b.core_divisions[d].output_partition) for b, d in zip(bufs, div)]
        ok = []
        for i, b in enumerate(bufs):
            gate = all((div[i], div[j]) in [tuple(x) for x in bufs[j].cd_parent_matches.get(b.name, [])]
                       for j in children[i])
            ok.append(b.residency_reason is None and fp[i] <= capacity and gate)
        static = (-sum(b.core_divisions[d].cores_used for b, d in zip(bufs, div)),
                  sum(sum(v * v for v in b.core_divisions[d].splits.values()) for b, d in zip(bufs, div)))
        for mask in range(1 << n):
            lx = [mask >> i & 1 for i in range(n)]
            if any(lx[i] and not ok[i] for i in range(n)) or sum(f for f, x in zip(fp, lx) if x) > capacity:
                continue
            if cost is None:
                spill = sum(len(b.uses) * math.ceil(b.size / 1) for b, x in zip(bufs, lx) if not x)
                key = (spill,) + static
            else:
                binding = {b.sym_is_lx: x for b, x in zip(bufs, lx)}
                for b, d in zip(bufs, div):
                    binding[b.sym_division] = d
                    for k, sym in b.sym_core_divs.items():
                        binding[sym] = b.core_divisions[d].splits.get(k, 1)
                key = (float(cost.xreplace(binding)),)
            best = key if best is None or key < best else best
    return best


def random_program(rng):
    n = rng.randint(2, 4)
    bufs = []
    for i in range(n):
        menu = [CoreDivision({k: rng.choice([1, 2, 4]) for k in rng.sample(["x", "y"], rng.randint(0, 2))})
                for _ in range(rng.randint(1, 3))]
        parents = [f"b{j}" for j in range(i) if rng.random() < 0.4]
        matches = {p: [(a, c) for a in range(len(bufs[int(p[1:])].core_divisions)) for c in range(len(menu))
                       if rng.random() < 0.5] for p in parents}
        bufs.append(cdb(f"b{i}", rng.choice([64, 128, 256, 384]), [0, 1 + i], menu, parents=parents,
                        cd_parent_matches=matches,
                        residency_reason="barred" if rng.random() < 0.1 else None))
    return bufs, rng.choice([128, 256, 512])


def achieved(bufs, cost=None):
    static = (-sum(b.core_divisions[b.chosen_division].cores_used for b in bufs),
              sum(sum(v * v for v in b.core_divisions[b.chosen_division].splits.values()) for b in bufs))
    if cost is None:
        return (sum(len(b.uses) * b.size for b in bufs if b.address is None),) + static
    return (float(cost.xreplace(Spyre.solved_bindings(bufs))),)


def check_plan(bufs, capacity):
    placed = [b for b in bufs if b.address is not None]
    spans = sorted((b.address, b.address + math.ceil(b.size / b.core_divisions[b.chosen_division].output_partition))
                   for b in placed)
    assert all(hi <= capacity for _, hi in spans) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("seed", range(25))
def test_matches_exact_reference_ladder(seed):
    bufs, capacity = random_program(random.Random(seed))
    s, _ = joint(bufs, capacity, 1)
    check_plan(bufs, capacity)
    assert achieved(bufs) == reference(bufs, capacity)
    assert s.last_solve_stats["status"] == "OPTIMAL"


@pytest.mark.parametrize("seed", range(25))
def test_matches_exact_reference_cost_expression(seed):
    rng = random.Random(1000 + seed)
    bufs, capacity = random_program(rng)
    terms = []
    for b in bufs:
        terms.append(rng.randint(-5, 5) * (1 - b.sym_is_lx) * b.size)
        if b.sym_core_divs and rng.random() < 0.7:
            terms.append(rng.randint(1, 9) * 1000 / b.sym_cores)
    cost = sympy.Add(*terms)
    s, _ = joint(bufs, capacity, 1, cost_expr=cost)
    check_plan(bufs, capacity)
    assert achieved(bufs, cost)[0] == pytest.approx(reference(bufs, capacity, cost)[0])
    assert s.last_solve_stats["objective_used"] is True


# --------------------------------------------------------------------------------------------
# Relayout decisions (NOTES 1.14.9): a copy serves a consumer whose division does not match its
# parent's, instead of sending the parent to HBM, when the cost expression says it is cheaper

@dataclass(frozen=True)
class RelayoutCandidate:
    parent: str
    consumer: str
    source_division: int
    consumer_division: int
    group: int
    source_view: Any = None
    destination_view: Any = None
    cost_ns: float = 0.0
    source_footprint: int = 0
    destination_footprint: int = 0


class RelayoutCharge(sympy.Function):
    """is_lx * p[division], 0 past the table; folds once is_lx is 0 or both are numbers."""

    @classmethod
    def eval(cls, is_lx, division, *prices):
        if is_lx == 0:
            return sympy.Integer(0)
        if is_lx.is_Number and division.is_Number:
            k = int(division)
            return is_lx * prices[k] if 0 <= k < len(prices) else sympy.Integer(0)
        return None


def relayout_case(prices, w_src, penalty, cap=1 << 20, size=128):
    """S (menu [x:2, y:2]) -> C (menu [x:2, y:2]) with only the pair (0, 0) listed; a copy X of S
    priced per source division serves C at (d, 1) for each priced d."""
    menu = [CoreDivision({"x": 2}), CoreDivision({"y": 2})]
    S = cdb("S", size, [0, 1], menu)
    C = cdb("C", size, [1, 2], menu, parents=["S"], cd_parent_matches={"S": [(0, 0)]})
    cands = tuple(RelayoutCandidate("S", "C", d, 1, 0, cost_ns=p) for d, p in enumerate(prices) if p is not None)
    C.cd_parent_relayouts = {"S": list(cands)}
    X = RelayoutCopyBuffer(f"{Spyre.RELAYOUT_PREFIX}copy:S:g0", size, [1], core_divisions=[CoreDivision({"relayout_copy": 2})],
                           relayout_parent="S", group=0, candidates=cands)
    table = [p if p is not None else 0 for p in prices]
    cost = (w_src * (1 - S.sym_is_lx) + penalty * sympy.KroneckerDelta(C.sym_division, 0)
            + RelayoutCharge(X.sym_is_lx, S.sym_division, *table))
    return [S, C, X], cost, cap


def relayout_reference(prices, w_src, penalty, cap, size=128):
    fp = size // 2
    best = None
    for dS, dC, lS, lC, lX in itertools.product(range(2), range(2), range(2), range(2), range(2)):
        opt = prices[dS] is not None and dC == 1
        if lX and not (lS and opt):
            continue
        if lS and not ((dS, dC) == (0, 0) or lX):
            continue
        if fp * (lS + lC + lX) > cap:
            continue
        v = w_src * (1 - lS) + penalty * (dC == 0) + (prices[dS] if lX and prices[dS] is not None else 0)
        best = v if best is None else min(best, v)
    return best


def test_relayout_chosen_when_cheaper_than_hbm():
    bufs, cost, cap = relayout_case([100, None], w_src=500, penalty=1000)
    s, _ = joint(bufs, cap, cost_expr=cost)
    S, C, X = bufs
    assert S.address is not None and X.address is not None and C.chosen_division == 1 and S.chosen_division == 0
    ch = C.chosen_relayouts["S"]
    assert ch.destination_address == X.address and ch.candidate is X.candidates[0]
    assert float(cost.xreplace(Spyre.solved_bindings(bufs))) == 100.0
    assert "S" not in s.spill_reasons and s.last_solve_stats["status"] == "OPTIMAL"


def test_hbm_chosen_when_cheaper_than_the_relayout():
    bufs, cost, cap = relayout_case([800, None], w_src=500, penalty=1000)
    joint(bufs, cap, cost_expr=cost)
    S, C, X = bufs
    assert S.address is None and X.address is None and C.chosen_relayouts == {}
    assert float(cost.xreplace(Spyre.solved_bindings(bufs))) == 500.0


def test_ladder_never_fires_a_relayout():
    bufs, _, cap = relayout_case([1, 1], w_src=500, penalty=1000)
    s, _ = joint(bufs, cap)
    assert bufs[2].address is None and bufs[1].chosen_relayouts == {}


@pytest.mark.parametrize("seed", range(30))
def test_relayout_matches_exact_reference(seed):
    rng = random.Random(seed)
    prices = [rng.choice([None, rng.randint(0, 900)]) for _ in range(2)]
    w_src, penalty = rng.randint(0, 900), rng.randint(0, 900)
    cap = rng.choice([64, 128, 192, 1 << 20])
    bufs, cost, cap = relayout_case(prices, w_src, penalty, cap)
    joint(bufs, cap, 1, cost_expr=cost)
    assert float(cost.xreplace(Spyre.solved_bindings(bufs))) == relayout_reference(prices, w_src, penalty, cap)
    S, C, X = bufs
    if X.address is not None:  # the coupling, as the allocator reads it
        assert S.address is not None and C.chosen_relayouts["S"].destination_address == X.address
    else:
        assert C.chosen_relayouts == {}


def test_cost_expression_uses_the_in_place_hand_off():
    """Parent and child fill the capacity alone; both fit only through the hand-off at one address."""
    P = cdb("P", 128, [0, 1])
    C = cdb("C", 128, [1, 2], in_place_parents=["P"])
    s, _ = joint([P, C], 128, cost_expr=-P.sym_is_lx - C.sym_is_lx)
    assert P.address == C.address == 0 and s.last_solve_stats["status"] == "OPTIMAL"


def test_property_one_non_integer_field_is_always_refused():
    """Issue 53: random buffer lists with one field replaced by a float, a string, a bool or a numpy
    float, through every spyre entry point: always ContractError, never a plan (time-budgeted)."""
    import time
    rng = random.Random(53)
    bad = [lambda v: v + 0.5, lambda v: float(v), lambda v: str(v), lambda v: True, lambda v: np.float64(v)]
    entries = ["solve", "cd", "solver", "placement"]
    end, runs = time.monotonic() + 1.0, 0
    while time.monotonic() < end or runs < len(entries):
        n = rng.randint(1, 6)
        bufs = [cdb(f"b{i}", rng.choice([64, 128, 200]), sorted(rng.sample(range(8), 2)),
                    [CoreDivision({"x": rng.choice([1, 2])}), CoreDivision()]) for i in range(n)]
        victim = rng.choice(bufs)
        field_ = rng.choice(["size", "uses", "lifetime_end_override", "split"])
        f = rng.choice(bad)
        if field_ == "size":
            victim.size = f(victim.size)
        elif field_ == "uses":
            victim.uses = [victim.uses[0], f(victim.uses[1])]
        elif field_ == "lifetime_end_override":
            victim.lifetime_end_override = f(victim.uses[-1] + 2)
        else:
            victim.core_divisions[0] = CoreDivision({"x": f(2)})
        entry = entries[runs % len(entries)]
        if field_ == "split" and entry == "solve":
            entry = "cd"  # plain placement reads no divisions
        with pytest.raises(ContractError):
            if entry == "solve":
                Spyre.solve(bufs, 1000, alignment=1)
            elif entry == "cd":
                Spyre.solve_core_divisions(bufs, 1000, alignment=1)
            elif entry == "solver":
                joint(bufs, 1000, 1)
            else:
                Spyre.LayoutSolver(bufs, 1000, 1).plan_layout()
        assert all(b.address is None for b in bufs), (entry, field_)
        runs += 1


def test_infeasible_pair_table_raises_solve_error_with_the_status_recorded():
    a = cdb("a", 64, [0, 1], [CoreDivision(tiling=SPEC)])
    b = cdb("b", 64, [1, 2], [CoreDivision(tiling=SPEC)], parents=["a"], cd_parent_matches={"a": []})
    s = Spyre.LayoutSolver([a, b, sink("b", 2)], 1 << 20, 1)
    with pytest.raises(Spyre.SolveError):
        s.plan_layout_and_core_divisions()
    assert s.last_solve_stats["status"] == "INFEASIBLE" and not issubclass(Spyre.SolveError, sp.BadInput)


@pytest.mark.parametrize("seed", range(3))
def test_deterministic(seed):
    runs = []
    for _ in range(2):
        bufs, capacity = random_program(random.Random(seed))
        joint(bufs, capacity, 1)
        runs.append([(b.chosen_division, b.address) for b in bufs])
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------------------------
# The module-level entry solve_core_divisions: September's contract for September inputs (a
# candidate carrying a tiling, TileSpec() included, or a cost expression), the August objective
# (HBM bytes) for the inputs that work today (no tiling field, no cost expression)

def test_module_entry_follows_the_ladder_on_september_objects():
    # balance: both take {256:2,128:2} (sum of squares 8 against 16, 4 cores each)
    a = cdb("a", 64, [0, 1], [CoreDivision({256: 4}), CoreDivision({256: 2, 128: 2})], residency_reason="x")
    b = cdb("b", 64, [0, 1], [CoreDivision({256: 2, 128: 2}), CoreDivision({256: 4})], residency_reason="x")
    r = Spyre.solve_core_divisions([a, b], 256)
    assert (a.chosen_division, b.chosen_division) == (1, 0) and r.contract == "september"
    assert r.stages["split_sq"] == 16 and r.stages["cores"] == 8
    assert r.last_solve_stats["status"] == "OPTIMAL" and r.last_solve_stats["objective_used"] is False
    assert r.last_solve_stats["variables"] > 0 and r.optimal
    # the cut stage: b joins a and c in one loop group (1 cut against 2)
    a = cdb("a", 64, [0, 2], [CoreDivision(tiling=SPEC)], residency_reason="barred")
    b = cdb("b", 64, [1, 2], [CoreDivision(), CoreDivision(tiling=SPEC)], residency_reason="barred")
    c = cdb("c", 64, [2, 3], [CoreDivision(tiling=SPEC)], parents=["a", "b"],
            cd_parent_matches={"a": [(0, 0)], "b": [(0, 0), (1, 0)]}, residency_reason="barred")
    r = Spyre.solve_core_divisions([a, b, c, sink("c", 3)], 1 << 20, alignment=1)
    assert b.chosen_division == 1 and r.stages["cuts"] == 1
    # parallelism before balance, and a graph output stays untiled (1 cut against 2)
    out = cdb("out", 64, [0, 1], [CoreDivision(), CoreDivision({"x": 2}, tiling=SPEC)], boundary=BufferType.Output,
              residency_reason="barred")
    c = cdb("c", 64, [1, 2], [CoreDivision(tiling=SPEC)], parents=["out"], cd_parent_matches={"out": [(0, 0), (1, 0)]},
            residency_reason="barred")
    Spyre.solve_core_divisions([out, c, sink("c", 2)], 1 << 20, alignment=1)
    assert out.chosen_division == 0


def test_module_entry_cost_expressions():
    x = cdb("reduction_out", 4096, [0, 1], [CoreDivision({"b": 1, "h": 4, "q": 2}),
                                            CoreDivision({"b": 2, "h": 4, "q": 4})], residency_reason="barred")
    cost = 32000 / x.sym_cores
    r = Spyre.solve_core_divisions([x], 1 << 20, cost_expr=cost)
    assert x.chosen_division == 1 and float(cost.xreplace(Spyre.solved_bindings([x]))) == 1000.0
    assert r.last_solve_stats["objective_used"] is True and r.stages["objective"] == 1000.0
    # a linear one that prefers HBM, on August dicts: the expression decides (contract "september")
    d = [{"name": "b0", "size": 128, "uses": [0, 2], "core_divisions": [{"output_splits": {}, "reduction_splits": {}}]}]
    r = Spyre.solve_core_divisions(d, 1 << 20, cost_expr=5 * _int_sym("is_lx_b0", nonnegative=True))
    assert d[0]["address"] is None and r.contract == "september"
    assert d[0]["residency_reason"] == "spilled by solver (no residency benefit / no room)"
    # one that cannot be lowered: warned, recorded, and the ladder decides
    b0 = cdb("b0", 128, [0, 2])
    with pytest.warns(RuntimeWarning, match="cannot linearize"):
        r = Spyre.solve_core_divisions([b0], 1 << 20, cost_expr=sympy.Function("NoSuchNode")(b0.sym_is_lx))
    assert b0.address is not None and r.last_solve_stats["objective_used"] is False
    with pytest.raises(NotImplementedError):
        Spyre.solve_core_divisions([cdb("b0", 128, [0, 2])], 1 << 20, warn_on_cost_expr=False,
                                   cost_expr=sympy.Function("NoSuchNode")(b0.sym_is_lx))
    with pytest.raises(ContractError, match="contract"):
        Spyre.solve_core_divisions([cdb("b0", 128, [0, 2])], 1 << 20, contract="september!")
    with pytest.raises(ContractError, match="August"):
        Spyre.solve_core_divisions([cdb("b0", 128, [0, 2])], 1 << 20, contract="august", cost_expr=b0.sym_is_lx)


def test_module_entry_equals_the_solver_object():
    for seed in range(6):
        bufs, capacity = random_program(random.Random(seed))
        twin, _ = random_program(random.Random(seed))
        r = Spyre.solve_core_divisions(bufs, capacity, alignment=1, set_reasons=False)
        joint(twin, capacity, 1)
        assert [(b.chosen_division, b.address) for b in bufs] == [(b.chosen_division, b.address) for b in twin]
        assert r.contract == "september" and achieved(bufs) == reference(bufs, capacity)
        assert r.lower_bound <= r.hbm_bytes == sum(len(b.uses) * b.size for b in bufs if b.address is None)


def august_dicts(bufs):
    """The same program as August dicts (output_splits / reduction_splits, no tiling)."""
    return [{"name": b.name, "size": b.size, "uses": list(b.uses), "parents": list(b.parents),
             "residency_reason": b.residency_reason,
             "cd_parent_matches": {k: [list(x) for x in v] for k, v in b.cd_parent_matches.items()},
             "core_divisions": [{"output_splits": dict(cd.output_splits), "reduction_splits": dict(cd.reduction_splits)}
                                for cd in b.core_divisions]} for b in bufs]


def test_module_entry_keeps_the_august_objective_for_august_inputs():
    """No tiling field and no cost expression: HBM bytes, as before (the August suites in
    test_spyre.py / test_spyre_contract.py pin those results); forcing September on the same
    input is the solver object's result."""
    differs = 0
    for seed in range(12):
        bufs, capacity = random_program(random.Random(seed))
        auto, august, sept = august_dicts(bufs), august_dicts(bufs), august_dicts(bufs)
        r = Spyre.solve_core_divisions(auto, capacity, alignment=1)
        g = Spyre.solve_core_divisions(august, capacity, alignment=1, contract="august")
        s = Spyre.solve_core_divisions(sept, capacity, alignment=1, contract="september")
        assert r.contract == "august" and s.contract == "september"
        assert [(b["chosen_division"], b["address"]) for b in auto] == [(b["chosen_division"], b["address"])
                                                                        for b in august]
        assert r.seed_hbm_bytes is not None and r.lower_bound <= r.hbm_bytes <= r.seed_hbm_bytes
        assert s.seed_hbm_bytes is None and s.last_solve_stats["status"] == "OPTIMAL" and r.last_solve_stats == {}
        assert r.hbm_bytes <= s.hbm_bytes  # HBM bytes is the August objective
        differs += [b["chosen_division"] for b in auto] != [b["chosen_division"] for b in sept]
    assert differs > 0  # the two contracts are told apart on these programs


# --------------------------------------------------------------------------------------------
# Relayout decisions on random programs: sources, consumers, copies per (parent, group) with
# priced candidates, consumers' cd_parent_relayouts; every buffer co-live (a resident set fits
# iff its footprints sum to at most the capacity). The exact reference enumerates every division
# and residency choice under NOTES 1.14.9's coupling.

def random_relayout_program(rng):
    menu2 = lambda: [CoreDivision({"x": 2}), CoreDivision({"y": 2})]  # noqa: E731
    bufs, terms, copies = [], [], []
    for s in range(rng.randint(1, 2)):
        S = cdb(f"S{s}", 128, [0, 1 + len(bufs)], menu2())
        bufs.append(S)
        consumers = []
        for k in range(rng.randint(1, 2)):
            C = cdb(f"C{s}{k}", 128, [0, 1 + len(bufs)], menu2(), parents=[S.name],
                    cd_parent_matches={S.name: [(0, 0)] if rng.random() < 0.8 else [(0, 0), (1, 1)]})
            bufs.append(C)
            consumers.append(C)
            terms.append(rng.randint(0, 600) * sympy.KroneckerDelta(C.sym_division, 0))
        for g in range(rng.randint(1, 2)):
            prices = [rng.choice([None, rng.randint(0, 600)]) for _ in range(2)]
            if all(p is None for p in prices):
                prices[rng.randint(0, 1)] = rng.randint(0, 600)
            cands = [RelayoutCandidate(S.name, C.name, d, 1, g, cost_ns=p) for d, p in enumerate(prices)
                     if p is not None for C in consumers if rng.random() < 0.8]
            if not cands:
                continue
            X = RelayoutCopyBuffer(f"{Spyre.RELAYOUT_PREFIX}copy:{S.name}:g{g}", 64, [1],
                                   core_divisions=[CoreDivision({"relayout_copy": 2})], relayout_parent=S.name,
                                   group=g, candidates=tuple(cands))
            for c in cands:
                next(b for b in consumers if b.name == c.consumer).cd_parent_relayouts.setdefault(S.name, []).append(c)
            bufs.append(X)
            copies.append(X)
            terms.append(RelayoutCharge(X.sym_is_lx, S.sym_division, *[p or 0 for p in prices]))
    for b in bufs:
        if not isinstance(b, RelayoutCopyBuffer):
            terms.append(rng.randint(0, 900) * (1 - b.sym_is_lx))
    return bufs, sympy.Add(*terms), rng.choice([128, 192, 256, 320, 1 << 20])


def relayout_program_reference(bufs, cost, capacity, copies_allowed=True):
    """Best value over every division and residency choice that satisfies the coupling."""
    n = len(bufs)
    idx = {b.name: i for i, b in enumerate(bufs)}
    is_copy = [isinstance(b, RelayoutCopyBuffer) for b in bufs]
    fp = [b.size // (2 if not is_copy[i] else 1) if not is_copy[i] else b.size for i, b in enumerate(bufs)]
    best = None
    for div in itertools.product(*[range(len(b.core_divisions)) for b in bufs]):
        for mask in range(1 << n):
            lx = [mask >> i & 1 for i in range(n)]
            if any(lx[i] and is_copy[i] and not copies_allowed for i in range(n)):
                continue
            if sum(f for f, x in zip(fp, lx) if x) > capacity:
                continue
            # which (consumer, parent) edges each resident copy can serve
            serve = {}
            ok = True
            for i, x in enumerate(bufs):
                if not (is_copy[i] and lx[i]):
                    continue
                src = idx[x.relayout_parent]
                edges = {(idx[c.consumer], src) for c in x.candidates
                         if c.source_division == div[src] and c.consumer_division == div[idx[c.consumer]]}
                if not lx[src] or not edges:
                    ok = False
                serve[i] = sorted(edges)
            if not ok:
                continue
            # a matching: each resident copy serves >= 1 edge, each edge through <= 1 copy
            copies = sorted(serve)
            served_sets = []
            for pick in itertools.product(*[serve[i] for i in copies]):
                if len(set(pick)) == len(pick):
                    served_sets.append(set(pick))
            if copies and not served_sets:
                continue
            all_served = set().union(*[set(serve[i]) for i in copies]) if copies else set()
            gate = True
            for j, c in enumerate(bufs):
                for p in c.parents:
                    q = idx[p]
                    if lx[q] and (div[q], div[j]) not in [tuple(t) for t in c.cd_parent_matches.get(p, [])] \
                            and (j, q) not in all_served:
                        gate = False
            if not gate:
                continue
            binding = {b.sym_is_lx: x for b, x in zip(bufs, lx)}
            for b, d in zip(bufs, div):
                binding[b.sym_division] = d
            v = float(cost.xreplace(binding))
            best = v if best is None else min(best, v)
    return best


def check_relayout_coupling(bufs):
    by = by_name(bufs)
    for b in bufs:
        for p, ch in (getattr(b, "chosen_relayouts", None) or {}).items():
            x = next(x for x in bufs if isinstance(x, RelayoutCopyBuffer) and x.address == ch.destination_address
                     and x.relayout_parent == p and ch.candidate in x.candidates)
            assert by[p].address is not None and x.address is not None
            assert (ch.candidate.source_division, ch.candidate.consumer_division) == (by[p].chosen_division,
                                                                                    b.chosen_division)
        for p in b.parents if b.address is not None or True else []:
            q = by[p]
            if q.address is not None and (q.chosen_division, b.chosen_division) not in \
                    [tuple(t) for t in b.cd_parent_matches.get(p, [])]:
                assert p in b.chosen_relayouts, (p, b.name)


@pytest.mark.parametrize("seed", range(24))
def test_relayout_programs_match_the_exact_reference(seed):
    """Exact enumeration matches the reference; the local search (what runs beyond the exact
    sizes) is never worse than the best plan without any relayout, and legal."""
    bufs, cost, cap = random_relayout_program(random.Random(seed))
    s = Spyre.LayoutSolver(bufs, cap, 1)
    s.plan_layout_and_core_divisions(cost)
    check_relayout_coupling(bufs)
    assert float(cost.xreplace(Spyre.solved_bindings(bufs))) == relayout_program_reference(bufs, cost, cap)
    bufs, cost, cap = random_relayout_program(random.Random(seed))
    s = Spyre.LayoutSolver(bufs, cap, 1, exact=False)
    s.plan_layout_and_core_divisions(cost)
    check_relayout_coupling(bufs)
    got = float(cost.xreplace(Spyre.solved_bindings(bufs)))
    assert s.last_solve_stats["status"] == "FEASIBLE"
    # the same search with every copy barred (no relayout possible) is never better
    plain, cost0, _ = random_relayout_program(random.Random(seed))
    for b in plain:
        if isinstance(b, RelayoutCopyBuffer):
            b.residency_reason = "barred"
    Spyre.LayoutSolver(plain, cap, 1, exact=False).plan_layout_and_core_divisions(cost0)
    assert all(not b.chosen_relayouts for b in plain)
    assert got <= float(cost0.xreplace(Spyre.solved_bindings(plain)))


def test_relayout_local_search_against_the_exact_optimum():
    """Measured: how often the local search (beyond the exact sizes) reaches the exact optimum on
    the random relayout programs, and that it fires relayouts (the exact optimum uses one in
    some of them). A floor, so a weaker search fails here."""
    hits = fired = 0
    for seed in range(40):
        bufs, cost, cap = random_relayout_program(random.Random(seed))
        Spyre.LayoutSolver(bufs, cap, 1, exact=False).plan_layout_and_core_divisions(cost)
        hits += float(cost.xreplace(Spyre.solved_bindings(bufs))) == relayout_program_reference(bufs, cost, cap)
        fired += any(b.chosen_relayouts for b in bufs if not isinstance(b, RelayoutCopyBuffer))
    assert hits >= 30 and fired >= 5, (hits, fired)  # measured: 32 of 40, 8 with a relayout


def test_relayout_found_beyond_the_exact_sizes():
    """relayout_case padded with 16 independent buffers (2^16 resident sets: past the exact
    enumeration): the copy is still chosen when cheaper than HBM, and not when HBM is cheaper."""
    for price, want_copy in ((100, True), (800, False)):
        bufs, cost, cap = relayout_case([price, None], w_src=500, penalty=1000)
        pad = [cdb(f"f{i}", 128, [0, 3]) for i in range(16)]
        cost = cost - sum(b.sym_is_lx for b in pad)
        s, _ = joint(bufs + pad, cap, cost_expr=cost)
        S, C, X = bufs
        assert s.last_solve_stats["status"] == "FEASIBLE"
        assert all(b.address is not None for b in pad)
        assert (X.address is not None) == want_copy and bool(C.chosen_relayouts) == want_copy
        assert float(cost.xreplace(Spyre.solved_bindings(bufs + pad))) == (100 if want_copy else 500) - 16


def test_consumers_cd_parent_relayouts_are_read():
    """The consumer's list decides which of the group's candidates serve it: a candidate the
    copy prices but the consumer does not list is never used; a listed one (of the copy's
    group, at a priced source division) is, even when the copy's own tuple lacks it."""
    bufs, cost, cap = relayout_case([100, None], w_src=500, penalty=1000)
    S, C, X = bufs
    C.cd_parent_relayouts = {"S": []}  # the consumer lists nothing: no relayout
    joint(bufs, cap, cost_expr=cost)
    assert X.address is None and C.chosen_relayouts == {} and S.address is None
    bufs, cost, cap = relayout_case([100, None], w_src=500, penalty=1000)
    S, C, X = bufs
    listed = C.cd_parent_relayouts["S"][0]
    X.candidates = (dataclasses.replace(listed, consumer_division=0),)  # the copy's own tuple differs
    joint(bufs, cap, cost_expr=cost)
    assert C.chosen_relayouts["S"].candidate is listed and X.address is not None
    bufs, cost, cap = relayout_case([100, None], w_src=500, penalty=1000)
    bufs[1].cd_parent_relayouts = {"S": [dataclasses.replace(listed, consumer="S")]}
    with pytest.raises(ContractError, match="cd_parent_relayouts"):
        joint(bufs, cap, cost_expr=cost)
