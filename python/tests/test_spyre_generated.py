"""Property test of the September contract on generated inputs (bench/gen_spyre.py: torch-spyre's
dataclasses, tilings, lx_view, relayout candidates, cost expressions), sized by a time budget:
every plan passes the independent check written here; on inputs both contracts apply to (untiled,
no cost expression) the September plan's ladder objective is never worse than the August path's
plan's, evaluated here; the same input gives the same plan."""
import math
import os
import sys
import time

import pytest

import scratchplan as sp

pytest.importorskip("sympy")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import gen_spyre as G  # noqa: E402

BUDGET_S = 2.5


def lifetime(b):
    s, e = b.uses[0], b.uses[-1] + 1
    if b.lifetime_start_override is not None:
        s = min(s, b.lifetime_start_override)
    if b.lifetime_end_override:
        e = max(e, b.lifetime_end_override)
    return s, e


def footprint(b):
    cd = b.core_divisions[b.chosen_division]
    return -(-b.size // (cd.output_partition * cd.tiling.output_tile_count))


def check(bufs, capacity, alignment, barred):
    """NOTES 1.14: int division in range; barred never placed; aligned and inside the capacity;
    co-live residents disjoint; the gate (a listed pair or a chosen relayout); a chosen relayout
    reads through a resident copy of its resident parent under the candidate's divisions."""
    by = {b.name: b for b in bufs}
    placed = []
    for b in bufs:
        assert type(b.chosen_division) is int and 0 <= b.chosen_division < len(b.core_divisions), b.name
        if b.address is None:
            continue
        assert b.name not in barred, b.name
        assert b.address % alignment == 0 and 0 <= b.address and b.address + footprint(b) <= capacity, b.name
        placed.append(b)
    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            (s1, e1), (s2, e2) = lifetime(a), lifetime(b)
            if s1 < e2 and s2 < e1:
                assert a.address + footprint(a) <= b.address or b.address + footprint(b) <= a.address, (a.name, b.name)
    for c in bufs:
        for p in c.parents:
            q = by[p]
            if q.address is None:
                continue
            if (q.chosen_division, c.chosen_division) not in [tuple(x) for x in c.cd_parent_matches.get(p, [])]:
                assert p in c.chosen_relayouts, (p, c.name)
        for p, ch in c.chosen_relayouts.items():
            x = next(x for x in bufs if isinstance(x, G.RelayoutCopyBuffer) and x.relayout_parent == p
                     and x.address == ch.destination_address)
            assert by[p].address is not None and x.address is not None
            assert (ch.candidate.source_division, ch.candidate.consumer_division) == (by[p].chosen_division,
                                                                                    c.chosen_division)


def ladder_key(bufs, alignment):
    """Stages 1, 3, 4, 5 of NOTES 1.14.4 (no tilings: no cuts), evaluated here."""
    spill = 0
    for b in bufs:
        if b.address is None:
            reads = len(b.uses) - (0 if b.first_use_is_read else 1)
            k = reads - (1 if b.first_use_is_read else 0) + (1 if b.boundary == G.BufferType.Intermediate else 0)
            spill += max(k, 0) * -(-b.size // alignment)
    cds = [b.core_divisions[b.chosen_division] for b in bufs]
    return (spill, -sum(cd.cores_used for cd in cds), sum(v * v for cd in cds for v in cd.splits.values()),
            sum(cd.tiling.tile_count for cd in cds))


def plan(bufs, capacity, alignment, cost):
    s = sp.spyre.LayoutSolver(bufs, capacity, alignment, time_limit=1.0)
    try:
        s.plan_layout_and_core_divisions(cost)
    except sp.spyre.SolveError:
        return None
    return s


def test_generated_september_inputs():
    end, draws, compared, worse, statuses = time.monotonic() + BUDGET_S, 0, 0, [], set()
    seed = 0
    while time.monotonic() < end or draws < 3 * len(G.MODES):
        mode = G.MODES[draws % len(G.MODES)]
        n = [4, 6, 10, 16, 24][seed % 5]
        bufs, cap, al, cost = G.generate(seed, n, mode)
        barred = {b.name for b in bufs if b.residency_reason}
        s = plan(bufs, cap, al, cost)
        if s is not None:
            statuses.add(s.last_solve_stats["status"])
            check(bufs, cap, al, barred)
            assert all(b.lx_view == ("view", i) for i, b in enumerate(bufs) if not isinstance(b, G.RelayoutCopyBuffer))
            twin = G.generate(seed, n, mode)[0]
            plan(twin, cap, al, cost)
            assert [(b.chosen_division, b.address) for b in bufs] == [(b.chosen_division, b.address) for b in twin]
            if mode == "august":
                august = G.generate(seed, n, mode)[0]
                sp.spyre.solve_core_divisions(august, cap, alignment=al, time_limit=0.5, contract="august",
                                              set_reasons=False)
                check(august, cap, al, barred)
                compared += 1
                if ladder_key(bufs, al) > ladder_key(august, al):
                    worse.append((seed, n, ladder_key(bufs, al), ladder_key(august, al)))
        draws += 1
        seed += 1
    assert not worse, worse
    assert compared >= 3 and statuses == {"OPTIMAL", "FEASIBLE"}  # exact and local search both drawn
