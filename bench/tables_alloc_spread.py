"""Issue 42 section 1 for docs/benchmarks.md: the spread of the default `alloc --minimize` search
over run seeds, on generated SOMAS dumps of language models with repeated layers (`layers`:
thousands of buffers of near-equal size crossing the peak, where greedy-by-size ends more than
3 % above the max-load bound). Each instance is run with `--seed` 1 to 8, one run after another;
the table says how many runs miss 0.1 % of the bound, the median and worst final gap and time to
reach 0.1 % (the CLI's "within 0.1 % of the lower bound at" line)."""
import statistics

from tables_alloc import generated, run_alloc, timed_alloc

LIMIT = 10
SEEDS = range(1, 9)
TARGET = 0.1  # per cent above the max-load bound
TARGET_MEDIAN_S = 5.0
# (family, buffers, instance seed): the 18.7k-buffer size (seeds 1-3), 12k seed 5 (the
# first instance found where runs end at one identical height above 0.1 %), 50k and 100k.
INSTANCES = (("layers", 12000, 5), ("layers", 18692, 1), ("layers", 18692, 2), ("layers", 18692, 3),
             ("layers", 50000, 1), ("layers", 100000, 1))


def within_at(text):
    for line in text.splitlines():
        if line.startswith("within 0.1 % of the lower bound at: "):
            return float(line.split(": ", 1)[1].split()[0])
    return None


def row(ctx, family, n, inst_seed):
    path = generated(ctx, family, n, inst_seed)
    g = run_alloc(ctx, [path, "--minimize", "--solver", "greedy-by-size", "--time-limit", "120"])
    runs = [timed_alloc(ctx, [path, "--minimize", "--time-limit", str(LIMIT), "--seed", str(s)]) for s in SEEDS]
    if g["height"] is None or any(r["height"] is None for r in runs):
        return f"| {family} | {n} | {inst_seed} | failed (exit {[r['code'] for r in runs]}) |||||||||", False
    lb = g["lb"]
    gap = lambda h: 100.0 * (h - lb) / lb
    gaps = [gap(r["height"]) for r in runs]
    hits = [r["proven"] or gap(r["height"]) <= TARGET for r in runs]
    times = [within_at(r["text"]) if hit else None for r, hit in zip(runs, hits)]
    # A missed run counts as never reaching the target: the median is over all runs.
    ordered = sorted(t if t is not None else float("inf") for t in times)
    med_t = statistics.median(ordered)
    worst_t = ordered[-1]
    fmt_t = lambda t: "never" if t == float("inf") else f"{t:.2f}"
    misses = sum(not h for h in hits)
    proven = sum(r["proven"] for r in runs)
    wall = max(r["wall"] for r in runs)
    met = misses == 0 and med_t <= TARGET_MEDIAN_S and wall <= 1.1 * LIMIT
    return (f"| {family} | {n} | {inst_seed} | {gap(g['height']):.3f} % | {misses}/{len(runs)} | "
            f"{statistics.median(gaps):.3f} % | {max(gaps):.3f} % | {fmt_t(med_t)} | {fmt_t(worst_t)} | "
            f"{proven}/{len(runs)} | {wall:.2f} | {'yes' if met else 'no'} |"), met


def header():
    return ["## Buffer allocation: spread over seeds on SOMAS LLM dumps with near-equal sizes", "",
            f"Issue 42 section 1. `scratchplan_alloc_gen layers N SEED` (`generate_somas_layers`, docs/log/alloc-bounds-log.md: a "
            f"training step of a transformer with activation recompute; per op a tensor of one of four shapes, each "
            f"jittered by up to 2 %, so thousands of near-equal buffers cross the load's peaks, one per layer's "
            f"backward). Each instance: `alloc X.csv --minimize --time-limit {LIMIT}` with `--seed` {SEEDS[0]} to "
            f"{SEEDS[-1]}, one run after another on two threads (the default), and `--solver greedy-by-size` once. "
            f"`miss` counts runs that end more than {TARGET} % above the max-load bound and unproven; times to target "
            f"are the solver's seconds at its first plan within {TARGET} % (the CLI's `within 0.1 % of the lower "
            f"bound at` line; a missed run counts as never, so the median is over all eight runs); `wall s` is the "
            f"slowest whole process. Target: no run misses, median time to target at most {TARGET_MEDIAN_S:g} s, "
            f"every run within the limit. The sweep is {len(INSTANCES)} instances x {len(SEEDS)} runs of at most "
            f"{LIMIT} s, at most {len(INSTANCES) * len(SEEDS) * LIMIT // 60} minutes of machine time.",
            "",
            "Before the compaction schedule of issue 42 (one compaction at 85 % of the budget; docs/log/alloc-solver-log.md, "
            "\"Compaction when it pays\"), measured with the same generator and the previous build: `layers` "
            "18,692 seed 2 ended within 0.1 % in all eight runs (0.006-0.085 %) but first got there at 9.3-9.8 s "
            "in seven of them (3.9 s in one; median 9.7 s, read from the progress lines); 50k seed 1 within 0.1 % "
            "in all eight (two proven), first at 2.5-9.6 s (median 3.6 s); 30k seed 3 and 18,692 seed 6 proven "
            "in all eight runs within 3.4 s; 12k seed 5 0.1036 % in one run. Those runs shared the two cores "
            "with other builds (load average 8-14).", "",
            "Before odd workers swept the problem backwards in time (docs/log/alloc-solver-log.md, \"Both time directions\"), "
            "the same sweep with the previous build (median / worst seconds to 0.1 %): 12,000 seed 5 missed in 6 of "
            "8 runs (median 0.104 % above, worst 0.191 %); 18,692 seeds 1, 2, 3 0.20 / 0.32, 2.15 / 5.91 and "
            "0.20 / 0.80 s; 50k 1.19 / 1.99 s; 100k 2.44 / 4.61 s.", "",
            "Before larger-first rounds and compaction rounds (docs/log/alloc-solver-log.md, \"Larger first and compaction rounds\"), "
            "the same sweep with the previous build: 12,000 seed 5 missed in 2 of 8 runs, median 8.12 s to 0.1 % "
            "(0.059 % above at the median); 18,692 seeds 1, 2, 3 0.06 / 0.13, 0.11 / 0.18 and 0.10 / 0.14 s; 50k "
            "0.35 / 0.68 s; 100k 1.05 / 1.46 s (median 0.032 %, worst 0.055 % above). By hand with the new build, "
            "12,000 seed 5 at `--seed` 1-24, one run after another: 2 of 24 missed, and the same seeds "
            "with the previous build, 1-16: 5 of 16.", ""]


def tables(ctx):
    out = header() + [
           "| family | buffers | instance seed | greedy-by-size above LB | miss | median above LB | worst above LB | "
           "median s to 0.1 % | worst s to 0.1 % | proven | wall s | met |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    missed = []
    for family, n, inst_seed in INSTANCES:
        line, met = row(ctx, family, n, inst_seed)
        out.append(line)
        if not met:
            missed.append(f"{family} {n} seed {inst_seed}")
    verdict = (f"met on all {len(INSTANCES)} rows" if not missed else
               f"met on {len(INSTANCES) - len(missed)} of {len(INSTANCES)} rows; not met on " + ", ".join(missed))
    out += ["", f"Target {verdict}.", ""]
    return "\n".join(out)
