#!/usr/bin/python3
"""End-to-end fuzzer of the scratchplan CLI (issue 11, acceptance).

Every verb (evaluate, schedule, alloc, layout, divide, plan, nki check, nki plan, and the contest
entry point mlsys) gets random valid and broken inputs through the real binaries: JSON and CSV
mutated by dropped keys, misspelt keys, wrong types, negative/huge numbers, NaN, truncation and
cycles, plus out-of-range flag values and unwritable output paths. Each run must end in one of:

  exit 0  every requested output exists, JSON outputs carry "format" and "version", and an
          independent check accepts them (schedules: `scratchplan evaluate`; NKI plans:
          `scratchplan nki check`; alloc plans: an overlap/capacity check written here);
  exit 2  exactly one line on stderr and no output file;

never exit 1, never a signal, never a run longer than its time limit x 1.1 + a fixed 3 s slack
(process start and input reading on a loaded machine; verbs without a limit get 10 s).

  /usr/bin/python3 tests/cli/fuzz_cli.py --cli build/release/scratchplan --mlsys build/release/mlsys \
      --runs 300 --seed 1            # the ctest (cli_e2e_fuzz)
  ... --runs 20000 --seed $RANDOM    # longer runs (scripts/fuzz_cli.sh)

Inputs come only from the repository (examples/, tests/data/). Same seed, same runs.
"""
import argparse
import copy
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


# ---- mutations -------------------------------------------------------------------------------

