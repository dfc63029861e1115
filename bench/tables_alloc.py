"""Allocation tables for docs/benchmarks.md (issue 4 targets): MiniMalloc's challenging set at
capacity 1048576 and with --minimize, the idealloc instances, 100k / 1M-buffer scale, selection
on the torch-spyre captures, and the lx_cases pattern bars."""
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

from run import to_ms

MINIMALLOC_S = {"A": 5.09, "B": 3.49, "C": 0.58, "D": 2.36, "E": 3.17, "F": 5.69, "G": 0.94, "H": 1.65,
                "I": 3.98, "J": 1.00, "K": 0.66}
KNOWN_MIN = {"A": 1048576, "B": 1048576, "C": 1039360, "E": 1048576, "F": 1048576, "G": 1048576,
             "H": 1048576, "I": 1048576, "K": 1048576}
IDEALLOC_LB = {"iree_mobilenet": 5706112, "iree_mobilebert": 1674240, "iopddl_G_1": 3030937746,
               "somas_resnet50": 1515472556, "somas_tiny_bert": 758936113, "somas_bert_base": 15734934689}


def run_alloc(ctx, args):
    out = os.path.join(tempfile.gettempdir(), "scratchplan_tables_alloc.json")
    r = ctx.run([ctx.cli, "alloc"] + args + ["-o", out])
    text = r.stdout + r.stderr
    t = re.search(r"time: ([0-9.e+-]+) s", text)
    h = re.search(r"height: (\d+) \(lower bound (\d+)(, proven optimal)?\)", text)
    res = {"code": r.returncode, "time": float(t.group(1)) if t else None, "text": text}
    if h:
        res.update(height=int(h.group(1)), lb=int(h.group(2)), proven=bool(h.group(3)))
    else:
        lb = re.search(r"lower bound (\d+)", text)
        res.update(height=None, lb=int(lb.group(1)) if lb else None, proven=False)
    if r.returncode == 0 and os.path.exists(out):
        with open(out) as f:
            res["json"] = json.load(f)
    return res


def generated(ctx, family, n, seed=1):
    """Writes a generated instance (bench/alloc_gen.cpp) to a temporary CSV; returns its path."""
    tag = re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(family))
    path = os.path.join(tempfile.gettempdir(), f"scratchplan_gen_{tag}_{n}_{seed}.csv")
    gen = os.path.join(ctx.build, "bench", "scratchplan_alloc_gen")
    with open(path, "w") as f:
        subprocess.run([gen, family, str(n), str(seed)], stdout=f, check=True)
    return path


def timed_alloc(ctx, args):
    t0 = time.monotonic()
    r = run_alloc(ctx, args)
    r["wall"] = time.monotonic() - t0
    return r


def random_scale(ctx, limit=5):
    out = ["## Buffer allocation: default solver on large random instances", "",
           f"Issue 11 item 1: the default portfolio honours `--time-limit` at any size (greedy-by-size was quadratic "
           f"and unchecked: 50k buffers took 14.5 s and 200k 324 s at a 5 s limit; 1M did not finish). "
           f"`scratchplan_alloc_gen random N 1` (starts uniform over N/8 ticks, lifetimes 1..200 ticks, sizes "
           f"64 B..64 KiB), `alloc X.csv --minimize --time-limit {limit}`, one run each; wall time is the whole "
           f"process (reading the CSV included, which the limit also covers).", "",
           "| buffers | wall s | solver's s | height | max-load LB | above LB | answer by | within limit + 10 % |",
           "|---:|---:|---:|---:|---:|---:|---|---|"]
    for n in (50000, 200000, 1000000):
        path = generated(ctx, "random", n)
        r = timed_alloc(ctx, [path, "--minimize", "--time-limit", str(limit)])
        solver = re.search(r"solver: (\S+)", r["text"])
        if r["height"] is None:
            out.append(f"| {n} | {r['wall']:.2f} | - | - | - | - | exit {r['code']} | no |")
            continue
        gap = 100.0 * (r["height"] - r["lb"]) / r["lb"]
        out.append(f"| {n} | {r['wall']:.2f} | {r['time']:.2f} | {r['height']} | {r['lb']} | {gap:.3f} % | "
                   f"{solver.group(1) if solver else '?'} | {'yes' if r['wall'] <= 1.1 * limit else 'no'} |")
        os.remove(path)
    out.append("")
    return "\n".join(out)


