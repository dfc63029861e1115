"""MLSys evaluator speed table for docs/benchmarks.md."""
import json
import statistics


def tables(ctx):
    reps = ctx.repetitions
    r = ctx.run([ctx.bench, "--benchmark_filter=BM_Evaluate_", "--benchmark_format=json",
                 f"--benchmark_repetitions={max(reps, 3)}", "--benchmark_report_aggregates_only=false"])
    data = json.loads(r.stdout)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        rows.setdefault(b["run_name"], []).append(b)
    out = ["## MLSys 2026 evaluator speed", "",
           "Target (issue 2): evaluating a 100-subgraph schedule of mlsys-2026-17 in under 5 ms.", "",
           "| case | subgraphs | steps | valid | median time (ms) | target | met |",
           "|---|---:|---:|---|---:|---:|---|"]
    for name, runs in rows.items():
        ms = statistics.median(x["real_time"] for x in runs)
        unit = runs[0]["time_unit"]
        if unit == "us":
            ms /= 1000.0
        elif unit == "ns":
            ms /= 1e6
        c = runs[0]
        out.append(f"| {name} | {int(c['subgraphs'])} | {int(c['steps'])} | {'yes' if c['valid'] else 'no'} | "
                   f"{ms:.3f} | 5 | {'yes' if ms < 5 else 'no'} |")
    out.append("")
    out.append(f"Median over {max(reps, 3)} repetitions of Google Benchmark `BM_Evaluate_*` (bench/mlsys_bench.cpp).")
    return "\n".join(out)
