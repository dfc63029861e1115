"""Python front end tables for docs/benchmarks.md (issue 12): what the Python layer costs over
the CLI for alloc at 100,000 buffers (target: at most 10 % over the CLI's solver time) and for
lx.plan of the bundled example programs. Runs the release build's package
(build/release/python) in this interpreter, which must be Debian's (numpy)."""
import os
import re
import statistics
import sys
import tempfile
import time


def _sp(ctx):
    sys.path.insert(0, os.path.join(ctx.build, "python"))
    import scratchplan
    return scratchplan


def alloc_overhead(ctx, sp):
    reps = 3 if ctx.quick else 7
    out = ["## Python front end: alloc overhead at scale", "",
           "Target (issue 12): `scratchplan.alloc.pack` on numpy arrays costs at most 10 % more than the CLI's "
           "solver time for the same 100,000 buffers. Instance: `alloc.generate_stream(n, seed=1)` (the scale "
           "benchmark's generator), `--minimize`, solver auto (the sweep at this size). CLI: `scratchplan alloc "
           "X.csv --minimize`, its reported solver time (reading and writing excluded). Python: wall time of the "
           f"whole `pack(sizes, starts, ends)` call (array checks, problem building, solve, result), and the "
           f"solver time it reports. {reps} alternating runs; the ratio is taken on the fastest run of each "
           "(the least disturbed by other load on the shared machine), medians are shown beside it.", "",
           "| buffers | CLI solver s (min / median) | Python call s (min / median) | Python solver s (median) | "
           "binding s (median) | Python call / CLI solver (min) | met |",
           "|---:|---:|---:|---:|---:|---:|---|"]
    for n in (100000,) if ctx.quick else (100000, 1000000):
        sizes, starts, ends = sp.alloc.generate_stream(n, 1)
        csv = os.path.join(tempfile.gettempdir(), f"scratchplan_bench_py_{n}.csv")
        with open(csv, "w") as f:
            f.write("id,lower,upper,size\n")
            f.writelines(f"{i},{b},{e},{s}\n" for i, (b, e, s) in enumerate(zip(starts.tolist(), ends.tolist(),
                                                                            sizes.tolist())))
        outp = os.path.join(tempfile.gettempdir(), "scratchplan_bench_py_out.json")
        cli_s, py_call, py_solver = [], [], []
        for _ in range(reps):
            r = ctx.run([ctx.cli, "alloc", csv, "--minimize", "-o", outp])
            cli_s.append(float(re.search(r"time: ([0-9.e+-]+) s", r.stdout).group(1)))
            res = None  # the previous result is freed before timing (the CLI's exit is not timed either)
            t = time.perf_counter()
            res = sp.alloc.pack(sizes, starts, ends)
            res.offsets  # the result array itself
            py_call.append(time.perf_counter() - t)
            py_solver.append(res.seconds)
        c, p, ps = statistics.median(cli_s), statistics.median(py_call), statistics.median(py_solver)
        binding = statistics.median(a - b for a, b in zip(py_call, py_solver))
        ratio = min(py_call) / min(cli_s)
        met = "yes" if ratio <= 1.10 else "no"
        out.append(f"| {n} | {min(cli_s):.3f} / {c:.3f} | {min(py_call):.3f} / {p:.3f} | {ps:.3f} | {binding:.3f} | "
                   f"{100 * (ratio - 1):+.1f} % | {met if n == 100000 else met + ' (no target)'} |")
    out += ["", "The binding column is the Python call minus the solver time the same call reports: what the Python "
            "layer itself costs (array conversion, one id string per buffer, the worker thread). The solver times "
            "of the two front ends vary with the machine's load; the binding column does not. At 1M buffers neither "
            "run proves its plan, so both search until their 10 s budget ends, and the CLI's budget also covers "
            "reading the CSV and a reserve for writing the plan (1.5 us a buffer): that row compares budgets, not "
            "overheads.", ""]
    return "\n".join(out)


def lx_overhead(ctx, sp):
    reps = 3 if ctx.quick else 5
    d = os.path.join(ctx.root, "examples", "programs")
    out = ["## Python front end: lx.plan of the bundled programs", "",
           f"`scratchplan plan P.json --cores 32 -o -` (process wall time, including start-up and JSON output) vs "
           f"`scratchplan.lx.plan(path, cores=32)` (call wall time) and `plan.to_dict()` (JSON text and parse). "
           f"Same plans (the pytest suite checks to_dict() == the CLI's JSON). Medians of {reps} runs, ms.", "",
           "| program | CLI process ms | Python lx.plan ms | + to_dict ms |", "|---|---:|---:|---:|"]
    for f in sorted(os.listdir(d)):
        if not f.endswith(".json"):
            continue
        path = os.path.join(d, f)
        cli_ms, py_ms, dict_ms = [], [], []
        for _ in range(reps):
            t = time.perf_counter()
            r = ctx.run([ctx.cli, "plan", path, "--cores", "32", "-o", "-"])
            cli_ms.append(1000 * (time.perf_counter() - t))
            assert r.returncode == 0, r.stderr
            t = time.perf_counter()
            p = sp.lx.plan(path, cores=32)
            py_ms.append(1000 * (time.perf_counter() - t))
            t = time.perf_counter()
            p.to_dict()
            dict_ms.append(1000 * (time.perf_counter() - t))
        out.append(f"| {f[:-5]} | {statistics.median(cli_ms):.1f} | {statistics.median(py_ms):.2f} | "
                   f"{statistics.median(dict_ms):.2f} |")
    out += ["", "The CLI column is dominated by process start-up; in a Python process that plans many programs "
            "the call itself is what counts.", ""]
    return "\n".join(out)


def tables(ctx):
    sp = _sp(ctx)
    return alloc_overhead(ctx, sp) + "\n" + lx_overhead(ctx, sp)
