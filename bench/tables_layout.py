"""Layouts + work division speed table for docs/benchmarks.md (issue 5's 100 ms target)."""
import statistics

from run import to_ms


def tables(ctx):
    reps = max(ctx.repetitions, 3)
    rows = ctx.gbench("BM_Divide|BM_DefaultLayout|BM_DmaDescriptors", reps)
    ms = to_ms

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
