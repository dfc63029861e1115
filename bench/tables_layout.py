"""Layouts + work division speed table for docs/benchmarks.md (issue 5's 100 ms target)."""
import json
import statistics


def tables(ctx):
    reps = max(ctx.repetitions, 3)
    r = ctx.run([ctx.bench, "--benchmark_filter=BM_Divide|BM_DefaultLayout|BM_DmaDescriptors",
                 "--benchmark_format=json", f"--benchmark_repetitions={reps}",
                 "--benchmark_report_aggregates_only=false"])
    data = json.loads(r.stdout)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        rows.setdefault(b["run_name"], []).append(b)

    def ms(b, key):
        scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        return b[key] * scale

    out = ["## Layouts and work division speed", "",
           "Target (issue 5): device layouts of every tensor plus work division (both passes and the "
           "independent checker) of a generated 10,000-op program in under 100 ms.", "",
           "| case | ops | tensors | menu entries | median wall (ms) | median CPU (ms) | target (ms) | met |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, runs in rows.items():
        if not name.startswith("BM_Divide"):
            continue
        wall = statistics.median(ms(x, "real_time") for x in runs)
        cpu = statistics.median(ms(x, "cpu_time") for x in runs)
        c = runs[0]
        out.append(f"| {name} | {int(c['ops'])} | {int(c['tensors'])} | {int(c['menu_entries'])} | "
                   f"{wall:.1f} | {cpu:.1f} | 100 | {'yes' if wall < 100 else 'no'} |")
    out += ["", "| micro-benchmark | median (ns) |", "|---|---:|"]
    for name, runs in rows.items():
        if name.startswith("BM_Divide"):
            continue
        ns = statistics.median(ms(x, "real_time") for x in runs) * 1e6
        out.append(f"| {name} ([5, 100, 150] fp16) | {ns:.0f} |")
    out.append("")
    out.append(f"Median over {reps} repetitions of Google Benchmark (bench/layout_bench.cpp). "
               "`BM_Divide_Synthetic` builds no candidate menus; `BM_DivideWithMenus_Synthetic` also "
               "enumerates every op's menu (as `divide --json` does).")
    return "\n".join(out)
