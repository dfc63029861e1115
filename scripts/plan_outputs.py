#!/usr/bin/python3
"""Writes what one build answers on a fixed set of inputs into a directory, so that two builds
can be compared byte for byte (`diff -r`): LX plans of the bundled and generated programs
(JSON, report, SVG, trace), work division, alloc plans, and the co-optimizer's answers (the
August search and the September ladder) on torch-spyre's captures, its transcribed cases and
generated division problems. docs/benchmarks.md ("Byte-identical outputs") says how it is used.

  plan_outputs.py --build build/release --out /tmp/after [--quick]
  plan_outputs.py --compare /tmp/before1,/tmp/before2 /tmp/after1,/tmp/after2

Runs are chosen to be deterministic (small programs that settle within their limits); run a
build twice to see which, if any, depend on the clock on a busy machine."""
import argparse
import copy
import json
import os
import random
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, out_base, env=None, timed=False):
    """Runs cmd, keeping its exit status and output; `timed`: the wall time it prints is dropped
    (alloc's "time:" line and its plan's "seconds")."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    stdout = r.stdout
    if timed:
        stdout = "".join(l for l in stdout.splitlines(True) if not l.startswith("time:"))
        if os.path.exists(out_base + ".json"):
            with open(out_base + ".json") as fh:
                plan = json.load(fh)
            plan.pop("seconds", None)
            with open(out_base + ".json", "w") as fh:
                json.dump(plan, fh, indent=1)
    with open(out_base + ".out", "w") as fh:
        fh.write(f"exit {r.returncode}\n{stdout}\n--- stderr\n{r.stderr}")


def cli_outputs(cli, out, quick):
    programs = sorted(os.path.join(ROOT, "examples", "programs", f) for f in os.listdir(os.path.join(ROOT, "examples", "programs")))
    gen = os.path.join(out, "generated")
    os.makedirs(gen, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(cli), "python"))
    for n, seed in [(40, 1), (200, 2), (1000, 3)] + ([] if quick else [(3000, 4)]):
        path = os.path.join(gen, f"synthetic_{n}_{seed}.json")
        subprocess.run([sys.executable, "-c", "import sys; from scratchplan import _core as c; "
                        f"open(sys.argv[1], 'w').write(c.program_synthetic({n}, {seed}).to_json())", path],
                       env=env, check=True)
        programs.append(path)
    variants = [("default", []), ("nocoopt", ["--no-coopt"]), ("cores8", ["--cores", "8", "--time-limit", "1"]),
                ("limit0", ["--time-limit", "0"])]
    for prog in programs:
        name = os.path.splitext(os.path.basename(prog))[0]
        for tag, flags in variants:
            base = os.path.join(out, "plan", f"{name}.{tag}")
            os.makedirs(os.path.dirname(base), exist_ok=True)
            run([cli, "plan", prog, *flags, "-o", base + ".json", "--svg", base + ".svg", "--trace", base + ".trace.json",
                 "--report"], base)
        base = os.path.join(out, "divide", name)
        os.makedirs(os.path.dirname(base), exist_ok=True)
        run([cli, "divide", prog, "--json"], base)
    dsa = os.path.join(ROOT, "tests", "data", "dsa", "challenging")
    files = sorted(os.listdir(dsa))[:3] if os.path.isdir(dsa) else []
    for f in files:
        for solver in ("firstfit", "bestfit", "greedy"):
            base = os.path.join(out, "alloc", f"{f}.{solver}")
            os.makedirs(os.path.dirname(base), exist_ok=True)
            run([cli, "alloc", os.path.join(dsa, f), "--minimize", "--solver", solver, "-o", base + ".json"], base, timed=True)


def random_division_problem(rng, n):
    """A co-optimization capture of our own: chains and skips with menus of 1-4 divisions,
    matching tables, in-place edges torch-spyre allows, paired groups and forced spills."""
    bufs = []
    t = 0
    for i in range(n):
        start = t
        t += rng.randint(0, 2)
        uses = sorted(set([start] + [start + rng.randint(1, 6) for _ in range(rng.randint(0, 3))]))
        menu = [{"splits": {}, "reduction_syms": []}]
        for _ in range(rng.randint(0, 3)):
            splits = {str(d): rng.choice([2, 4, 8]) for d in rng.sample(range(3), rng.randint(1, 2))}
            red = [k for k in splits if rng.random() < 0.3]
            menu.append({"splits": splits, "reduction_syms": red})
        b = {"name": f"b{i}", "size": rng.choice([256, 1024, 4096, 16384, 65536]) * rng.randint(1, 4), "uses": uses,
             "core_divisions": menu}
        if rng.random() < 0.1:
            b["residency_reason"] = "pinned by the caller"
        if rng.random() < 0.15:
            b["first_use_is_read"] = True
        parents = [j for j in range(max(0, i - 4), i) if rng.random() < 0.4]
        if parents:
            b["parents"] = [f"b{j}" for j in parents]
            b["cd_parent_matches"] = {}
            for j in parents:
                pairs = [[pd, cd] for pd in range(len(bufs[j]["core_divisions"])) for cd in range(len(menu))
                         if pd == cd or rng.random() < 0.3]
                b["cd_parent_matches"][f"b{j}"] = pairs or [[0, 0]]
        bufs.append(b)
    # In-place edges: a child starting on its parent's last use, no larger, parent read after its write.
    for i, b in enumerate(bufs):
        for j in range(max(0, i - 3), i):
            p = bufs[j]
            raw = p.get("first_use_is_read") or len(p["uses"]) >= 2
            if p["uses"][-1] == b["uses"][0] and b["size"] <= p["size"] and raw and rng.random() < 0.5 \
                    and "in_place_parents" not in b:
                b["in_place_parents"] = [p["name"]]
    for _ in range(n // 10):
        a, c = rng.sample(range(n), 2)
        bufs[a].setdefault("paired_with", []).append(f"b{c}")
    return bufs


def coopt_outputs(build, out, quick):
    sys.path.insert(0, os.path.join(build, "python"))
    import scratchplan as sp
    from scratchplan import _core
    from scratchplan._common import doc
    data = os.path.join(ROOT, "tests", "data", "spyre")
    cases = {}
    caps = json.load(open(os.path.join(data, "captures", "cooptimization_captures.json")))
    for name, graphs in caps.items():
        cases[f"capture_{name}"] = (graphs[0]["inputs"], [1625344, 1 << 16])
    syn = json.load(open(os.path.join(data, "captures", "synthetic_cooptimization_graphs.json")))
    for name, g in syn["graphs"].items():
        cases[f"synthetic_{name}"] = (g, [syn["golden"].get(name, {}).get("capacity", 1625344), 1 << 15])
    for c in json.load(open(os.path.join(data, "lx_cases.json")))["solver_cases"]:
        if all("core_divisions" in b for b in c["buffers"]) and c["buffers"]:
            cases[f"case_{c['id']}"] = (c["buffers"], [c["capacity"]])
    rng = random.Random(56)
    for k in range(20 if quick else 60):
        n = rng.randint(4, 40)
        cases[f"generated_{k}_{n}"] = (random_division_problem(rng, n), [rng.choice([1 << 14, 1 << 16, 1 << 18])])
    os.makedirs(os.path.join(out, "coopt"), exist_ok=True)
    for name, (items, capacities) in sorted(cases.items()):
        lines = []
        for cap in capacities:
            for align in (1, 128):
                try:
                    keys = {}
                    conv = [sp.spyre._cd_buffer(b, i, keys) for i, b in enumerate(copy.deepcopy(items))]
                except Exception as e:  # a case the drop-in refuses: recorded as such
                    lines.append(f"cap {cap} align {align}: refused {type(e).__name__}: {e}")
                    continue
                for label, call in [
                        ("august", lambda: _core.lx_cd_solve(doc(conv, "buffers"), cap, align, 5.0)),
                        ("ladder", lambda: _core.lx_cd_ladder(doc(conv, "buffers"), cap, align, 5.0, "", False)),
                        ("ladder-disjoint", lambda: _core.lx_cd_ladder(doc(conv, "buffers"), cap, align, 5.0, "", True))]:
                    try:
                        s = call()
                        fields = {f: getattr(s, f) for f in dir(s) if not f.startswith("_") and f not in ("seconds",)}
                        lines.append(f"cap {cap} align {align} {label}: " + json.dumps(
                            {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in sorted(fields.items())},
                            default=str))
                    except Exception as e:
                        lines.append(f"cap {cap} align {align} {label}: error {type(e).__name__}: {e}")
        with open(os.path.join(out, "coopt", name + ".txt"), "w") as fh:
            fh.write("\n".join(lines) + "\n")


def compare(before_runs, after_runs):
    """Per file: identical when every after-run's bytes equal the before-runs' (all before runs
    agree); clock-dependent when the before runs themselves differ on it or on another output of
    the same command (not judged); else different.
    Prints the counts and the files that are not identical."""
    def contents(runs, rel):
        out = []
        for r in runs:
            path = os.path.join(r, rel)
            out.append(open(path, "rb").read() if os.path.exists(path) else None)
        return out
    files = sorted({os.path.relpath(os.path.join(d, f), r) for r in before_runs + after_runs
                    for d, _, fs in os.walk(r) for f in fs})
    def run_of(rel):  # the files one command wrote (plan JSON, report, SVG, trace)
        for ext in (".trace.json", ".json", ".out", ".svg", ".txt"):
            if rel.endswith(ext):
                return rel[:-len(ext)]
        return rel
    unsettled = {run_of(rel) for rel in files if len(set(contents(before_runs, rel))) > 1}
    identical, clock, different = 0, [], []
    for rel in files:
        b, a = contents(before_runs, rel), contents(after_runs, rel)
        if len(set(b)) == 1 and set(a) == set(b):
            identical += 1
        elif run_of(rel) in unsettled:  # (a run whose plan the clock changes: its picture too)
            clock.append(rel)
        else:
            different.append(rel)
    print(f"{len(files)} files: {identical} identical, {len(clock)} clock-dependent (the before runs differ), "
          f"{len(different)} different")
    for rel in clock:
        print("  clock-dependent:", rel)
    for rel in different:
        print("  DIFFERENT:", rel)
    return 1 if different else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE_RUNS", "AFTER_RUNS"),
                    help="comma-separated output directories of the before and after builds")
    ap.add_argument("--build", help="a release build directory (the CLI and build/python)")
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true", help="fewer generated inputs")
    ap.add_argument("--only", choices=["cli", "coopt"])
    a = ap.parse_args()
    if a.compare:
        sys.exit(compare(a.compare[0].split(","), a.compare[1].split(",")))
    if not a.build or not a.out:
        ap.error("--build and --out are required (or --compare)")
    build = os.path.abspath(a.build)
    os.makedirs(a.out, exist_ok=True)
    if a.only != "coopt":
        cli_outputs(os.path.join(build, "scratchplan"), os.path.abspath(a.out), a.quick)
    if a.only != "cli":
        coopt_outputs(build, os.path.abspath(a.out), a.quick)


if __name__ == "__main__":
    main()
