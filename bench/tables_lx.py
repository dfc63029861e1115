"""LX planning tables for docs/benchmarks.md (issue 6's targets: every co-optimization capture
planned in under 50 ms; a generated 2,000-op transformer on 32 cores in under 1 s with a bound)."""
import statistics

from run import to_ms


def tables(ctx):
    reps = max(ctx.repetitions, 3)
    rows = ctx.gbench("BM_Lx", reps)
    ms = to_ms

    out = ["## LX planning", "",
           "Co-optimization captures (`tests/data/spyre/captures/cooptimization_captures.json`): joint "
           "division + placement at the spyre capacity (1,625,344 B) and at a quarter of the seed "
           "footprint (torch-spyre's tightest test capacity). HBM bytes = sum over non-resident buffers "
           "of size x uses. Target: under 50 ms each.", "",
           "| capture | capacity | buffers | median wall (ms) | HBM bytes | seed division | lower bound | evaluations | met |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, runs in rows.items():
        if not name.startswith("BM_LxCapture"):
            continue
        wall = statistics.median(ms(x) for x in runs)
        c = runs[0]
        cap = "spyre" if name.startswith("BM_LxCapture/") else f"tot/4 = {int(c['capacity'])}"
        out.append(f"| {name.split('/')[1]} | {cap} | {int(c['buffers'])} | {wall:.2f} | {int(c['hbm_bytes'])} | "
                   f"{int(c['seed_hbm_bytes'])} | {int(c['lower_bound'])} | {int(c['evaluations'])} | "
                   f"{'yes' if wall < 50 else 'no'} |")
    out += ["", "Generated transformer (attention + MLP blocks, seq 256, hidden 512), 32 cores, every "
            "technique on, `--time-limit 0.8`. Target: under 1 s. The lower bound over every split choice "
            "counts only compulsory traffic (inputs read once, outputs written once); the per-split bound "
            "adds every value the chosen splits force to HBM.", "",
            "| ops | median wall (ms) | HBM bytes | all-HBM bytes | bound (any split) | bound (chosen splits) | "
            "co-opt moves | est. time (us) | all-HBM time (us) | met |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, runs in rows.items():
        if not name.startswith("BM_LxTransformer"):
            continue
        wall = statistics.median(ms(x) for x in runs)
        c = runs[0]
        out.append(f"| {int(c['ops'])} | {wall:.0f} | {int(c['hbm_bytes'])} | {int(c['baseline_hbm_bytes'])} | "
                   f"{int(c['lower_bound'])} | {int(c['split_lower_bound'])} | {int(c['coopt_changes'])} | "
                   f"{c['time_us']:.0f} | {c['baseline_time_us']:.0f} | {'yes' if wall < 1000 else 'no'} |")
    out.append("")
    out.append(f"Median over {reps} repetitions of Google Benchmark (bench/lx_bench.cpp).")
    return "\n".join(out)
