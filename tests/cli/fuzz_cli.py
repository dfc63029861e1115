#!/usr/bin/python3
"""End-to-end fuzzer of the scratchplan CLI (issue 11, acceptance).

Every verb (evaluate, schedule, alloc, layout, divide, plan, nki check, nki plan, and the contest
entry point mlsys) gets random valid inputs (generated MLSys problems, NKI kernels, tensor
programs and alloc problems, plus the bundled examples) and broken ones: JSON and CSV mutated by
dropped keys, misspelt keys, wrong types, negative/huge numbers, NaN, truncation and cycles,
out-of-range flag values, a directory as input, "-" for stdin/stdout, and unwritable or
conflicting output paths. Each run must end in one of:

  exit 0  every requested output exists (SVGs parse as XML), JSON outputs carry "format" and
          "version" and hold no null number, and an independent check accepts them: schedules
          `scratchplan evaluate --check-reported`; NKI plans `scratchplan nki check`; alloc plans
          and LX plans the overlap/capacity/totals checks written here;
  exit 2  exactly one line on stderr naming the input file, <stdin> or the flag, and no output
          file (a verdict of `nki check` keeps its --svg picture, like its report); flags known
          to be invalid and directory inputs must give exit 2;

never exit 1, never a signal, never a temporary file left behind, never a run longer than its
time limit x 1.1 + a fixed 3 s slack (process start and input reading on a loaded machine;
verbs without a limit get 10 s).

  /usr/bin/python3 tests/cli/fuzz_cli.py --cli build/release/scratchplan --mlsys build/release/mlsys \
      --runs 1500 --seed 1           # the ctest (cli_e2e_fuzz), about 40 s
  ... --runs 20000 --seed $RANDOM    # longer runs (scripts/fuzz_cli.sh)
  ... --scale                        # also 20k..120k-buffer alloc instances under a time limit

Inputs come only from the repository (examples/, tests/data/) and the generators below. Same
seed, same runs.
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
import xml.etree.ElementTree as ET

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
    kind = rng.choice(["drop", "typo", "type", "number", "number", "extra", "dup", "nan", "truncate", "cycle", "none",
                       "dupkey"])
    locs = paths_of(doc)
    if kind in ("drop", "typo", "type", "number", "dup", "extra") and not locs:
        kind = "none"
    dicts_with_keys = [c for c, _ in locs if isinstance(c, dict) and c] + ([doc] if isinstance(doc, dict) and doc else [])
    if kind == "dupkey" and not dicts_with_keys:
        kind = "none"
    if kind == "dupkey":
        # A key written twice in one object (json.dumps cannot write one: a marker key is
        # replaced in the text). Every reader must refuse it: the last value would win silently.
        c = rng.choice(dicts_with_keys)
        k = rng.choice(list(c))
        c["\u0001dup"] = copy.deepcopy(rng.choice([c[k], 0, 1, "x"]))
        text = json.dumps(doc).replace(json.dumps("\u0001dup"), json.dumps(k), 1)
        return text, kind
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


def random_alloc_problem(rng, scale=False):
    n = rng.randint(20000, 120000) if scale else rng.randint(1, 30)
    bufs = []
    horizon = n if scale else 40
    for i in range(n):
        s = rng.randint(0, horizon)
        bufs.append({"id": "b%d" % i, "start": s, "end": s + rng.randint(1, 20), "size": rng.randint(1, 64) * 8})
    doc = {"buffers": bufs}
    if rng.random() < 0.5:
        doc["capacity"] = rng.randint(64, 2048)
    return doc


def random_mlsys_problem(rng):
    """A random valid MLSys problem: a DAG of MatMul and Pointwise ops with consistent shapes."""
    dims = [64, 128, 256, 512]
    widths, heights, inputs, outputs, costs, types = [], [], [], [], [], []

    def tensor(w, h):
        widths.append(w)
        heights.append(h)
        return len(widths) - 1
    live = [tensor(rng.choice(dims), rng.choice(dims)) for _ in range(rng.randint(1, 3))]
    for _ in range(rng.randint(1, 6)):
        a = rng.choice(live)
        if rng.random() < 0.5:  # MatMul: a (h x k) @ new or existing (k x n)
            ks = [t for t in live if heights[t] == widths[a] and t != a]
            b = rng.choice(ks) if ks and rng.random() < 0.5 else tensor(rng.choice(dims), widths[a])
            out = tensor(widths[b], heights[a])
            inputs.append([a, b])
            types.append("MatMul")
        else:
            same = [t for t in live if widths[t] == widths[a] and heights[t] == heights[a] and t != a]
            ins = [a] + ([rng.choice(same)] if same and rng.random() < 0.5 else [])
            out = tensor(widths[a], heights[a])
            inputs.append(ins)
            types.append("Pointwise")
        outputs.append([out])
        costs.append(rng.choice([100, 500, 2000, 8000]))
        live.append(out)
    native = rng.choice([64, 128])
    return {"widths": widths, "heights": heights, "inputs": inputs, "outputs": outputs, "base_costs": costs,
            "op_types": types, "fast_memory_capacity": rng.choice([20000, 60000, 100000, 400000]),
            "slow_memory_bandwidth": rng.choice([10, 20, 100]), "native_granularity": [native, native]}


def random_kernel(rng):
    """A random NKI kernel: load -> compute (-> compute) -> store over a loop, automatic or
    modulo allocation (possibly too few tiles: `nki check` must then find the violations)."""
    n = rng.randint(1, 12)
    free = rng.choice([128, 256, 512, 1024])
    part = rng.choice([32, 64, 128])
    tensors = [{"name": "x", "buffer": "hbm", "role": "input", "blocks": [n], "partitions": part, "free": [free]},
               {"name": "y", "buffer": "hbm", "role": "output", "blocks": [n], "partitions": part, "free": [free]}]
    stages = rng.randint(1, 3)
    body = []
    prev = "x"
    base = 0
    for s in range(stages):
        t = {"name": "t%d" % s, "buffer": "sbuf", "blocks": [n], "partitions": part, "free": [free]}
        if rng.random() < 0.4:
            tiles = rng.randint(1, 3)
            t["alloc"] = {"kind": "mod_alloc", "base_addr": base, "num_free_tiles": [tiles]}
            base += tiles * free * 2
        tensors.append(t)
        body.append({"name": "op%d" % s, "engine": "DMA" if s == 0 else rng.choice(["Scalar", "Vector", "GpSimd"]),
                     "cost": rng.choice([100, 500, 1000]), "reads": [{"tensor": prev, "block": ["i"]}],
                     "writes": [{"tensor": t["name"], "block": ["i"]}]})
        prev = t["name"]
    body.append({"name": "store", "engine": "DMA", "cost": 500, "reads": [{"tensor": prev, "block": ["i"]}],
                 "writes": [{"tensor": "y", "block": ["i"]}]})
    return {"hardware": "neuroncore-v2", "tensors": tensors, "body": [{"loop": "i", "trip": n, "body": body}]}


def random_program(rng):
    """A random valid tensor program: a chain of pointwise ops, row reductions and matmuls."""
    rows = rng.choice([64, 256, 1024])
    cols = rng.choice([128, 512, 2048])
    tensors = [{"name": "x", "shape": [rows, cols], "dtype": rng.choice(["fp16", "fp32"]), "graph_input": True}]
    ops = []
    cur, shape = "x", [rows, cols]
    for i in range(rng.randint(1, 5)):
        kind = rng.choice(["pointwise", "pointwise", "reduction", "matmul"])
        out = "t%d" % i
        if kind == "pointwise":
            tensors.append({"name": out, "shape": list(shape), "dtype": tensors[0]["dtype"]})
            ops.append({"name": "op%d" % i, "kind": "pointwise", "payload": "exp", "inputs": [cur], "outputs": [out],
                        "iterator_types": ["parallel", "parallel"], "indexing_maps": ["(d0, d1) -> (d0, d1)"] * 2})
        elif kind == "reduction":
            tensors.append({"name": out, "shape": [shape[0], 1], "dtype": tensors[0]["dtype"], "dim_order": [0, 1, -1]})
            ops.append({"name": "op%d" % i, "kind": "reduction", "payload": "sum", "inputs": [cur], "outputs": [out],
                        "iterator_types": ["parallel", "reduction"],
                        "indexing_maps": ["(d0, d1) -> (d0, d1)", "(d0, d1) -> (d0, 0)"]})
            shape = [shape[0], 1]
        else:
            n = rng.choice([128, 512])
            w = "w%d" % i
            tensors.append({"name": w, "shape": [shape[1], n], "dtype": tensors[0]["dtype"], "graph_input": True})
            tensors.append({"name": out, "shape": [shape[0], n], "dtype": tensors[0]["dtype"]})
            ops.append({"name": "op%d" % i, "kind": "matmul", "payload": "matmul", "inputs": [cur, w], "outputs": [out],
                        "iterator_types": ["parallel", "parallel", "reduction"],
                        "indexing_maps": ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"]})
            shape = [shape[0], n]
        cur = out
    tensors[-1]["graph_output"] = True
    return {"format": "scratchplan-program", "version": 1, "name": "random", "tensors": tensors, "ops": ops}


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


def check_lx_plan(path):
    """Independent check of an LX plan: resident segments aligned and inside the per-core LX, no two
    buffers' segments overlap in address while their op ranges overlap (except an in-place
    hand-off: the same address at the one op where one ends and the other starts), and the
    totals add up and respect the lower bound."""
    with open(path) as f:
        d = json.load(f)
    assert d.get("format") == "scratchplan-lx-plan" and "version" in d, "LX plan without format/version"
    cap, align = d["capacity_per_core"], d["hardware"]["alignment"]
    segs = []
    for b in d["buffers"]:
        if b["location"] != "lx":
            continue
        for sg in b["lx_segments"]:
            a = sg["address"]
            assert a >= 0 and a % align == 0 and a + b["per_core_bytes"] <= cap, "%s at %d outside LX" % (b["name"], a)
            assert sg["first_op"] <= sg["last_op"], "%s: empty segment" % b["name"]
            segs.append((sg["first_op"], sg["last_op"], a, a + b["per_core_bytes"], b["name"]))
    for i in range(len(segs)):
        for j in range(i + 1, len(segs)):
            x, y = segs[i], segs[j]
            if x[4] == y[4] or x[3] <= x[2] or y[3] <= y[2]:
                continue
            lo, hi = max(x[0], y[0]), min(x[1], y[1])
            if lo > hi or not (x[2] < y[3] and y[2] < x[3]) or (lo == hi and x[2] == y[2]):
                continue
            raise AssertionError("LX segments of %s and %s overlap" % (x[4], y[4]))
    t = d["totals"]
    assert t["hbm_bytes"] == t["hbm_read_bytes"] + t["hbm_write_bytes"], "HBM totals do not add up"
    assert t["hbm_bytes"] >= t["lower_bound_hbm_bytes"], "HBM bytes below the lower bound"


# null is legal only where a format says "none": a spilled buffer's offset, a traversal order,
# an alloc plan's capacity when none was given.
NULL_OK = {"offset", "traversal_orders", "address", "capacity"}


def no_nulls(path):
    """Our JSON never holds null for a number (an inf or nan written by the library)."""
    with open(path) as f:
        doc = json.load(f)

    def walk(x, key):
        if x is None and key not in NULL_OK:
            raise AssertionError("null at %s in %s" % (key, os.path.basename(path)))
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, key)
    walk(doc, "$")


class Fuzzer:
    def __init__(self, cli, mlsys, seed, verbose, scale=False):
        self.cli, self.mlsys, self.verbose, self.scale = cli, mlsys, verbose, scale
        self.rng = random.Random(seed)
        self.tmp = tempfile.mkdtemp(prefix="sp_fuzz_")
        self.failures = []
        self.runs = 0
        self.counts = {}
        self.mutations = set()  # labels of the documents mutated for the next run
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

    def input_arg(self, name, text, stdin_ok=True):
        """The path of a file holding `text`; sometimes "-" (the text then goes to stdin) or a
        directory (which must be reported as one). Returns (argument, stdin text, kind)."""
        r = self.rng.random()
        if stdin_ok and r < 0.15:
            return "-", text, "stdin"
        if r > 0.97:
            return self.tmp, None, "dir"
        return self.file(name, text), None, "file"

    def run(self, verb, argv, outputs, limit, stdin=None, check=None, expect=None, verdict_outputs=(), printed=None):
        """Runs one command and checks the contract; `check(stdout)` validates an accepted run.
        `expect` forces an exit code (2 for a known-bad flag or input); `verdict_outputs` are
        outputs that an exit 2 verdict (violations found) still writes, like a report. Lines
        starting with `printed` are a Python kernel's own output (on stderr, not counted)."""
        self.runs += 1
        self.counts[verb] = self.counts.get(verb, 0) + 1
        if "dupkey" in self.mutations and expect is None:
            expect = 2  # a key repeated in any document read is bad input
        self.mutations = set()
        budget = (limit * 1.1 + 3.0) if limit is not None else 10.0
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, input=stdin if stdin is not None else "", capture_output=True, text=True,
                               timeout=budget + 30)
        except subprocess.TimeoutExpired:
            self.fail(verb, argv, "hung (killed after %.0f s)" % (budget + 30), "", stdin)
            return None
        wall = time.monotonic() - t0
        err_lines = [l for l in p.stderr.splitlines() if printed is None or not l.startswith(printed)]
        if printed is not None and printed in p.stdout:
            self.fail(verb, argv, "the kernel's own output reached stdout", p.stderr, stdin)
        if wall > budget:
            self.fail(verb, argv, "took %.2f s, limit %.2f s" % (wall, budget), p.stderr, stdin)
        if expect is not None and p.returncode != expect:
            self.fail(verb, argv, "exit %d, expected %d" % (p.returncode, expect), p.stderr, stdin)
        leftovers = [f for f in os.listdir(self.tmp) if f.startswith(".")]
        if leftovers:
            self.fail(verb, argv, "temporary files left behind: " + ", ".join(leftovers), p.stderr, stdin)
            for f in leftovers:
                os.remove(os.path.join(self.tmp, f))
        if p.returncode == 2:
            if len(err_lines) != 1 or not err_lines[0].strip():
                self.fail(verb, argv, "exit 2 with %d stderr lines" % len(err_lines), p.stderr, stdin)
            elif not self.located(err_lines[0], argv):
                self.fail(verb, argv, "exit 2 line names no input file, <stdin> or flag", p.stderr, stdin)
            verdict = "allocation violation" in p.stderr or "invalid schedule" in p.stderr
            for o in outputs:
                if os.path.exists(o) and not (verdict and o in verdict_outputs):
                    self.fail(verb, argv, "exit 2 left output " + o, p.stderr, stdin)
                if verdict and o in verdict_outputs and not os.path.exists(o):
                    self.fail(verb, argv, "a verdict without its report " + o, p.stderr, stdin)
        elif p.returncode == 0:
            for o in outputs:
                if not os.path.exists(o):
                    self.fail(verb, argv, "exit 0 without output " + o, p.stderr, stdin)
                    return p
                if o.endswith(".json"):
                    try:
                        no_nulls(o)
                    except AssertionError as e:
                        self.fail(verb, argv, str(e), p.stderr, stdin)
                if o.endswith(".svg"):
                    try:
                        ET.parse(o)
                    except ET.ParseError as e:
                        self.fail(verb, argv, "invalid SVG: %s" % e, p.stderr, stdin)
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

    def located(self, line, argv):
        """One line naming where: an input path (or <stdin>), a flag, or the CLI parser; after the
        program name, which starts every error line."""
        prog = "mlsys: " if argv[0] == self.mlsys else "scratchplan: "
        if not line.startswith(prog):
            return False
        line = line[len(prog):]
        if line.endswith(" (see --help)") or line.startswith("unknown verb "):
            return True  # the flag parser (unknown flag, missing argument) names the flag itself
        names = [a for a in argv[1:] if isinstance(a, str) and a not in ("-",) and not a.startswith("-")]
        if any(n in line for n in names if "/" in n) or "<stdin>" in line:
            return True
        # the NKI tracer names a Python kernel by its file name and line (kernel.py:12: ...)
        if any(line.startswith(os.path.basename(n) + ":") for n in names if n.endswith(".py")):
            return True
        return any(a in line for a in argv if isinstance(a, str) and a.startswith("-") and len(a) > 1) or \
            "MLSYS_TIME_LIMIT" in line

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
        text, label = mutate_json(doc, self.rng) if self.rng.random() < 0.7 else (json.dumps(doc), "valid")
        self.mutations.add(label)  # (the next run() expects exit 2 for a repeated key)
        return text, label

    def json_check(self, fmt):
        def check(path):
            with open(path) as f:
                d = json.load(f)
            assert d.get("format") == fmt and "version" in d, "no format/version " + fmt
        return check

    def dest(self, name, stdout_ok=True):
        """An output path, or sometimes "-" (standard output)."""
        if stdout_ok and self.rng.random() < 0.15:
            return "-"
        return self.out(name)

    def saved_stdout(self, out, name):
        """Writes what a "-" output printed to a file, so it can be checked like the file."""
        return self.file(name, out)

    def expect_of(self, kind, bad_flag, mutation=None):
        if kind == "dir" or bad_flag or mutation == "dupkey":
            return 2
        return None

    def evaluate(self):
        prob, sol = self.mlsys_solution
        if self.rng.random() < 0.3:
            prob = random_mlsys_problem(self.rng)
            sol = None
        if sol is None or self.rng.random() < 0.5:
            pt, st = self.maybe(prob)[0], json.dumps(sol if sol is not None else self.mlsys_solution[1])
        else:
            pt, st = json.dumps(prob), self.maybe(sol)[0]
        stdin = None
        if self.rng.random() < 0.5:
            pa, stdin, kind = self.input_arg("ev_p.json", pt)
            sa = self.file("ev_s.json", st)
        else:
            pa = self.file("ev_p.json", pt)
            sa, stdin, kind = self.input_arg("ev_s.json", st)
        args = [self.cli, "evaluate", pa, sa]
        # an invalid schedule keeps its trace (a verdict, like nki check's picture)
        outs = []
        if self.rng.random() < 0.2:
            outs.append(self.out("ev_t.json"))
            args += ["--trace", outs[0]]
        if self.rng.random() < 0.5:
            args.append("--json")
            self.run("evaluate", args, outs, None, stdin=stdin, expect=self.expect_of(kind, False), verdict_outputs=outs,
                     check=lambda out: assert_format(out, "scratchplan-evaluation"))
        else:
            self.run("evaluate", args, outs, None, stdin=stdin, expect=self.expect_of(kind, False), verdict_outputs=outs)

    def schedule(self, tool=False):
        doc = random_mlsys_problem(self.rng) if self.rng.random() < 0.5 else self.rng.choice(self.mlsys_problems)
        text, _ = self.maybe(doc)
        pa, stdin, kind = self.input_arg("sc_p.json", text)
        o = self.dest("sc_s.json")
        limit = self.rng.choice([0.05, 0.2, 0.5])
        flags, bad = self.flag_noise([("--time-limit", ["0.1", "-1", "nan", "inf", "1e9"]), ("--threads", ["1", "0", "1000", "-2"]),
                                      ("--seed", ["-1", "x", "7"])], limit)
        if tool:
            argv = [self.mlsys, pa, o] + flags
        else:
            argv = [self.cli, "schedule", pa, "-o", o] + flags
            if self.rng.random() < 0.2:
                v = self.rng.choice(["0", "-3", "4", "abc"])
                argv += ["--max-segment-ops", v]
                bad = bad or v != "4"
        outs = [o] if o != "-" else []
        if self.rng.random() < 0.2:
            outs.append(self.out("sc_t.json"))
            argv += ["--trace", outs[-1]]
        problem_file = pa if pa != "-" else self.file("sc_p_copy.json", text)

        def check(out):
            path = o if o != "-" else self.saved_stdout(out, "sc_stdout.json")
            self.json_check("mlsys2026-solution")(path)
            no_nulls(path)
            r = subprocess.run([self.cli, "evaluate", problem_file, path, "--check-reported"], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, "evaluate rejects the schedule: " + r.stderr.strip()[:200]
        self.run("mlsys" if tool else "schedule", argv, outs, self.limit_of(flags), stdin=stdin,
                 check=check, expect=self.expect_of(kind, bad))

    def flag_noise(self, options, limit):
        """Mostly --time-limit `limit` and --threads 1; sometimes another value, which may be out of
        range. Returns (flags, whether a value known to be invalid was given)."""
        flags = ["--time-limit", str(limit)] if any(o[0] == "--time-limit" for o in options) else []
        if any(o[0] == "--threads" for o in options):
            flags += ["--threads", "1"]
        bad = False
        if self.rng.random() < 0.2:
            name, values = self.rng.choice(options)
            if name in flags:
                i = flags.index(name)
                del flags[i:i + 2]
            v = self.rng.choice(values)
            flags += [name, v]
            bad = v in BAD_VALUES.get(name, ())
        return flags, bad

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

    def alloc_scale(self):
        """Large random instances: the time limit must hold at any size (issue 11 item 1)."""
        doc = random_alloc_problem(self.rng, scale=True)
        pa = self.file("as_p.csv", alloc_csv(doc))
        o = self.out("as_o.json")
        limit = self.rng.choice([0.5, 1.0, 2.0])
        argv = [self.cli, "alloc", pa, "-o", o, "--time-limit", str(limit)]
        argv += self.rng.choice([["--minimize"], ["--capacity", str(64 * 1024 * 1024)], ["--objective", "select", "--capacity",
                                                                                          str(4 * 1024 * 1024)]])
        self.run("alloc-scale", argv, [o], limit)

    def alloc(self):
        doc = random_alloc_problem(self.rng)
        is_csv = self.rng.random() < 0.4
        bad_doc = False
        if is_csv:
            text = alloc_csv(doc)
            if self.rng.random() < 0.7:
                text, _ = mutate_csv(text, self.rng)
            pa, stdin, kind = self.input_arg("al_p.csv", text)
            if pa == "-" and text.lstrip().startswith("{"):
                is_csv = False
        else:
            r = self.rng.random()
            if r < 0.08 and doc["buffers"]:
                # Every number of an alloc problem is an integer: a float, a numeric string or a
                # bool in its place is refused, never rounded.
                b = self.rng.choice(doc["buffers"])
                k = self.rng.choice(["size", "start", "end"])
                b[k] = self.rng.choice([b[k] + 0.5, b[k] + 0.7, str(b[k]), True, False])
                bad_doc = True
            elif r < 0.14 and doc["buffers"] and isinstance(doc.get("capacity"), int):
                # A buffer pinned so that it ends past the capacity: bad input naming it.
                b = self.rng.choice(doc["buffers"])
                b["offset"] = 2 ** 40  # (past every capacity this fuzzer gives, flag or document)
                bad_doc = True
            text, _ = (json.dumps(doc), "valid") if bad_doc else self.maybe(doc)
            pa, stdin, kind = self.input_arg("al_p.json", text)
            if pa == "-" and not text.lstrip().startswith("{"):
                is_csv = True  # standard input is read as CSV unless it starts with "{"
        o = self.dest(self.rng.choice(["al_o.json", "al_o.csv"]))
        svg = self.out("al_o.svg") if self.rng.random() < 0.3 else None
        objective = self.rng.choice(["pack", "pack", "select"])
        capacity = self.rng.choice([None, 256, 1024, 4096])
        argv = [self.cli, "alloc", pa, "-o", o, "--objective", objective]
        if capacity is not None:
            argv += ["--capacity", str(capacity)]
        bad = bad_doc
        if self.rng.random() < 0.3:
            argv.append("--minimize")
            bad = bad or objective == "select"
        noise, bad_flag = self.flag_noise([("--time-limit", ["-1", "nan", "0.1"]), ("--threads", ["0", "1000"]),
                                           ("--capacity", ["-5", "1e3", "x", "99999999999999999999"]),
                                           ("--solver", ["nope", "sweep", "greedy", "exact", "annealing"])], 0.2)
        argv += noise
        bad = bad or bad_flag
        solvers = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--solver"]
        if solvers and solvers[-1] in ("sweep", "greedy", "annealing") and "--threads" in argv:
            bad = True  # --threads applies to auto and exact only
        if svg:
            argv += ["--svg", svg]
        outs = ([o] if o != "-" else []) + ([svg] if svg else [])
        caps = [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "--capacity"]
        cap = None
        if len(caps) == 1 and caps[-1].isdigit():
            cap = int(caps[-1])
        elif not caps and not is_csv:
            try:
                cap = json.loads(text).get("capacity")
            except Exception:  # noqa: BLE001 - a broken document is rejected before any check
                cap = None
        minimize = "--minimize" in argv

        def check(out):
            path = o if o != "-" else self.saved_stdout(out, "al_stdout.json")
            check_alloc_plan(text, is_csv, path, None if (minimize or not isinstance(cap, int)) else cap, objective)
        self.run("alloc", argv, outs, self.limit_of(argv), stdin=stdin, check=check, expect=self.expect_of(kind, bad))

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

    def program_text(self):
        doc = random_program(self.rng) if self.rng.random() < 0.4 else self.rng.choice(self.programs)
        return self.maybe(doc)[0]

    def divide(self):
        pa, stdin, kind = self.input_arg("dv_p.json", self.program_text())
        cores = self.rng.choice(["1", "8", "32", "0", "-1", "33", "x"])
        argv = [self.cli, "divide", pa, "--cores", cores, "--json"]
        self.run("divide", argv, [], None, stdin=stdin, expect=self.expect_of(kind, cores in ("0", "-1", "33", "x")),
                 check=lambda out: assert_format(out, "scratchplan-division"))

    def plan(self):
        text = self.program_text()
        stdin = None
        hw_stdin = self.rng.random() < 0.1
        if hw_stdin:
            pa, kind = self.file("pl_p.json", text), "file"
        else:
            pa, stdin, kind = self.input_arg("pl_p.json", text)
        o = self.dest("pl_o.json")
        svg = self.out("pl_o.svg") if self.rng.random() < 0.3 else None
        argv = [self.cli, "plan", pa, "-o", o, "--cores", self.rng.choice(["1", "4", "32"])]
        noise, bad = self.flag_noise([("--time-limit", ["-1", "nan"]), ("--cores", ["0", "-1", "33"]), ("--stage", ["0", "5", "2"]),
                                      ("--capacity", ["-5", "0", "4096"]), ("--hbm-gbps", ["0", "nan", "-1", "100", "1e-12"])], 0.2)
        argv += noise
        if hw_stdin or self.rng.random() < 0.2:
            hw = {"lx_bytes": 2097152, "max_cores": 32, "hbm_bytes_per_s": 1e11}
            htext, _ = self.maybe(hw)
            if hw_stdin:
                argv += ["--hardware", "-"]
                stdin = htext
            else:
                argv += ["--hardware", self.file("pl_hw.json", htext)]
        if svg:
            argv += ["--svg", svg]
        trace = self.out("pl_t.json") if self.rng.random() < 0.2 else None
        if trace:
            argv += ["--trace", trace]

        def check(out):
            path = o if o != "-" else self.saved_stdout(out, "pl_stdout.json")
            check_lx_plan(path)
        self.run("plan", argv, ([o] if o != "-" else []) + ([svg] if svg else []) + ([trace] if trace else []),
                 self.limit_of(argv), stdin=stdin,
                 check=check, expect=self.expect_of(kind, bad))

    def nki(self, sub):
        doc = random_kernel(self.rng) if self.rng.random() < 0.4 else self.rng.choice(self.kernels)
        text, _ = self.maybe(doc)
        stdin = None
        hw_stdin = self.rng.random() < 0.05
        if hw_stdin:
            ka, kind = self.file("nk_k.json", text), "file"
        else:
            ka, stdin, kind = self.input_arg("nk_k.json", text)
        argv = [self.cli, "nki", sub, ka]
        outs = []
        if hw_stdin or self.rng.random() < 0.15:
            htext, _ = self.maybe(self.nki_hw)
            if hw_stdin:
                argv += ["--hardware", "-"]
                stdin = htext
            else:
                argv += ["--hardware", self.file("nk_hw.json", htext)]
        if sub == "plan":
            o = self.dest("nk_o.json")
            argv += ["-o", o]
            if o != "-":
                outs.append(o)
            noise, bad = self.flag_noise([("--time-limit", ["-1", "nan"]), ("--max-buffers", ["0", "2000", "4"])], 0.2)
            argv += noise
            if self.rng.random() < 0.2:
                svg = self.out("nk_p.svg")
                argv += ["--svg", svg]
                outs.append(svg)

            def check(out):
                path = o if o != "-" else self.saved_stdout(out, "nk_stdout.json")
                self.json_check("scratchplan-nki-kernel")(path)
                r = subprocess.run([self.cli, "nki", "check", path], capture_output=True, text=True, timeout=60)
                assert r.returncode == 0, "nki check rejects the plan: " + r.stderr.strip()[:200]
            self.run("nki plan", argv, outs, self.limit_of(argv), stdin=stdin, check=check, expect=self.expect_of(kind, bad))
        else:
            verdict = []
            if self.rng.random() < 0.3:
                svg = self.out("nk_c.svg")
                argv += ["--svg", svg]
                outs.append(svg)
                verdict.append(svg)
            json_out = self.rng.random() < 0.5
            if json_out:
                argv.append("--json")
            self.run("nki check", argv, outs, None, stdin=stdin, expect=self.expect_of(kind, False), verdict_outputs=verdict,
                     check=(lambda out: assert_format(out, "scratchplan-nki-check")) if json_out else None)

    def nki_python(self):
        """A Python kernel of ours that prints (stdout, logging), exits, raises or loops forever, in
        its body or its module code: a clean kernel that prints is exit 0 with its output on
        stderr; the others are exit 2 with one line, within --time-limit."""
        rng = self.rng
        say = "kernel-says:"
        pre, body, bad = [], [], False
        for _ in range(rng.randrange(1, 4)):
            what = rng.choice(["print", "log", "exit", "raise", "loop", "swallow", "sleep"])
            where = pre if rng.random() < 0.3 else body
            ind = "" if where is pre else "    "
            if what == "print":
                where.append(ind + "print(%r, %d)" % (say, rng.randrange(100)))
            elif what == "log":
                where.append(ind + "logging.getLogger('k').warning(%r)" % say)
            elif what == "exit":
                where.append(ind + rng.choice(["sys.exit()", "sys.exit(0)", "sys.exit(3)", "sys.exit('bye')"]))
                bad = True
            elif what == "raise":
                where.append(ind + rng.choice(["raise ValueError('no')", "raise KeyboardInterrupt", "1 // 0"]))
                bad = True
            elif what == "loop":
                where.append(ind + "while True:\n" + ind + "    pass")
                bad = True
            elif what == "swallow":
                where.append(ind + "while True:\n" + ind + "    try:\n" + ind + "        x = [0] * 10\n" + ind +
                             "    except BaseException:\n" + ind + "        pass")
                bad = True
            else:
                where.append(ind + "time.sleep(100)")
                bad = True
        src = ("import logging, sys, time\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
               "logging.basicConfig(stream=sys.stdout, level=logging.INFO, format='%s %%(message)s')\n" % say +
               "\n".join(pre) + "\n\n@nki.jit\ndef kernel(x):\n" + "\n".join(body) +
               "\n    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
               "    nl.store(out, value=nl.load(x))\n    return out\n")
        path = self.file("nk_py.py", src)
        sub = rng.choice(["check", "plan"])
        # endless kernels get a short limit; a clean one enough for the interpreter's start on a loaded machine
        limit = rng.choice(["0.5", "1"]) if bad else "10"
        argv = [self.cli, "nki", sub, path, "--input", "x=128x64:bf16", "--time-limit", limit]
        # KeyboardInterrupt is not a kernel error the tracer converts (it ends the tracer): exit 2 either way
        self.run("nki python", argv, [], float(limit), expect=2 if bad else 0, printed=say)

    def bad_outputs(self):
        """Unwritable or conflicting output paths fail at once with exit 2, writing nothing."""
        bad = self.rng.choice([os.path.join(self.tmp, "no_such_dir", "x.json"), self.tmp, "/proc/x.json"])
        verb = self.rng.choice(["plan", "alloc", "schedule", "mlsys", "evaluate", "nki", "nki check"])
        good = self.out("bo_ok.json")
        if verb == "plan":
            argv = [self.cli, "plan", os.path.join(ROOT, "examples/programs/softmax_lastdim.json"), "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--svg", bad], ["-o", good, "--svg", good],
                                     ["-o", good, "--trace", bad]])
        elif verb == "alloc":
            p = self.file("bo_a.json", json.dumps(random_alloc_problem(self.rng)))
            argv = [self.cli, "alloc", p, "--capacity", "100000", "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--svg", bad], ["-o", "-", "--svg", "-"]])
        elif verb == "schedule":
            argv = [self.cli, "schedule", os.path.join(ROOT, "examples/mlsys/mlp_block.json"), "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--trace", bad], ["-o", good, "--trace", good]])
        elif verb == "mlsys":
            argv = [self.mlsys, os.path.join(ROOT, "examples/mlsys/mlp_block.json"), bad, "--time-limit", "5"]
            argv += self.rng.choice([[], ["--trace", bad]])
        elif verb == "evaluate":
            argv = [self.cli, "evaluate", os.path.join(ROOT, "examples/mlsys/mlp_block.json"),
                    os.path.join(ROOT, "examples/mlsys/mlp_block_solution.json"), "--trace", bad]
        elif verb == "nki check":
            argv = [self.cli, "nki", "check", os.path.join(ROOT, "examples/nki/overlap_t0_t1.json"), "--svg", bad]
        else:
            argv = [self.cli, "nki", "plan", os.path.join(ROOT, "examples/nki/load_exp.json"), "--time-limit", "5"]
            argv += self.rng.choice([["-o", bad], ["-o", good, "--svg", bad]])
        self.run("bad-output", argv, [good], 0.0, expect=2)

    def bad_combos(self):
        """Contradictory flags, flags the chosen mode ignores, and two arguments on one stdin: exit 2
        at once, nothing written."""
        good = self.out("bc_ok.json")
        prob = os.path.join(ROOT, "examples/mlsys/mlp_block.json")
        kernel = os.path.join(ROOT, "examples/nki/load_exp.json")
        a = self.file("bc_a.json", json.dumps(random_alloc_problem(self.rng)))
        argv, stdin = self.rng.choice([
            ([self.cli, "schedule", prob, "-o", good, "--iterations", "10", "--time-limit", "1"], None),
            ([self.cli, "nki", "plan", kernel, "-o", good, "--single", "--max-buffers", "4"], None),
            ([self.cli, "alloc", a, "-o", good, "--capacity", "4096", "--objective", "select", "--minimize"], None),
            ([self.cli, "alloc", a, "-o", good, "--capacity", "4096", "--solver", self.rng.choice(["sweep", "greedy", "firstfit"]),
              self.rng.choice(["--seed", "--threads", "--iterations"]), "2"], None),
            ([self.cli, "alloc", a, "-o", good, "--capacity", "4096", "--solver", "annealing", "--exact-off", "memo"], None),
            ([self.cli, "evaluate", "-", "-"], json.dumps(self.mlsys_solution[0])),
            ([self.cli, "plan", "-", "--hardware", "-", "-o", good], json.dumps(self.programs[0])),
        ])
        self.run("bad-combo", argv, [good], 0.0, stdin=stdin, expect=2)

    def one(self):
        r = self.rng.random()
        table = [(0.12, self.evaluate), (0.22, self.schedule), (0.27, lambda: self.schedule(tool=True)), (0.42, self.alloc),
                 (0.48, self.layout), (0.58, self.divide), (0.72, self.plan), (0.815, lambda: self.nki("check")), (0.83, self.nki_python),
                 (0.95, lambda: self.nki("plan")), (0.98, self.bad_outputs), (1.01, self.bad_combos)]
        if self.scale and self.rng.random() < 0.05:
            self.alloc_scale()
            return
        for p, f in table:
            if r < p:
                f()
                return


