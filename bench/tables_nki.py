"""NKI checker/planner tables for docs/benchmarks.md: speed on generated kernels (issue 7's
100 ms target) and the simulated effect of planning on the bundled examples."""
import json
import os
import statistics

from run import to_ms


_ms = to_ms


def tables(ctx):
    reps = max(ctx.repetitions, 3)
    rows = ctx.gbench("BM_Nki", reps)
    out = ["## NKI allocation: checker and planner speed", "",
           "Target (issue 7): a generated kernel of 50 tensors and 10 loops checked and planned in under 100 ms.", "",
           "| case | tensors | loops | max trip | executions | median time (ms) | plan speedup | target | met |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, runs in rows.items():
        c = runs[0]
        ms = statistics.median(_ms(x) for x in runs)
        target = name.startswith("BM_NkiCheckAndPlan/50/10/")
        speed = f"{c['speedup']:.3f}x" if "speedup" in c else ""
        out.append(f"| {name} | {int(c['tensors'])} | {int(c['loops'])} | {int(c['max_trip'])} | "
                   f"{int(c['executions'])} | {ms:.3f} | {speed} | {'100' if target else ''} | "
                   f"{('yes' if ms < 100 else 'no') if target else ''} |")
    out += ["", f"Median over {reps} repetitions of Google Benchmark `BM_Nki*` (bench/nki_bench.cpp). "
            "CheckAndPlan checks the planned kernel with `nki check`'s checker, then plans the kernel from scratch.", ""]

    out += ["## NKI allocation: planned vs all-single-buffered (simulated cycles)", "",
            "| example | single-buffered | planned | speedup | input's own allocation | tiles per tensor | nki check of the input |",
            "|---|---:|---:|---:|---:|---|---|"]
    ex = os.path.join(ctx.root, "examples", "nki")
    for f in sorted(os.listdir(ex)):
        if f.startswith("hardware") or not f.endswith(".json"):
            continue
        path = os.path.join(ex, f)
        p = ctx.run([ctx.cli, "nki", "plan", "--json", path])
        c = ctx.run([ctx.cli, "nki", "check", "--json", path])
        check = json.loads(c.stdout) if c.returncode in (0, 2) and c.stdout else None
        verdict = "clean" if check and check["clean"] else (f"{check['distinct_violations']} violations" if check else "error")
        if p.returncode != 0:
            out.append(f"| {f} | | | | | {p.stderr.strip()} | {verdict} |")
            continue
        j = json.loads(p.stdout)
        tiles = ", ".join(f"{t['tensor']}={t['tiles']}" for t in j["tensors"])
        own = j["input_allocation_cycles"]
        own = "" if own is None else str(own)
        out.append(f"| {f} | {j['single_buffered_cycles']} | {j['simulated_cycles']} | {j['speedup']:.3f}x | {own} | "
                   f"{tiles} | {verdict} |")
    out += ["", "From `scratchplan nki plan --json` and `nki check --json` on examples/nki (deterministic; "
            "the planner ignores the input's own allocations)."]
    return "\n".join(out)
