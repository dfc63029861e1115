"""torch-spyre September drop-in table for docs/benchmarks.md (issue 54): solve times of
``scratchplan.spyre.LayoutSolver.plan_layout_and_core_divisions`` on generated September inputs
(bench/gen_spyre.py) of growing size, per mode, with the status (exact or local search) and the
August path (``solve_core_divisions(contract="august")``) on the untiled inputs both apply to.
Runs the release build's package (build/release/python) in this interpreter."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_spyre as G  # noqa: E402

SIZES = (8, 16, 32, 64, 128, 256)
SEEDS = (1, 2, 3)
LIMIT_S = 10.0


def _sp(ctx):
    sys.path.insert(0, os.path.join(ctx.build, "python"))
    import scratchplan
    return scratchplan


def _stage1(bufs, alignment):
    total = 0
    for b in bufs:
        if b.address is None:
            reads = len(b.uses) - (0 if b.first_use_is_read else 1)
            k = reads - (1 if b.first_use_is_read else 0) + (1 if b.boundary == G.BufferType.Intermediate else 0)
            total += max(k, 0) * -(-b.size // alignment)
    return total


def tables(ctx):
    sp = _sp(ctx)
    sizes = SIZES[:4] if ctx.quick else SIZES
    out = ["## torch-spyre September drop-in: solve time on generated inputs", "",
           "`LayoutSolver(buffers, capacity, alignment, time_limit=10).plan_layout_and_core_divisions(cost)` on "
           "inputs from `bench/gen_spyre.py` (torch-spyre's dataclasses; lifetimes of 1-7 ticks, menus of 1-3 "
           "candidates, parents among the 4 previous buffers, an `lx_view` on each): `august` untiled without a "
           "cost expression (the inputs both contracts apply to), `tiled` with coarse tilings (the cut stage), "
           "`cost` with a cost expression and relayout copies. Median wall time of the call over seeds "
           f"{', '.join(map(str, SEEDS))}; status counts (OPTIMAL: every choice enumerated and every placement "
           "proven; FEASIBLE: local search). For `august`, the stage-1 spill cost (alignment units) of the "
           "September plan against the August path's plan (`solve_core_divisions(contract=\"august\")`, HBM "
           "bytes), summed over the seeds: never higher (the August plan is a candidate of the local search).", "",
           "| mode | buffers | median s | max s | OPTIMAL / FEASIBLE | stage 1: September / August |",
           "|---|---:|---:|---:|---:|---:|"]
    for mode in G.MODES:
        for n in sizes:
            times, statuses, s1, a1 = [], [], 0, 0
            for seed in SEEDS:
                bufs, cap, al, cost = G.generate(seed, n, mode)
                solver = sp.spyre.LayoutSolver(bufs, cap, al, time_limit=LIMIT_S)
                t = time.perf_counter()
                try:
                    solver.plan_layout_and_core_divisions(cost)
                except sp.spyre.SolveError:
                    statuses.append("INFEASIBLE")
                    continue
                times.append(time.perf_counter() - t)
                statuses.append(solver.last_solve_stats["status"])
                if mode == "august":
                    aug = G.generate(seed, n, mode)[0]
                    sp.spyre.solve_core_divisions(aug, cap, alignment=al, time_limit=LIMIT_S, contract="august")
                    s1 += _stage1(bufs, al)
                    a1 += _stage1(aug, al)
            nb = len(G.generate(SEEDS[0], n, mode)[0])
            st = f"{statuses.count('OPTIMAL')} / {statuses.count('FEASIBLE')}"
            if statuses.count("INFEASIBLE"):
                st += f" (+{statuses.count('INFEASIBLE')} infeasible)"
            cmp = f"{s1:,} / {a1:,}" if mode == "august" else "-"
            med = f"{statistics.median(times):.3f}" if times else "-"
            mx = f"{max(times):.3f}" if times else "-"
            out.append(f"| {mode} | {nb} | {med} | {mx} | {st} | {cmp} |")
    out += ["", "Buffers: the generated count (`cost` adds the relayout copies). Exact enumeration covers up to "
            "4,096 division assignments (ladder) or 32,768 (assignment, resident set) pairs (cost expression); "
            "beyond, the local search (docs/python.md, `LayoutSolver`). Infeasible: the local search (from the "
            "seed and from the first untiled candidates, moving only between assignments the tiled pair tables "
            "allow) found no assignment they allow (SolveError; whether one exists at that size is not known: the "
            "generated pair tables are random and some tiled-only neighbours list no pair). The largest `cost` "
            "row stops at its 10 s limit (the whole call, the lowering of the expression included; single changes, swaps and copy moves, each valued by the whole "
            "expression)."]
    return "\n".join(out)