def paths_of(doc, prefix=()):
    """Every (container, key) location in a JSON document."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((doc, k))
            out.extend(paths_of(v))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((doc, i))
            out.extend(paths_of(v))
    return out


def typo(word, rng):
    if not word:
        return "x"
    i = rng.randrange(len(word))
    op = rng.randrange(3)
    if op == 0:
        return word[:i] + word[i + 1:] or "x"
    if op == 1:
        return word[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz_") + word[i:]
    return word[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + word[i + 1:]


WEIRD = [None, True, False, "", "abc", [], {}, -1, 0, 1, -(2 ** 63), 2 ** 63, 2 ** 64, 1e300, -1e300, 0.5, 1e-320,
         2 ** 62, [1, 2], {"a": 1}]


def mutate_json(doc, rng):
    """Returns (text, label): a mutated document serialized, sometimes made syntactically broken."""
    doc = copy.deepcopy(doc)
    kind = rng.choice(["drop", "typo", "type", "number", "number", "extra", "dup", "nan", "truncate", "cycle", "none"])
    locs = paths_of(doc)
    if kind in ("drop", "typo", "type", "number", "dup", "extra") and not locs:
        kind = "none"
    if kind == "drop":
        c, k = rng.choice(locs)
        del c[k]
    elif kind == "typo":
        dicts = [(c, k) for c, k in locs if isinstance(c, dict)]
        if dicts:
            c, k = rng.choice(dicts)
            c[typo(k, rng)] = c.pop(k)
    elif kind == "type":
        c, k = rng.choice(locs)
        c[k] = copy.deepcopy(rng.choice(WEIRD))
    elif kind == "number":
        nums = [(c, k) for c, k in locs if isinstance(c[k], (int, float)) and not isinstance(c[k], bool)]
        if nums:
            c, k = rng.choice(nums)
            c[k] = rng.choice([-1, 0, -c[k], c[k] * 1000003, 2 ** 62, 2 ** 63 - 1, 1e300, 1e-320, c[k] + 1, c[k] - 1])
    elif kind == "dup":
        lists = [(c, k) for c, k in locs if isinstance(c, list)]
        if lists:
            c, k = rng.choice(lists)
            c.insert(k, copy.deepcopy(c[k]))
    elif kind == "extra":
        dicts = [c for c, _ in locs if isinstance(c, dict)]
        if dicts:
            rng.choice(dicts)[rng.choice(["_comment", "x-note", "comment", "graph_ouput", "lx_byts", "alocc"])] = 1
    elif kind == "cycle":
        make_cycle(doc, rng)
    text = json.dumps(doc)
    if kind == "nan":
        nums = [i for i, ch in enumerate(text) if ch.isdigit()]
        if nums:
            i = rng.choice(nums)
            text = text[:i] + rng.choice(["NaN", "Infinity", "-Infinity", "1e999"]) + text[i + 1:]
    elif kind == "truncate":
        text = text[:rng.randrange(len(text) + 1)]
    return text, kind


def make_cycle(doc, rng):
    """Makes an op read what it (or a later op) writes, in whichever format `doc` is."""
    if isinstance(doc, dict) and "inputs" in doc and "outputs" in doc and isinstance(doc["inputs"], list):
        ops = [i for i, o in enumerate(doc["outputs"]) if isinstance(o, list) and o]
        if ops and doc["inputs"]:
            i = rng.choice(ops)
            j = rng.randrange(len(doc["inputs"]))
            if isinstance(doc["inputs"][j], list):
                doc["inputs"][j].append(doc["outputs"][i][0])
    elif isinstance(doc, dict) and isinstance(doc.get("ops"), list) and doc["ops"]:
        a = rng.choice(doc["ops"])
        b = rng.choice(doc["ops"])
        if isinstance(a, dict) and isinstance(b, dict) and b.get("outputs") and isinstance(a.get("inputs"), list):
            a["inputs"].append(b["outputs"][0])


def mutate_csv(text, rng):
    lines = text.splitlines()
    kind = rng.choice(["field", "negative", "huge", "word", "dup", "header", "truncate", "none"])
    if len(lines) > 1 and kind not in ("truncate", "none"):
        i = rng.randrange(1, len(lines))
        f = lines[i].split(",")
        if kind == "field":
            f.pop(rng.randrange(len(f)))
        elif kind == "negative":
            j = rng.randrange(1, len(f))
            f[j] = "-" + f[j]
        elif kind == "huge":
            f[rng.randrange(1, len(f))] = rng.choice(["9223372036854775807", "99999999999999999999", "4611686018427387904"])
        elif kind == "word":
            f[rng.randrange(len(f))] = rng.choice(["", "x", "1.5", "nan"])
        lines[i] = ",".join(f)
        if kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "header":
            lines[0] = typo(lines[0], rng)
    out = "\n".join(lines) + "\n"
    if kind == "truncate":
        out = out[:rng.randrange(len(out) + 1)]
    return out, kind


def random_alloc_problem(rng):
    n = rng.randint(1, 30)
    bufs = []
    for i in range(n):
        s = rng.randint(0, 40)
        bufs.append({"id": "b%d" % i, "start": s, "end": s + rng.randint(1, 20), "size": rng.randint(1, 64) * 8})
    doc = {"buffers": bufs}
    if rng.random() < 0.5:
        doc["capacity"] = rng.randint(64, 2048)
    return doc


def alloc_csv(doc):
    return "id,lower,upper,size\n" + "".join("%s,%d,%d,%d\n" % (b["id"], b["start"], b["end"], b["size"]) for b in doc["buffers"])


# ---- independent checks of accepted outputs --------------------------------------------------

def check_alloc_plan(problem_text, is_csv, out_path, capacity, objective):
    """Placed buffers that are live at once do not overlap and fit the capacity (pack: all placed)."""
    if is_csv:
        rows = [l.split(",") for l in problem_text.strip().splitlines()[1:] if l.strip()]
        bufs = {r[0].strip(): (int(r[1]), int(r[2]), int(r[3])) for r in rows}
    else:
        doc = json.loads(problem_text)
        bufs = {b.get("id", b.get("name")): (b["start"], b["end"], b["size"]) for b in doc["buffers"]}
    with open(out_path) as f:
        text = f.read()
    if out_path.endswith(".csv"):
        placed = {}
        for l in text.strip().splitlines()[1:]:
            r = l.split(",")
            placed[r[0]] = int(r[4]) if r[4] else None
    else:
        plan = json.loads(text)
        assert plan.get("format") == "scratchplan-alloc-plan" and "version" in plan, "alloc plan without format/version"
        placed = {b["id"]: b["offset"] for b in plan["buffers"]}
    items = []
    for bid, (s, e, size) in bufs.items():
        off = placed.get(bid)
        if off is None:
            assert objective == "select", "pack plan leaves %s unplaced" % bid
            continue
        assert off >= 0 and (capacity is None or off + size <= capacity), "%s outside capacity" % bid
        items.append((s, e, off, off + size, bid))
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            a, b = items[i], items[j]
            if a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3] and a[3] > a[2] and b[3] > b[2]:
                raise AssertionError("%s and %s overlap" % (a[4], b[4]))


class Fuzzer:
    def __init__(self, cli, mlsys, seed, verbose):
        self.cli, self.mlsys, self.verbose = cli, mlsys, verbose
        self.rng = random.Random(seed)
        self.tmp = tempfile.mkdtemp(prefix="sp_fuzz_")
        self.failures = []
        self.runs = 0
        self.counts = {}
        self.mlsys_problems = [load("examples/mlsys/mlp_block.json")] + [
            load("tests/data/mlsys2026/examples/" + f) for f in ("ex1_problem.json", "ex2_problem.json")]
        self.mlsys_solution = (load("examples/mlsys/mlp_block.json"), load("examples/mlsys/mlp_block_solution.json"))
        progs = sorted(os.listdir(os.path.join(ROOT, "examples/programs")))
        self.programs = [load("examples/programs/" + p) for p in progs]
        kernels = sorted(k for k in os.listdir(os.path.join(ROOT, "examples/nki"))
                         if k.endswith(".json") and k != "hardware_small.json")
        self.kernels = [load("examples/nki/" + k) for k in kernels]
        self.nki_hw = load("examples/nki/hardware_small.json")

    def file(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def out(self, name):
        p = os.path.join(self.tmp, name)
        if os.path.exists(p):
            os.remove(p)
        return p

    def run(self, verb, argv, outputs, limit, stdin=None, check=None):
        """Runs one command and checks the contract; `check(stdout)` validates an accepted run."""
        self.runs += 1
        self.counts[verb] = self.counts.get(verb, 0) + 1
        budget = (limit * 1.1 + 3.0) if limit is not None else 10.0
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=budget + 30)
        except subprocess.TimeoutExpired:
            self.fail(verb, argv, "hung (killed after %.0f s)" % (budget + 30), "", stdin)
            return None
        wall = time.monotonic() - t0
        err_lines = p.stderr.splitlines()
        if wall > budget:
            self.fail(verb, argv, "took %.2f s, limit %.2f s" % (wall, budget), p.stderr, stdin)
        if p.returncode == 2:
            if len(err_lines) != 1 or not err_lines[0].strip():
                self.fail(verb, argv, "exit 2 with %d stderr lines" % len(err_lines), p.stderr, stdin)
            for o in outputs:
                if os.path.exists(o):
                    self.fail(verb, argv, "exit 2 left output " + o, p.stderr, stdin)
        elif p.returncode == 0:
            for o in outputs:
                if not os.path.exists(o):
                    self.fail(verb, argv, "exit 0 without output " + o, p.stderr, stdin)
                    return p
            if check:
                try:
                    check(p.stdout)
                except Exception as e:  # noqa: BLE001 - any failed check is a finding
                    self.fail(verb, argv, "accepted output rejected: %s" % e, p.stderr, stdin)
        else:
            self.fail(verb, argv, "exit %d" % p.returncode, p.stderr, stdin)
        if self.verbose:
            print("%-10s exit %d %.2fs %s" % (verb, p.returncode, wall, (err_lines or [""])[0][:100]))
        return p

    def fail(self, verb, argv, what, stderr, stdin):
        saved = os.path.join(self.tmp, "failure_%d" % len(self.failures))
        os.makedirs(saved, exist_ok=True)
        for a in argv:
            if isinstance(a, str) and a.startswith(self.tmp) and os.path.isfile(a):
                shutil.copy(a, saved)
        if stdin:
            with open(os.path.join(saved, "stdin"), "w") as f:
                f.write(stdin)
        self.failures.append("%s: %s\n  command: %s\n  stderr: %s\n  inputs kept in %s" %
                             (verb, what, " ".join(map(str, argv)), stderr.strip()[:500], saved))

    # ---- per-verb cases ----
    def maybe(self, doc):
        return mutate_json(doc, self.rng) if self.rng.random() < 0.75 else (json.dumps(doc), "valid")

    def json_check(self, fmt):
        def check(path):
            with open(path) as f:
                d = json.load(f)
            assert d.get("format") == fmt and "version" in d, "no format/version " + fmt
        return check

    def evaluate(self):
        prob, sol = self.mlsys_solution
        if self.rng.random() < 0.5:
            pt, st = self.maybe(prob)[0], json.dumps(sol)
        else:
            pt, st = json.dumps(prob), self.maybe(sol)[0]
        args = [self.cli, "evaluate", self.file("ev_p.json", pt), self.file("ev_s.json", st)]
        if self.rng.random() < 0.5:
            args.append("--json")
            self.run("evaluate", args, [], None, check=lambda out: assert_format(out, "scratchplan-evaluation"))
        else:
            self.run("evaluate", args, [], None)

    def schedule(self, tool=False):
        text, _ = self.maybe(self.rng.choice(self.mlsys_problems))
        pp = self.file("sc_p.json", text)
        o = self.out("sc_s.json")
        limit = self.rng.choice([0.05, 0.2, 0.5])
        flags = self.flag_noise([("--time-limit", ["0.1", "-1", "nan", "inf", "1e9"]), ("--threads", ["1", "0", "1000", "-2"]),
                                 ("--seed", ["-1", "x", "7"])], limit)
        if tool:
            argv = [self.mlsys, pp, o] + flags
        else:
            argv = [self.cli, "schedule", pp, "-o", o] + flags
            if self.rng.random() < 0.2:
                argv += ["--max-segment-ops", self.rng.choice(["0", "-3", "4", "abc"])]

        def check(_):
            self.json_check("mlsys2026-solution")(o)
            r = subprocess.run([self.cli, "evaluate", pp, o], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, "evaluate rejects the schedule: " + r.stderr.strip()[:200]
        self.run("mlsys" if tool else "schedule", argv, [o], self.limit_of(flags), check=check)

    def flag_noise(self, options, limit):
        """Mostly --time-limit `limit` and --threads 1; sometimes an out-of-range value instead."""
        flags = ["--time-limit", str(limit)] if any(o[0] == "--time-limit" for o in options) else []
        if any(o[0] == "--threads" for o in options):
            flags += ["--threads", "1"]
        if self.rng.random() < 0.2:
            name, values = self.rng.choice(options)
            if name in flags:
                i = flags.index(name)
                del flags[i:i + 2]
            flags += [name, self.rng.choice(values)]
        return flags

    @staticmethod
    def limit_of(flags):
        if "--time-limit" in flags:
            try:
                v = float(flags[flags.index("--time-limit") + 1])
                if math.isfinite(v) and 0 <= v < 100:
                    return v
            except ValueError:
                pass
            return 0.5  # rejected values must fail at once
        return None

    def alloc(self):
        doc = random_alloc_problem(self.rng)
        is_csv = self.rng.random() < 0.4
        if is_csv:
            text = alloc_csv(doc)
            if self.rng.random() < 0.75:
                text, _ = mutate_csv(text, self.rng)
            pp = self.file("al_p.csv", text)
        else:
            text, _ = self.maybe(doc)
            pp = self.file("al_p.json", text)
        o = self.out(self.rng.choice(["al_o.json", "al_o.csv"]))
        svg = self.out("al_o.svg") if self.rng.random() < 0.3 else None
        objective = self.rng.choice(["pack", "pack", "select"])
        capacity = self.rng.choice([None, 256, 1024, 4096])
        argv = [self.cli, "alloc", pp, "-o", o, "--objective", objective]
        if capacity is not None:
            argv += ["--capacity", str(capacity)]
        if self.rng.random() < 0.3 and objective == "pack":
            argv.append("--minimize")
        argv += self.flag_noise([("--time-limit", ["-1", "nan", "0.1"]), ("--threads", ["0", "1000"]),
                                 ("--capacity", ["-5", "1e3", "x", "99999999999999999999"]),
                                 ("--solver", ["nope", "sweep", "greedy"])], 0.2)
        if svg:
            argv += ["--svg", svg]
        outs = [o] + ([svg] if svg else [])
        caps = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--capacity"]
        cap = None
        if len(caps) == 1 and caps[0].isdigit():
            cap = int(caps[0])
        elif not caps and not is_csv:
            try:
                cap = json.loads(text).get("capacity")
            except Exception:  # noqa: BLE001 - a broken document is rejected before any check
                cap = None
        minimize = "--minimize" in argv

        def check(_):
            check_alloc_plan(text, is_csv, o, None if (minimize or not isinstance(cap, int)) else cap, objective)
        self.run("alloc", argv, outs, self.limit_of(argv), check=check)

    def layout(self):
        rank = self.rng.randint(0, 4)
        size = ",".join(str(self.rng.choice([1, 3, 64, 100, 150, -1, 0, 2 ** 62])) for _ in range(rank))
        argv = [self.cli, "layout", "--size", size, "--dtype", self.rng.choice(["fp16", "bf16", "fp32", "int4", "fp99", ""])]
        if self.rng.random() < 0.3:
            argv += ["--dim-order", ",".join(str(self.rng.randint(-1, rank)) for _ in range(rank))]
        if self.rng.random() < 0.5:
            argv.append("--dma")
        argv.append("--json")
        self.run("layout", argv, [], None, check=lambda out: assert_format(out, "scratchplan-layout"))

    def divide(self):
        text, _ = self.maybe(self.rng.choice(self.programs))
        argv = [self.cli, "divide", self.file("dv_p.json", text), "--cores",
                self.rng.choice(["1", "8", "32", "0", "-1", "33", "x"]), "--json"]
        self.run("divide", argv, [], None, check=lambda out: assert_format(out, "scratchplan-division"))

    def plan(self):
        text, _ = self.maybe(self.rng.choice(self.programs))
        pp = self.file("pl_p.json", text)
        o = self.out("pl_o.json")
        svg = self.out("pl_o.svg") if self.rng.random() < 0.3 else None
        argv = [self.cli, "plan", pp, "-o", o, "--cores", self.rng.choice(["1", "4", "32"])]
        argv += self.flag_noise([("--time-limit", ["-1", "nan"]), ("--cores", ["0", "-1", "33"]), ("--stage", ["0", "5", "2"]),
                                 ("--capacity", ["-5", "0", "4096"]), ("--hbm-gbps", ["0", "nan", "-1", "100"])], 0.2)
        if self.rng.random() < 0.2:
            hw = {"lx_bytes": 2097152, "max_cores": 32}
            htext, _ = self.maybe(hw)
            argv += ["--hardware", self.file("pl_hw.json", htext)]
        if svg:
            argv += ["--svg", svg]
        self.run("plan", argv, [o] + ([svg] if svg else []), self.limit_of(argv),
                 check=lambda _: self.json_check("scratchplan-lx-plan")(o))

    def nki(self, sub):
        text, _ = self.maybe(self.rng.choice(self.kernels))
        kp = self.file("nk_k.json", text)
        argv = [self.cli, "nki", sub, kp]
        outs = []
        if self.rng.random() < 0.15:
            htext, _ = self.maybe(self.nki_hw)
            argv += ["--hardware", self.file("nk_hw.json", htext)]
        if sub == "plan":
            o = self.out("nk_o.json")
            argv += ["-o", o]
            outs.append(o)
            argv += self.flag_noise([("--time-limit", ["-1", "nan"]), ("--max-buffers", ["0", "2000", "4"])], 0.2)

            def check(_):
                self.json_check("scratchplan-nki-kernel")(o)
                r = subprocess.run([self.cli, "nki", "check", o], capture_output=True, text=True, timeout=60)
                assert r.returncode == 0, "nki check rejects the plan: " + r.stderr.strip()[:200]
            self.run("nki plan", argv, outs, self.limit_of(argv), check=check)
        else:
            if self.rng.random() < 0.3:
                svg = self.out("nk_c.svg")
                argv += ["--svg", svg]
                outs.append(svg)
            self.run("nki check", argv, outs, None)

    def bad_outputs(self):
        """Unwritable or conflicting output paths fail at once with exit 2."""
        bad = self.rng.choice([os.path.join(self.tmp, "no_such_dir", "x.json"), self.tmp, "/proc/x.json"])
        verb = self.rng.choice(["plan", "alloc", "schedule", "nki"])
        good = self.out("bo_ok.json")
        if verb == "plan":
            argv = [self.cli, "plan", os.path.join(ROOT, "examples/programs/softmax_lastdim.json"), "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--svg", bad]])
        elif verb == "alloc":
            p = self.file("bo_a.json", json.dumps(random_alloc_problem(self.rng)))
            argv = [self.cli, "alloc", p, "--capacity", "100000", "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--svg", bad]])
        elif verb == "schedule":
            argv = [self.cli, "schedule", os.path.join(ROOT, "examples/mlsys/mlp_block.json"), "--time-limit", "5", "-o", bad]
        else:
            argv = [self.cli, "nki", "plan", os.path.join(ROOT, "examples/nki/load_exp.json"), "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--svg", bad]])
        p = self.run("bad-output", argv, [good], 0.0)
        if p is not None and p.returncode != 2:
            self.fail("bad-output", argv, "exit %d, expected 2" % p.returncode, p.stderr, None)

    def stdin_stdout(self):
        """'-' reads standard input and writes standard output (pure JSON there)."""
        prog = json.dumps(self.rng.choice(self.programs))
        argv = [self.cli, "plan", "-", "-o", "-", "--time-limit", "0.1", "--report"]
        self.run("plan -", argv, [], 0.1, stdin=prog, check=lambda out: assert_format(out, "scratchplan-lx-plan"))

    def one(self):
        r = self.rng.random()
        table = [(0.12, self.evaluate), (0.22, self.schedule), (0.26, lambda: self.schedule(tool=True)), (0.42, self.alloc),
                 (0.50, self.layout), (0.60, self.divide), (0.72, self.plan), (0.82, lambda: self.nki("check")),
                 (0.92, lambda: self.nki("plan")), (0.96, self.bad_outputs), (1.01, self.stdin_stdout)]
        for p, f in table:
            if r < p:
                f()
                return


def assert_format(stdout, fmt):
    d = json.loads(stdout)
    assert d.get("format") == fmt and "version" in d, "stdout JSON without format/version " + fmt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--mlsys", required=True)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    f = Fuzzer(os.path.abspath(a.cli), os.path.abspath(a.mlsys), a.seed, a.verbose)
    t0 = time.monotonic()
    while f.runs < a.runs:
        f.one()
    print("%d runs in %.1f s (seed %d): %s" % (f.runs, time.monotonic() - t0, a.seed,
                                              ", ".join("%s %d" % kv for kv in sorted(f.counts.items()))))
    if f.failures:
        print("%d failures:" % len(f.failures))
        for x in f.failures[:50]:
            print(x)
        return 1
    if not a.keep:
        shutil.rmtree(f.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
