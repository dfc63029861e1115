"""Every alloc solver answers at every size (anytime): each solver at 10k, 100k and 1M random
buffers, `alloc X.csv --minimize --solver S --time-limit 3`: a valid plan, the wall time and the
height over the max-load bound."""
import os
import re

from tables_alloc import generated, timed_alloc

SOLVERS = ["greedy", "firstfit", "bestfit", "greedy-by-size", "sweep", "online", "annealing", "exact", "auto"]
LIMIT = 3


def tables(ctx):
    sizes = (10000, 100000) if ctx.quick else (10000, 100000, 1000000)
    out = ["## Buffer allocation: every solver at every size", "",
           f"Each solver on `scratchplan_alloc_gen random N 1` (sizes 64 B..64 KiB), `alloc X.csv --minimize --solver S "
           f"--time-limit {LIMIT}`, one run each; wall time is the whole process (reading the CSV and writing the plan "
           f"included). `answer by` names the plan returned: a solver that does not finish within the limit (a quadratic "
           f"placer, annealing's first-fit decoder, the exact search) returns the online placer's plan, made first. "
           f"Every plan was checked by the independent validator before it was written (exit 0). At 1M buffers a "
           f"3 s limit is below the floor of any answer on this machine: reading and checking the CSV, the online "
           f"placement, the validation and writing the plan take 5-7 s together (the limit is not met there; "
           f"`Buffer allocation: default solver on large random instances` shows 1M within a 5 s limit on a quiet "
           f"machine).", "",
           "| buffers | solver | exit | wall s | height | max-load LB | above LB | answer by | within limit + 10 % |",
           "|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for n in sizes:
        path = generated(ctx, "random", n)
        for solver in SOLVERS:
            r = timed_alloc(ctx, [path, "--minimize", "--solver", solver, "--time-limit", str(LIMIT)])
            by = re.search(r"solver: (.+)", r["text"])
            within = "yes" if r["wall"] <= 1.1 * LIMIT else "no"
            if r["height"] is None:
                line = r["text"].strip().splitlines()[-1][:80] if r["text"].strip() else ""
                out.append(f"| {n} | {solver} | {r['code']} | {r['wall']:.2f} | - | - | - | {line} | {within} |")
                continue
            gap = 100.0 * (r["height"] - r["lb"]) / r["lb"]
            out.append(f"| {n} | {solver} | {r['code']} | {r['wall']:.2f} | {r['height']} | {r['lb']} | {gap:.2f} % | "
                       f"{by.group(1).strip() if by else '?'} | {within} |")
        os.remove(path)
    out.append("")
    return "\n".join(out)
