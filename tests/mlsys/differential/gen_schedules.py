#!/usr/bin/env python3
"""Generates MLSys 2026 schedules (valid and invalid) and scores them with the reference
evaluator (the contest organizers' evaluate.py, which is not part of this repository) under the
default rules and --mm-compute native.

The output is stored in the repository (tests/data/mlsys2026/differential_cases.json.gz, see
tests/data/PROVENANCE.md) and the C++ differential test (tests/mlsys/differential_test.cpp) checks
that scratchplan's evaluator agrees on validity and total latency for every stored case. To
regenerate it, point --evaluator at a copy of the reference evaluate.py:

  gen_schedules.py --evaluator PATH/evaluate.py --out cases.json [--count 2400] [--seed 1]

Sources: the five public benchmarks and random problems (random DAGs of MatMul and Pointwise
ops with shapes that do not always divide the tile sizes). Schedules: random partitions into
connected subgraphs, recomputation, random granularities (some above native), retention,
traversal orders (raster, snake, column-major, random, broken), and deliberate defects (missing
op, wrong order, non-topological declared order, unavailable inputs).
"""
import argparse
import importlib.util
import json
import multiprocessing
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DATA = os.path.join(ROOT, "tests", "data", "mlsys2026")
EVALUATOR = None  # path of the reference evaluate.py (--evaluator)
MAX_STEPS = 2500  # per subgraph, to keep the Python reference fast

_ref = None


def ref():
    global _ref
    if _ref is None:
        spec = importlib.util.spec_from_file_location("ref_evaluate", EVALUATOR)
        _ref = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_ref)
    return _ref


