"""MLSys evaluator speed table for docs/benchmarks.md."""
import statistics

from run import to_ms


def tables(ctx):
    reps = ctx.repetitions
    rows = ctx.gbench("BM_Evaluate_", max(reps, 3))
    out = ["## MLSys 2026 evaluator speed", "",
           "Target (issue 2): evaluating a 100-subgraph schedule of mlsys-2026-17 in under 5 ms.", "",
           "| case | subgraphs | steps | valid | median time (ms) | target | met |",
           "|---|---:|---:|---|---:|---:|---|"]
    for name, runs in rows.items():
        ms = statistics.median(to_ms(x) for x in runs)
        c = runs[0]
        out.append(f"| {name} | {int(c['subgraphs'])} | {int(c['steps'])} | {'yes' if c['valid'] else 'no'} | "
                   f"{ms:.3f} | 5 | {'yes' if ms < 5 else 'no'} |")
    out.append("")
    out.append(f"Median over {max(reps, 3)} repetitions of Google Benchmark `BM_Evaluate_*` (bench/mlsys_bench.cpp).")
    return "\n".join(out)
