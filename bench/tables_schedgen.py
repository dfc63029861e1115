"""MLSys 2026 scheduler on generated graphs of the contest's families (issue 15, section 2).

Graphs come from bench/gen_mlsys.py (families small_mm, mm15_pw5, mlp_chain, mixed; seeds fixed here), so
what the scheduler is measured on was never tuned on. No public schedule exists for them; the
references are (a) every op alone with its best granularity (`--max-segment-ops 1
--iterations 0`, what a scheduler without fusion or retention gets) and (b) the best of our own searches: the
contest-limit run, a longer run (4x the budget for small graphs, 2x for large), and a run with another seed at the limit (the best schedule known
for the graph). Each written schedule is re-checked
with `scratchplan evaluate --check-reported`. Annealing speed (moves/s, 2 threads) is reported
because the search on small-capacity MatMul-heavy graphs used to be simulation-bound.
"""
import json
import math
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import gen_mlsys  # noqa: E402
from tables_sched import fmt, run_checked  # noqa: E402

# family -> (seeds, contest-like time limit in s, long budget in s)
PLAN = {"small_mm": (range(8), 5, 20), "mm15_pw5": (range(6), 5, 20), "mlp_chain": (range(2), 15, 30),
        "mixed": (range(2), 30, 60)}
OTHER_SEED = 7  # the extra run of the best-known reference
FINAL_RE = re.compile(r"final total ([0-9.]+) \(lower bound ([0-9.]+),.*?; (\d+) moves, (\d+) subgraph simulations; ([0-9.]+) moves/s")


def run_once(ctx, problem, extra):
    return run_checked(ctx, problem, extra, FINAL_RE, [("total", float), ("lb", float), ("moves", int), ("sims", int), ("mps", float)])


def tables(ctx):
    out = ["## MLSys 2026 scheduler on generated graphs", "",
           "Graphs of the contest's families from `bench/gen_mlsys.py` (issue 15 §2): `small_mm` ≈ 20 ops, "
           "≥ 70% MatMuls, ≈ 30 tensors, fast memory 20k-30k (the shape of mlsys-2026-5 and of the graph the "
           "issue reports); `mm15_pw5` exactly that graph's shape (20 ops: 15 MatMuls and 5 pointwise over 30 "
           "tensors, fast memory 25,000, mostly one-tile tensors); `mlp_chain` residual MLP chains like mlsys-2026-9; `mixed` attention + MLP blocks like "
           "-13/-17. Ours at a contest-like limit (5 s / 15 s / 30 s by size, all cores) against every op alone "
           "and against the best of our own searches (best known: the contest-limit run, a longer one (4x for small graphs, 2x for large), and another "
           "seed at the limit; no public schedules exist for these graphs). `bound` is the proven lower bound "
           "(docs/scheduler.md \"Lower bounds\") and `gap` how far ours @ limit is above it (issue 42 §3: at most 10%).", "",
           "| graph | ops (MatMul) | capacity | ours @ limit | every op alone | ours / alone | best known | "
           "ours / best known | bound | gap | moves/s | simulations | valid |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    ratios_alone, ratios_long, gaps = [], [], []
    with tempfile.TemporaryDirectory() as d:
        for fam, (seeds, limit, long_limit) in PLAN.items():
            for seed in seeds:
                prob = gen_mlsys.generate(fam, seed)
                path = os.path.join(d, f"{fam}_{seed}.json")
                with open(path, "w") as f:
                    json.dump(prob, f)
                ours = run_once(ctx, path, ["--time-limit", str(limit)])
                alone = run_once(ctx, path, ["--max-segment-ops", "1", "--iterations", "0", "--threads", "1"])
                long = run_once(ctx, path, ["--time-limit", str(long_limit)])
                other = run_once(ctx, path, ["--time-limit", str(limit), "--seed", str(OTHER_SEED)])
                n_ops = len(prob["op_types"])
                n_mm = prob["op_types"].count("MatMul")
                name = f"{fam}/{seed}"
                if not ours:
                    out.append(f"| {name} | {n_ops} ({n_mm}) | {prob['fast_memory_capacity']:,} | failed | | | | | | | | | no |")
                    continue
                best = min([ours["total"]] + [r["total"] for r in (long, other) if r and r["valid"]])
                ratios_long.append(ours["total"] / best)
                gaps.append((name, ours["total"] / ours["lb"] - 1))
                if alone:
                    ratios_alone.append(ours["total"] / alone["total"])
                valid = ours["valid"] and all(r["valid"] for r in (alone, long, other) if r)
                alone_cols = (f"{fmt(alone['total'])} | {ours['total'] / alone['total']:.3f}" if alone else "failed | ")
                out.append(f"| {name} | {n_ops} ({n_mm}) | {prob['fast_memory_capacity']:,} | {fmt(ours['total'])} | "
                           f"{alone_cols} | {fmt(best)} | {ours['total'] / best:.4f} | {fmt(ours['lb'])} | "
                           f"{100 * (ours['total'] / ours['lb'] - 1):.1f}% | {ours['mps']:,.0f} | "
                           f"{ours['sims']:,} | {'yes' if valid else 'no'} |")
    if ratios_long:
        g_long = math.exp(sum(map(math.log, ratios_long)) / len(ratios_long))
        g_alone = math.exp(sum(map(math.log, ratios_alone)) / len(ratios_alone)) if ratios_alone else math.nan
        out += ["", f"Geometric means: ours / every op alone **{g_alone:.3f}**; ours / best known **{g_long:.4f}** "
                f"(1.0000 = the contest-limit run already finds the best schedule we know)."]
        over = [f"{n} ({100 * g:.1f}%)" for n, g in gaps if g > 0.10]
        out += ["", f"Gap to the bound at most 10%: {len(gaps) - len(over)} of {len(gaps)} graphs" +
                (f"; above: {', '.join(over)}." if over else ".")]
    out += ["", "One run per graph and budget (`--quick` or not); wall-clock limits on a shared machine."]
    return "\n".join(out)