def ceil_div(a, b):
    return -(-a // b)


# ---------------------------------------------------------------- random problems
DIMS = [32, 48, 64, 96, 128, 160, 200, 256, 320, 384, 512]


def random_problem(rng):
    widths, heights, inputs, outputs, costs, types = [], [], [], [], [], []

    def new_tensor(w, h):
        widths.append(w)
        heights.append(h)
        return len(widths) - 1

    produced = []  # tensors produced so far (candidates for consumption)
    n_ops = rng.randint(2, 10)
    for _ in range(n_ops):
        mm = rng.random() < 0.4
        pool = produced if produced and rng.random() < 0.8 else []
        if mm:
            if pool:
                lhs = rng.choice(pool)
            else:
                lhs = new_tensor(rng.choice(DIMS), rng.choice(DIMS))
            K = widths[lhs]
            rhs_cands = [t for t in produced if heights[t] == K and t != lhs]
            if rhs_cands and rng.random() < 0.4:
                rhs = rng.choice(rhs_cands)
            else:
                rhs = new_tensor(rng.choice(DIMS), K)
            out = new_tensor(widths[rhs], heights[lhs])
            inputs.append([lhs, rhs])
            types.append("MatMul")
        else:
            first = rng.choice(pool) if pool else new_tensor(rng.choice(DIMS), rng.choice(DIMS))
            ins = [first]
            for _ in range(rng.choice([0, 0, 1, 1, 2])):
                same = [t for t in produced if (widths[t], heights[t]) == (widths[first], heights[first]) and t not in ins]
                if same and rng.random() < 0.5:
                    ins.append(rng.choice(same))
                else:
                    ins.append(new_tensor(widths[first], heights[first]))
            out = new_tensor(widths[first], heights[first])
            inputs.append(ins)
            types.append("Pointwise")
        outputs.append([out])
        costs.append(rng.choice([100, 250, 500, 1000, 1500, 2000, 3000]))
        produced.append(out)
    native = rng.choice([128, 128, 128, 64])
    return {
        "widths": widths, "heights": heights, "inputs": inputs, "outputs": outputs,
        "base_costs": costs, "op_types": types,
        "fast_memory_capacity": rng.choice([8000, 20000, 35000, 50000, 100000, 300000]),
        "slow_memory_bandwidth": rng.choice([5, 10, 20, 50]),
        "native_granularity": [native, native],
    }


# ---------------------------------------------------------------- random schedules
class Graph:
    def __init__(self, p):
        self.p = p
        self.nop = len(p["inputs"])
        self.nt = len(p["widths"])
        self.producer = [-1] * self.nt
        self.consumers = [[] for _ in range(self.nt)]
        for o in range(self.nop):
            for t in p["outputs"][o]:
                self.producer[t] = o
            for t in p["inputs"][o]:
                self.consumers[t].append(o)
        indeg = [sum(1 for t in p["inputs"][o] if self.producer[t] >= 0) for o in range(self.nop)]
        ready = [o for o in range(self.nop) if indeg[o] == 0]
        self.topo = []
        while ready:
            o = ready.pop(0)
            self.topo.append(o)
            for t in p["outputs"][o]:
                for c in self.consumers[t]:
                    indeg[c] -= 1
                    if indeg[c] == 0:
                        ready.append(c)

    def is_mm(self, o):
        return self.p["op_types"][o] == "MatMul"

    def K(self, o):
        return self.p["widths"][self.p["inputs"][o][0]]


def sinks_of(g, ops):
    produced = {t for o in ops for t in g.p["outputs"][o]}
    consumed = {t for o in ops for t in g.p["inputs"][o]}
    return sorted(produced - consumed)


def partition(g, rng):
    fuse_p = rng.choice([0.0, 0.3, 0.6, 0.9])
    groups = []
    for o in g.topo:
        placed = False
        if groups and rng.random() < fuse_p:
            # join a recent group that produces one of o's inputs (keeps the group connected)
            for gi in range(len(groups) - 1, max(-1, len(groups) - 3), -1):
                prod = {t for x in groups[gi] for t in g.p["outputs"][x]}
                if any(t in prod for t in g.p["inputs"][o]):
                    groups[gi].append(o)
                    placed = True
                    break
        if not placed:
            groups.append([o])
    # order groups by the position of their last op in topological order
    pos = {o: i for i, o in enumerate(g.topo)}
    groups.sort(key=lambda grp: max(pos[o] for o in grp))
    for grp in groups:
        grp.sort(key=lambda o: pos[o])
    return groups


def recompute(g, groups, rng):
    # put the producer of an external input of a group into that group (recomputation)
    gi = rng.randrange(len(groups))
    grp = groups[gi]
    ext = [t for o in grp for t in g.p["inputs"][o] if g.producer[t] >= 0 and g.producer[t] not in grp]
    if ext:
        t = rng.choice(ext)
        grp.insert(0, g.producer[t])


def repair_availability(g, groups):
    """Makes inputs available: an ephemeral read two or more groups later is recomputed there
    (its producer joins the reading group); one read by the next group is retained (below)."""
    pos = {o: i for i, o in enumerate(g.topo)}
    for _ in range(8):
        changed = False
        made = {}
        for gi, grp in enumerate(groups):
            for o in grp:
                for t in g.p["outputs"][o]:
                    made.setdefault(t, gi)
        for gi, grp in enumerate(groups):
            prod_here = {t for o in grp for t in g.p["outputs"][o]}
            for o in list(grp):
                for t in g.p["inputs"][o]:
                    src = g.producer[t]
                    if src < 0 or t in prod_here or t not in made:
                        continue
                    j = made[t]
                    if j >= gi or j == gi - 1:
                        continue
                    other = groups[j]
                    eph = any(t in g.p["inputs"][x] for x in other) and g.consumers[t]
                    if eph and src not in grp:
                        grp.append(src)
                        prod_here.update(g.p["outputs"][src])
                        changed = True
            grp.sort(key=lambda x: pos[x])
        if not changed:
            break


def granularity(g, grp, rng, native):
    nw = nh = native
    def pick(n, full):
        r = rng.random()
        if r < 0.35:
            return n
        if r < 0.55:
            return max(1, n // 2)
        if r < 0.65:
            return max(1, n // 4)
        if r < 0.75:
            return max(1, (3 * n) // 4)
        return rng.randint(1, n)
    w, h = pick(nw, None), pick(nh, None)
    mms = [o for o in grp if g.is_mm(o)]
    if mms:
        K = g.K(mms[-1])
        r = rng.random()
        if r < 0.3:
            k = min(K, native)
        elif r < 0.5:
            k = max(1, min(K, native) // 2)
        else:
            k = rng.randint(1, min(K, native))
    else:
        k = rng.choice([1, 1, 64, 128])
    return [w, h, k]


def estimate_steps(g, grp, gran):
    sinks = sinks_of(g, grp)
    if not sinks:
        return 1
    W = max(g.p["widths"][t] for t in sinks)
    H = max(g.p["heights"][t] for t in sinks)
    tiles = ceil_div(W, gran[0]) * ceil_div(H, gran[1])
    Ks = [g.K(o) for o in grp if g.is_mm(o)]
    nk = ceil_div(max(Ks), min(gran[2], max(Ks))) if Ks else 1
    return tiles * nk


def traversal(rng, gran, g, grp):
    sinks = sinks_of(g, grp)
    if not sinks:
        return None
    W = max(g.p["widths"][t] for t in sinks)
    H = max(g.p["heights"][t] for t in sinks)
    nx, ny = ceil_div(W, gran[0]), ceil_div(H, gran[1])
    n = nx * ny
    r = rng.random()
    if r < 0.4:
        return None
    if r < 0.45:
        return list(range(n))
    if r < 0.65:
        out = []
        for y in range(ny):
            row = [y * nx + x for x in range(nx)]
            out += row if y % 2 == 0 else row[::-1]
        return out
    if r < 0.75:
        return [y * nx + x for x in range(nx) for y in range(ny)]
    order = list(range(n))
    rng.shuffle(order)
    return order


def random_schedule(p, rng):
    g = Graph(p)
    native = p["native_granularity"][0]
    groups = partition(g, rng)
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        recompute(g, groups, rng)
    # At most one deliberate defect per schedule, so that most schedules stay valid.
    defect = rng.choice([None] * 8 + ["swap", "reverse", "drop", "super_w", "super_k", "k_over_K",
                                      "bad_traversal", "foreign_retain", "no_retain"])
    if defect == "swap" and len(groups) > 1:
        i = rng.randrange(len(groups) - 1)
        groups[i], groups[i + 1] = groups[i + 1], groups[i]
    elif defect == "reverse":
        grp = rng.choice(groups)
        grp.reverse()
    elif defect == "drop" and len(groups) > 1:
        groups.pop(rng.randrange(len(groups)))
    repair = rng.random() < 0.85
    if repair:
        repair_availability(g, groups)
    grans, retains, travs = [], [], []
    for i, grp in enumerate(groups):
        gran = None
        for _ in range(6):
            cand = granularity(g, grp, rng, native)
            if estimate_steps(g, grp, cand) <= MAX_STEPS:
                gran = cand
                break
        if gran is None:
            mms = [o for o in grp if g.is_mm(o)]
            gran = [native, native, min(native, g.K(mms[-1])) if mms else 1]
            if estimate_steps(g, grp, gran) > MAX_STEPS:
                return None
        grans.append(gran)
        produced = [t for o in grp for t in p["outputs"][o]]
        nxt = groups[i + 1] if i + 1 < len(groups) else []
        needed_next = {t for o in nxt for t in p["inputs"][o]}
        keep = []
        mode = rng.random()
        for t in produced:
            consumed_here = any(t in p["inputs"][o] for o in grp)
            if repair and consumed_here and t in needed_next and not g.consumers[t] == []:
                keep.append(t)  # an ephemeral that the next group reads must be retained
            elif t in needed_next and mode < 0.5:
                keep.append(t)
            elif rng.random() < 0.1:
                keep.append(t)
        retains.append(sorted(set(keep)))
        travs.append(traversal(rng, gran, g, grp))
    victim = rng.randrange(len(groups))
    mms = [o for o in groups[victim] if g.is_mm(o)]
    if defect == "super_w":
        grans[victim][rng.randrange(2)] = native * 2
    elif defect == "super_k" and mms:
        grans[victim][2] = native * 2
    elif defect == "k_over_K" and mms:
        grans[victim][2] = g.K(mms[-1]) + rng.randint(1, 64)
    elif defect == "bad_traversal":
        t = travs[victim] if travs[victim] is not None else list(range(estimate_steps(g, groups[victim], [grans[victim][0], grans[victim][1], 10**9])))
        t = list(t)
        if len(t) > 1 and rng.random() < 0.5:
            t[-1] = t[0]
        else:
            t.append(len(t))
        travs[victim] = t
    elif defect == "foreign_retain":
        retains[victim] = sorted(set(retains[victim] + [rng.randrange(g.nt)]))
    elif defect == "no_retain":
        retains = [[] for _ in retains]
    for i in range(len(groups)):
        if estimate_steps(g, groups[i], grans[i]) > MAX_STEPS:
            return None
    return {
        "subgraphs": groups, "granularities": grans, "tensors_to_retain": retains,
        "traversal_orders": travs, "subgraph_latencies": [0.0] * len(groups),
    }


def has_mixed_sinks(p, sol):
    g = Graph(p)
    for grp in sol["subgraphs"]:
        s = sinks_of(g, grp)
        if len({(p["widths"][t], p["heights"][t]) for t in s}) > 1:
            return True
    return False


def score(args):
    pi, p, sol, tune = args
    R = ref()
    if tune is not None:
        # Put the capacity on the edge: exactly the peak working set, or one below it.
        p = dict(p)
        p["fast_memory_capacity"] = 10**12
        res = R.evaluate(p, sol, R.Options())
        peak = max([s.get("peak_ws", 0) for s in res["subgraphs"]] + [1])
        p["fast_memory_capacity"] = max(1, peak - 1) if tune == "below" else peak
    out = {"problem": pi, "problem_override": p if tune is not None else None, "solution": sol,
           "mixed_sinks": has_mixed_sinks(p, sol)}
    for mode in ("opk", "native"):
        opts = R.Options()
        opts.mm_compute = mode
        try:
            res = R.evaluate(p, sol, opts)
            out[mode] = {"valid": bool(res["valid"]), "total": res["total"]}
        except Exception as e:  # the reference crashed on this input: leave it out
            return None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=2400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--evaluator", required=True, help="the reference evaluate.py")
    a = ap.parse_args()
    global EVALUATOR
    EVALUATOR = os.path.abspath(a.evaluator)
    rng = random.Random(a.seed)
    problems = []
    bench_dir = os.path.join(DATA, "benchmarks")
    for name in sorted(os.listdir(bench_dir)):
        if name.startswith("mlsys-2026-"):
            with open(os.path.join(bench_dir, name)) as f:
                problems.append(json.load(f))
    n_bench = len(problems)
    work = []
    attempts = 0
    while len(work) < a.count and attempts < a.count * 20:
        attempts += 1
        if len(work) % 8 == 0:  # one in eight over a public benchmark
            pi = rng.randrange(n_bench)
        else:
            problems.append(random_problem(rng))
            pi = len(problems) - 1
        sol = random_schedule(problems[pi], rng)
        if sol is None:
            continue
        tune = None
        if pi >= n_bench:
            tune = rng.choice([None, "edge", "edge", "edge", "edge", "edge", "edge", "below"])
        work.append((pi, problems[pi], sol, tune))
    with multiprocessing.Pool(a.jobs) as pool:
        scored = pool.map(score, work, chunksize=16)
    cases = [c for c in scored if c is not None]
    for c in cases:  # a tuned capacity makes a new problem
        override = c.pop("problem_override")
        if override is not None:
            problems.append(override)
            c["problem"] = len(problems) - 1
    used = sorted({c["problem"] for c in cases})
    remap = {old: new for new, old in enumerate(used)}
    for c in cases:
        c["problem"] = remap[c["problem"]]
    doc = {"problems": [problems[i] for i in used], "cases": cases}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, a.out)
    valid = sum(1 for c in cases if c["opk"]["valid"])
    print(f"{len(cases)} cases ({valid} valid under opk) over {len(used)} problems -> {a.out}")


if __name__ == "__main__":
    sys.exit(main())
