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
# (family, buffers, instance seed): the 18.7k-buffer size, then larger ones up to 100k.
INSTANCES = (("layers", 18692, 1), ("layers", 18692, 2), ("layers", 30000, 3), ("layers", 50000, 1),
             ("layers", 100000, 1))


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


def tables(ctx):
    out = ["## Buffer allocation: spread over seeds on SOMAS LLM dumps with near-equal sizes", "",
           f"Issue 42 section 1. `scratchplan_alloc_gen layers N SEED` (`generate_somas_layers`: a training step "
           f"of a transformer with repeated layers; per op a tensor of one of four shapes, each jittered by up to "
           f"2 %, most saved until the mirrored backward op give or take four ops, so thousands of near-equal "
           f"buffers cross the peak at the end of the forward pass). Each instance: `alloc X.csv --minimize "
           f"--time-limit {LIMIT}` with `--seed` {SEEDS[0]} to {SEEDS[-1]}, one run after another on two threads "
           f"(the default), and `--solver greedy-by-size` once. `miss` counts runs that end above {TARGET} % of the "
           f"max-load bound and unproven; times to target are the solver's seconds at its first plan within "
           f"{TARGET} % (the CLI's `within 0.1 % of the lower bound at` line; a missed run counts as never, so "
           f"the median is over all eight runs); `wall s` is the slowest whole process. Target: no run misses, "
           f"median time to target at most {TARGET_MEDIAN_S:g} s, every run within the limit. The sweep is "
           f"{len(INSTANCES)} instances x {len(SEEDS)} runs of at most {LIMIT} s, about "
           f"{len(INSTANCES) * len(SEEDS) * LIMIT // 60} minutes at most.", "",
           "| family | buffers | instance seed | greedy-by-size above LB | miss | median above LB | worst above LB | "
           "median s to 0.1 % | worst s to 0.1 % | proven | wall s | met |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    all_met = True
    for family, n, inst_seed in INSTANCES:
        line, met = row(ctx, family, n, inst_seed)
        out.append(line)
        all_met &= met
    out += ["", f"Target {'met on every row' if all_met else 'NOT met on every row'}.", ""]
    return "\n".join(out)
