"""MLSys 2026 scheduler quality table for docs/benchmarks.md (issue 3).

Runs `scratchplan schedule` on the five public benchmarks with the contest time limits (opk
model, default rules, all cores), takes the median of ctx.repetitions runs, checks every
written schedule with `scratchplan evaluate --check-reported`, and compares with the reference
columns stored in tests/data/mlsys2026/reference_results.json (tests/data/PROVENANCE.md).
"""
import json
import math
import os
import re
import statistics
import tempfile

TIME_LIMITS = {"mlsys-2026-1": 2, "mlsys-2026-5": 5, "mlsys-2026-9": 15, "mlsys-2026-13": 30, "mlsys-2026-17": 60}
EXAMPLES = ["ex1_problem", "ex2_problem", "ex3_problem", "ex4_problem", "ex5_problem"]
FINAL_RE = re.compile(r"final total ([0-9.]+) \(lower bound ([0-9.]+), gap [-0-9.]+%\); first valid ([0-9.]+) s, final ([0-9.]+) s")


def reference_data(ctx):
    with open(os.path.join(ctx.data, "mlsys2026", "reference_results.json")) as f:
        return json.load(f)


def reference_rows(ctx):
    """Benchmark -> (winner, best public, inferred organizer best)."""
    return {name: (r["track_a_winner"], r["best_public"], r["inferred_organizer_best"])
            for name, r in reference_data(ctx)["benchmarks"].items()}


def best_public_examples(ctx):
    """Example number -> best public latency."""
    return {int(k): float(v) for k, v in reference_data(ctx)["examples_best_public"].items()}


def run_checked(ctx, problem, extra, final_re, fields):
    """Runs `scratchplan schedule --verbose`, reads final_re's groups from stderr as `fields`
    ((name, type) in group order) and re-checks the written schedule with `evaluate
    --check-reported` ("valid"). None if the run failed."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.json")
        r = ctx.run([ctx.cli, "schedule", problem, "-o", out, "--verbose"] + extra)
        m = final_re.search(r.stderr)
        if r.returncode != 0 or not m:
            return None
        check = ctx.run([ctx.cli, "evaluate", problem, out, "--check-reported", "--json"] +
                        (["--mm-compute", "native"] if "native" in extra else []))
        res = {name: kind(m.group(i + 1)) for i, (name, kind) in enumerate(fields)}
        res["valid"] = check.returncode == 0 and json.loads(check.stdout)["valid"]
        return res


def schedule_once(ctx, problem, extra):
    return run_checked(ctx, problem, extra, FINAL_RE, [("total", float), ("lb", float), ("first", float), ("final", float)])


def fmt(x):
    return f"{x:,.1f}"


def tables(ctx):
    refs = reference_rows(ctx)
    bench_dir = os.path.join(ctx.data, "mlsys2026", "benchmarks")
    out = ["## MLSys 2026 scheduler", "",
           "Targets (issue 3): valid everywhere; at or below the inferred organizer best on every public "
           "benchmark; geometric mean at least 10% below the Track A winner; contest time limits "
           "(1: 2 s, 5: 5 s, 9: 15 s, 13: 30 s, 17: 60 s), opk model, default rules, all cores.", "",
           "The organizer best is inferred from published points rounded to 0.01 (points = organizer best / "
           "winner latency), so the column is known only to ±0.005 points (about ±0.6%). The points "
           "columns compare at that resolution: `ours ≤ organizer` says `tie` when our latency is above "
           "the column's midpoint but would have been awarded the same rounded points, and `optimal` when "
           "our plan meets our lower bound and the column lies below that bound (no valid schedule "
           "reaches the column under these rules; see docs/scheduler.md, Lower bounds).", "",
           "| benchmark | ours (median) | Track A winner | inferred organizer best | ours / winner | organizer points | "
           "ours ≤ organizer | vs winner | lower bound | gap to bound | first valid (s) | final (s) | valid runs |",
           "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    ratios = []
    natives = []
    for name, limit in TIME_LIMITS.items():
        problem = os.path.join(bench_dir, name + ".json")
        runs = [schedule_once(ctx, problem, ["--time-limit", str(limit)]) for _ in range(ctx.repetitions)]
        ok = [r for r in runs if r and r["valid"]]
        winner, _, organizer = refs.get(name, (math.nan, math.nan, math.nan))
        if not ok:
            out.append(f"| {name} | no valid run | {fmt(winner)} | {fmt(organizer)} | | | no | | | | | | 0/{len(runs)} |")
            continue
        total = statistics.median(r["total"] for r in ok)
        lb = ok[0]["lb"]
        ratios.append(total / winner)
        points = organizer / winner
        if total <= organizer:
            verdict = "yes"
        elif lb >= organizer:
            verdict = ("optimal; " if total <= lb * (1 + 1e-9) else "") + "column below our lower bound"
        elif round(total / winner, 2) <= round(points, 2):
            verdict = "tie"
        else:
            verdict = "no"
        out.append(f"| {name} | {fmt(total)} | {fmt(winner)} | {fmt(organizer)} | {total / winner:.4f} | {points:.2f} | {verdict} | "
                   f"{100 * (total / winner - 1):+.1f}% | {fmt(lb)} | {100 * (total / lb - 1):.1f}% | "
                   f"{statistics.median(r['first'] for r in ok):.3f} | {statistics.median(r['final'] for r in ok):.2f} | "
                   f"{len(ok)}/{len(runs)} |")
        nat = schedule_once(ctx, problem, ["--time-limit", str(limit), "--mm-compute", "native"])
        natives.append((name, nat))
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        out += ["", f"Geometric mean of ours / winner over {len(ratios)} benchmarks: **{g:.3f}** "
                f"({100 * (1 - g):.1f}% below the winner; target ≥ 10%)."]
    out += ["", "Under `--mm-compute native` (one run each, same limits; RULES.md lists no native reference "
            "numbers, so only validity and our latency are shown):", "",
            "| benchmark | ours, native | valid | lower bound (native) |", "|---|---:|---|---:|"]
    for name, nat in natives:
        if nat:
            out.append(f"| {name} | {fmt(nat['total'])} | {'yes' if nat['valid'] else 'no'} | {fmt(nat['lb'])} |")
        else:
            out.append(f"| {name} | no valid run | no | |")
    best = best_public_examples(ctx)
    out += ["", "PROBLEM.md worked examples (`--iterations 200 --threads 1`):", "",
            "| example | ours | best public (RULES.md) | lower bound | valid |", "|---|---:|---:|---:|---|"]
    for ex in EXAMPLES:
        problem = os.path.join(ctx.data, "mlsys2026", "examples", ex + ".json")
        r = schedule_once(ctx, problem, ["--iterations", "200", "--threads", "1"])
        n = int(ex[2])
        ref = best.get(n)
        out.append(f"| Example {n} | {fmt(r['total']) if r else 'failed'} | {fmt(ref) if ref else '–'} | "
                   f"{fmt(r['lb']) if r else ''} | {'yes' if r and r['valid'] else 'no'} |")
    out += ["", f"Median of {ctx.repetitions} runs per benchmark; every written schedule re-checked with "
            "`scratchplan evaluate --check-reported`. Times are wall-clock on a shared machine."]
    return "\n".join(out)