# Flag values every verb must reject (exit 2) before doing any work.
BAD_VALUES = {
    "--time-limit": ("-1", "nan", "inf", "1e9"),
    "--threads": ("0", "1000", "-2"),
    "--seed": ("-1", "x"),
    "--capacity": ("-5", "1e3", "x", "99999999999999999999"),
    "--solver": ("nope",),
    "--cores": ("0", "-1", "33"),
    "--stage": ("0", "5"),
    "--hbm-gbps": ("0", "nan", "-1", "1e-12"),
    "--max-buffers": ("0", "2000"),
}


def assert_format(stdout, fmt):
    d = json.loads(stdout)
    assert d.get("format") == fmt and "version" in d, "stdout JSON without format/version " + fmt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--mlsys", required=True)
    ap.add_argument("--runs", type=int, default=300, help="most runs")
    ap.add_argument("--seconds", type=float, default=0.0,
                    help="time budget: stop after this many seconds (0 = none), once --min-runs are done")
    ap.add_argument("--min-runs", type=int, default=100, help="runs made whatever the budget")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--scale", action="store_true", help="also large alloc instances (20k..120k buffers) under a time limit")
    a = ap.parse_args()
    f = Fuzzer(os.path.abspath(a.cli), os.path.abspath(a.mlsys), a.seed, a.verbose, a.scale)
    t0 = time.monotonic()
    # The budget sizes the run on slow machines (sanitizers); the draws are the seed's whatever it is.
    while f.runs < a.runs:
        if a.seconds > 0 and f.runs >= a.min_runs and time.monotonic() - t0 > a.seconds:
            break
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