def families(ctx, limit=10):
    out = ["## Buffer allocation: generated XLA auto-sharding traces and SOMAS LLM dumps", "",
           f"Issue 15 section 1. Generators in `src/alloc/generate.cpp`, seed 1, written by `scratchplan_alloc_gen`: "
           f"`xla` and `somas` imitate the statistics of iopddl_G_1 and somas_bert_base (docs/log/alloc-bounds-log.md); "
           f"`scaled` stretches those real traces (tests/data/dsa/idealloc) to N buffers, which keeps their load "
           f"profile (the issue's instances are real dumps 3 to 10 times larger). somas_tiny_bert scaled was held out "
           f"until the classed orders were designed on it; somas_resnet50 scaled (a SOMAS dump of a CNN) was first "
           f"measured untouched (0.031 / 0.075 / 0.109 %), then used in the exponent measurement of docs/log/alloc-solver-log.md. "
           f"`chain` is a ResNet-like activation chain (stages of one activation size, each tensor read by the next "
           f"op, every third by a residual add; every buffer live with two or three others), added with the exact "
           f"probe for sparse instances (before it, seed 1: 20k 20.4 %, 50k 23.5 %, 100k 29.9 %; with it 50k 23.5 % "
           f"and 100k 29.9 %; since the canonical dives, docs/log/alloc-solver-log.md, every row proven). "
           f"Ours: `alloc X.csv --minimize --time-limit {limit}` (default solver; the multi-start on every hardware "
           f"thread, two here: the issue's budget is 10 s on 2 cores); `1 thread` adds `--threads 1`; greedy-by-size: "
           f"`--solver greedy-by-size`. Target: within 0.1 % of the max-load lower bound (or proven) within the limit; "
           f"`met` reads the median of {ctx.repetitions} default runs (`--seed` 1 to {ctx.repetitions}: the search is "
           f"randomized and cut by the clock, so one run is a draw from a wide spread; `runs` lists each, `ours` is the "
           f"median run, `wall s` the slowest); the 1-thread and greedy-by-size columns are one run. The 5,000-buffer rows take the path below 8,000 "
           f"buffers (greedy-by-size, then the multi-start, then the exact search; a sparse one, like the chain, canonical dives and then the exact search at the bound first; docs/alloc.md).", "",
           "| family | buffers | max-load LB | ours | above LB | runs: above LB | proven | wall s | 1 thread: above LB | "
           "wall s | greedy-by-size | above LB | met |",
           "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|"]
    data = os.path.join(ctx.data, "dsa", "idealloc")
    for family, label in (("xla", "XLA auto-sharding"), ("somas", "SOMAS LLM"),
                          ("scaled:" + os.path.join(data, "iopddl_G_1.csv"), "iopddl_G_1 scaled"),
                          ("scaled:" + os.path.join(data, "somas_bert_base.csv"), "somas_bert_base scaled"),
                          ("scaled:" + os.path.join(data, "somas_tiny_bert.csv"), "somas_tiny_bert scaled"),
                          ("scaled:" + os.path.join(data, "somas_resnet50.csv"), "somas_resnet50 scaled"),
                          ("chain", "activation chain")):
        for n in (5000, 20000, 50000, 100000):
            path = generated(ctx, family, n)
            runs = [timed_alloc(ctx, [path, "--minimize", "--time-limit", str(limit), "--seed", str(seed)])
                    for seed in range(1, ctx.repetitions + 1)]
            r2 = timed_alloc(ctx, [path, "--minimize", "--time-limit", str(limit), "--threads", "1"])
            g = run_alloc(ctx, [path, "--minimize", "--solver", "greedy-by-size", "--time-limit", "120"])
            os.remove(path)
            slowest = max(x["wall"] for x in runs)
            if any(x["height"] is None for x in runs) or g["height"] is None:
                code = next((x["code"] for x in runs if x["height"] is None), 0)
                out.append(f"| {label} | {n} | - | exit {code} | - | - | - | {slowest:.2f} | - | - | - | - | no |")
                continue
            r = sorted(runs, key=lambda x: x["height"])[len(runs) // 2]  # the median run
            lb = g["lb"]  # the max-load bound (every run reports the same one)
            gap = 100.0 * (r["height"] - lb) / lb
            ggap = 100.0 * (g["height"] - lb) / lb
            each = " / ".join(f"{100.0 * (x['height'] - lb) / lb:.3f}" for x in runs)
            met = (gap <= 0.1 or r["proven"]) and slowest <= 1.1 * limit
            two = (f"{100.0 * (r2['height'] - lb) / lb:.3f} %{' (proven)' if r2['proven'] else ''} | {r2['wall']:.2f}"
                   if r2["height"] is not None else f"exit {r2['code']} | {r2['wall']:.2f}")
            out.append(f"| {label} | {n} | {lb} | {r['height']} | {gap:.3f} % | {each} % | {'yes' if r['proven'] else 'no'} | "
                       f"{slowest:.2f} | {two} | {g['height']} | {ggap:.3f} % | {'yes' if met else 'no'} |")
    out.append("")
    return "\n".join(out)


def challenging(ctx, limit):
    d = os.path.join(ctx.data, "dsa", "challenging")
    out = ["## Buffer allocation: MiniMalloc's challenging set at capacity 1048576", "",
           f"Target (issue 4): all 11 solved; sum of solve times at most 28.6 / 5 = 5.72 s. `scratchplan alloc X.csv "
           f"--capacity 1048576 --solver auto --time-limit {limit}`, median of {ctx.repetitions} runs (wall time reported by "
           "the solver); an unsolved run counts its full time limit.", "",
           "| instance | buffers | solved runs | median s | MiniMalloc s |", "|---|---:|---:|---:|---:|"]
    total, solved_all = 0.0, True
    for name in sorted(MINIMALLOC_S):
        path = os.path.join(d, f"{name}.1048576.csv")
        n = sum(1 for _ in open(path)) - 1
        times, ok = [], 0
        for _ in range(ctx.repetitions):
            r = run_alloc(ctx, [path, "--capacity", "1048576", "--solver", "auto", "--time-limit", str(limit)])
            solved = r["code"] == 0
            ok += solved
            times.append(r["time"] if solved and r["time"] is not None else float(limit))
        med = statistics.median(times)
        total += med
        solved_all = solved_all and ok == ctx.repetitions
        out.append(f"| {name} | {n} | {ok}/{ctx.repetitions} | {med:.3f} | {MINIMALLOC_S[name]:.2f} |")
    out += ["", f"Sum of medians: **{total:.2f} s** (MiniMalloc 28.6 s; target 5.72 s): "
            f"{'met' if solved_all and total <= 5.72 else 'not met'}.", ""]
    return "\n".join(out)


def minimize(ctx, limit):
    d = os.path.join(ctx.data, "dsa", "challenging")
    out = ["## Buffer allocation: challenging set with --minimize", "",
           f"`--minimize --solver auto --time-limit {limit}`, one run each. Target: the minimum capacity of every "
           "instance, proven (D and J are open: D in [986112, 1014784], J in [989184, 1013760]; the upper ends moved from the published 1026048 and 1041408 by our own search, first to 1024000 and 1030144 (`--minimize --time-limit 240 --seed 7 --threads 1`), then to 1021952 and 1028096 (`--time-limit 900 --seed 13`), 1018880 each (`--time-limit 1800 --seed 17`) 1014784 and 1015808 (`--time-limit 3300 --seed 23`), each time by the exact phase at the end of the run, then J to 1013760 by the exact search alone (`--solver exact --exact-off lb_probe --threads 1 --time-limit 4400`, 4,400 s of one core), packings stored in tests/data/dsa/best and validated by a test; the lower ends stay at the max load: no height certificate above it found, windows of up to 134 (D) and 77 (J) buffers around the peak pack at it, docs/log/alloc-bounds-log.md \"Height certificates\").", "",
           "| instance | best height | lower bound | proven | s | minimum known |", "|---|---:|---:|---|---:|---|"]
    for name in sorted(MINIMALLOC_S):
        path = os.path.join(d, f"{name}.1048576.csv")
        r = run_alloc(ctx, [path, "--capacity", "1048576", "--minimize", "--solver", "auto", "--time-limit", str(limit)])
        known = str(KNOWN_MIN.get(name, "open"))
        out.append(f"| {name} | {r['height'] if r['height'] is not None else '-'} | {r['lb']} | "
                   f"{'yes' if r['proven'] else 'no'} | {r['time'] if r['time'] is not None else float('nan'):.2f} | {known} |")
    out.append("")
    return "\n".join(out)


def idealloc(ctx, limit):
    d = os.path.join(ctx.data, "dsa", "idealloc")
    out = ["## Buffer allocation: idealloc instances", "",
           f"Target: within 0.01 % of the max-load lower bound (or proven optimal) in under 5 s each. `--minimize "
           f"--solver auto --time-limit {limit}`, median of {ctx.repetitions} runs.", "",
           "| instance | buffers | LB | height | above LB | proven | median s | met |", "|---|---:|---:|---:|---:|---|---:|---|"]
    for name in sorted(IDEALLOC_LB):
        path = os.path.join(d, f"{name}.csv")
        n = sum(1 for _ in open(path)) - 1
        runs = [run_alloc(ctx, [path, "--capacity", str(10 ** 15), "--minimize", "--solver", "auto", "--time-limit", str(limit)])
                for _ in range(ctx.repetitions)]
        r = runs[0]
        med = statistics.median(x["time"] for x in runs)
        lb = IDEALLOC_LB[name]
        gap = 100.0 * (r["height"] - lb) / lb
        met = (gap <= 0.01 or r["proven"]) and med < 5
        out.append(f"| {name} | {n} | {lb} | {r['height']} | {r['height'] - lb} ({gap:.4f} %) | "
                   f"{'yes' if r['proven'] else 'no'} | {med:.3f} | {'yes' if met else 'no'} |")
    out.append("")
    return "\n".join(out)


def bench_rows(ctx, filt, reps):
    return ctx.gbench(filt, reps)


ms = to_ms


def scale(ctx):
    rows = bench_rows(ctx, "BM_AllocScale", ctx.repetitions)
    out = ["## Buffer allocation: scale (sweep solver)", "",
           "Target: 100,000 buffers in under 1 s within 1 % of the lower bound; 1,000,000 in under 15 s. Generated "
           "streams (`generate_stream`, seed 1), Google Benchmark `BM_AllocScale`, median of runs.", "",
           "| buffers | LB | height | above LB | median s | target | met |", "|---:|---:|---:|---:|---:|---|---|"]
    for name, runs in rows.items():
        c = runs[0]
        s = statistics.median(ms(x) for x in runs) / 1000
        n = int(c["buffers"])
        met = (s < 1 and c["gap_pct"] <= 1) if n <= 100000 else s < 15
        target = "< 1 s, <= 1 %" if n <= 100000 else "< 15 s"
        out.append(f"| {n} | {int(c['lower_bound'])} | {int(c['height'])} | {c['gap_pct']:.3f} % | {s:.3f} | {target} | "
                   f"{'yes' if met else 'no'} |")
    out.append("")
    return "\n".join(out)


def selection(ctx):
    rows = bench_rows(ctx, "BM_AllocSelect", ctx.repetitions)
    out = ["## Buffer allocation: selection at fixed capacity", "",
           "Target: proven-optimal spill cost in under 50 ms for capture-sized problems. Captures from "
           "`tests/data/spyre/captures/cooptimization_captures.json` (per-core sizes of the committed division, "
           "alignment 128, capacity = total / 1, 2, 4), plus generated streams at 60 % of their max load.", "",
           "| case | buffers | spill cost | lower bound | proven | median ms | met |", "|---|---:|---:|---:|---|---:|---|"]
    for name, runs in rows.items():
        c = runs[0]
        t = statistics.median(ms(x) for x in runs)
        proven = c["proven"] > 0
        out.append(f"| {name.replace('BM_AllocSelect', '').strip('/')} | {int(c['buffers'])} | {int(c['spill_cost'])} | "
                   f"{int(c['lower_bound'])} | {'yes' if proven else 'no'} | {t:.3f} | {'yes' if proven and t < 50 else 'no'} |")
    out.append("")
    return "\n".join(out)


def patterns(ctx):
    with open(os.path.join(ctx.data, "spyre", "lx_cases.json")) as f:
        cases = json.load(f)["pattern_cases"]
    out = ["## Buffer allocation: torch-spyre target patterns (HBM bytes)", "",
           "Pass: HBM bytes of the planned buffers left off chip <= those of the pattern's good allocation (graph I/O "
           "is common to both). `--objective select --solver auto`.", "",
           "| capacity | pattern | good allocation | ours (planned-buffer HBM bytes) | good (same) | pass |",
           "|---|---|---|---:|---:|---|"]
    tmp = os.path.join(tempfile.gettempdir(), "scratchplan_tables_pattern.json")
    for cap_name, lst in cases.items():
        for pc in lst:
            bufs = [{"id": b["name"], "size": b["size"], "uses": b["uses"], "first_use_is_read": b.get("first_use_is_read", False),
                     "in_place_parents": b.get("in_place_parents", [])} for b in pc["buffers_to_plan"]]
            with open(tmp, "w") as f:
                json.dump({"capacity": pc["capacity"], "alignment": pc["alignment"], "buffers": bufs}, f)
            r = run_alloc(ctx, [tmp, "--objective", "select", "--solver", "auto", "--time-limit", "5"])
            size = {b["name"]: b["size"] for b in pc["buffers_to_plan"]}
            ours = {b["id"]: b["offset"] is not None for b in r.get("json", {}).get("buffers", [])}
            ga = pc["good_allocation"].get("addresses") or {}
            good = {n: (n in ga and ga[n] is not None) for n in size}

            def hbm(res):
                c = 0
                for op in pc["ops"]:
                    for n in op["inputs"] + [op["output"]]:
                        if n in res and not res[n]:
                            c += size[n]
                return c
            kind = pc["good_allocation"]["kind"]
            g = hbm(good) if kind == "nonevicting" else None
            o = hbm(ours)
            ok = g is not None and o <= g
            out.append(f"| {cap_name.split('_')[-1]} | {pc['name']} | {kind} | {o} | {g if g is not None else 'needs eviction'} | "
                       f"{'yes' if ok else 'no'} |")
    out += ["", "The two eviction patterns need a mid-lifetime eviction, which the allocation engine alone does not "
            "do; the LX planner (`scratchplan plan`, its eviction and reload) reaches all seven bars at both "
            "capacities (tests/lx/lx_patterns_test.cpp).", ""]
    return "\n".join(out)


def tables(ctx):
    limit = 10
    parts = [challenging(ctx, limit), minimize(ctx, 20), idealloc(ctx, 4.5), scale(ctx), random_scale(ctx), families(ctx),
             selection(ctx), patterns(ctx)]
    return "\n".join(parts)
