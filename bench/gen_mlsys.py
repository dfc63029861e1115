"""Generator of MLSys 2026 problems of the contest's families (issue 15, section 2).

The public benchmarks are transformer pieces: residual MLP blocks, attention blocks (Q/K/V
projections, a score MatMul, a pointwise softmax, the value MatMul, an output projection) and
plain MatMul chains and parallel MatMul branches joined by pointwise ops, with 128x128 native granularity, a small fast memory and square-ish
power-of-two dimensions. `generate(family, seed)` draws a graph of one family from blocks of
those kinds, so the scheduler is measured on graphs nobody tuned it on. Deterministic in
(family, seed).

Families (sizes as in the public benchmarks):
  small_mm   ~20 ops, MatMul-heavy (>= 70% MatMuls), ~30 tensors, fast memory 20k-30k,
             dims 128-1024 (the shape of mlsys-2026-5 and the graph of issue 15)
  mlp_chain  a chain of 4-8 residual MLP blocks, dims 1024-4096, fast memory 150k-300k (like -9)
  mixed      40-70 ops mixing attention and MLP blocks, fast memory 300k-600k (like -13/-17)
  mm15_pw5   exactly the shape issue 15 reports for the graph the scheduler lost on: 20 ops (15
             MatMuls, 5 pointwise) over 30 tensors (one input, 9 weights, 20 activations), fast
             memory 25,000, native 128x128; activations seq x d, mostly 128 x 128 (one native tile), so a
             MatMul's three 128x128 tiles (49,152) never fit and granularity choice decides
"""
import random

FAMILIES = ("small_mm", "mlp_chain", "mixed", "mm15_pw5")


class Graph:
    def __init__(self):
        self.widths, self.heights, self.inputs, self.outputs, self.costs, self.types = [], [], [], [], [], []

    def tensor(self, h, w):
        self.widths.append(w)
        self.heights.append(h)
        return len(self.widths) - 1

    def matmul(self, a, b, cost):
        assert self.widths[a] == self.heights[b]
        out = self.tensor(self.heights[a], self.widths[b])
        self.inputs.append([a, b])
        self.outputs.append([out])
        self.costs.append(cost)
        self.types.append("MatMul")
        return out

    def pointwise(self, ins, cost):
        h, w = self.heights[ins[0]], self.widths[ins[0]]
        assert all(self.heights[t] == h and self.widths[t] == w for t in ins)
        out = self.tensor(h, w)
        self.inputs.append(list(ins))
        self.outputs.append([out])
        self.costs.append(cost)
        self.types.append("Pointwise")
        return out

    def weight(self, h, w):
        return self.tensor(h, w)

    def problem(self, capacity, bandwidth):
        return {"widths": self.widths, "heights": self.heights, "inputs": self.inputs, "outputs": self.outputs,
                "base_costs": self.costs, "op_types": self.types, "fast_memory_capacity": capacity,
                "slow_memory_bandwidth": bandwidth, "native_granularity": [128, 128]}


def mm_cost(rng):
    return rng.choice([500, 1000, 1500, 2000, 2500])


def pw_cost(rng):
    return rng.choice([100, 200, 300, 500])


def mlp_block(g, rng, x, hidden, residual=True, act=True):
    d = g.widths[x]
    h = g.matmul(x, g.weight(d, hidden), mm_cost(rng))
    if act:
        h = g.pointwise([h], pw_cost(rng))
    y = g.matmul(h, g.weight(hidden, d), mm_cost(rng))
    return g.pointwise([y, x], pw_cost(rng)) if residual else y


def attention_block(g, rng, x, seq):
    d = g.widths[x]
    q = g.matmul(x, g.weight(d, d), mm_cost(rng))
    kt = g.matmul(g.weight(d, d), g.tensor(d, seq), mm_cost(rng))  # K^T from the transposed input
    v = g.matmul(x, g.weight(d, d), mm_cost(rng))
    s = g.matmul(q, kt, mm_cost(rng))
    p = g.pointwise([s], pw_cost(rng))
    o = g.matmul(p, v, mm_cost(rng))
    y = g.matmul(o, g.weight(d, d), mm_cost(rng))
    return g.pointwise([y, x], pw_cost(rng))


def matmul_chain(g, rng, x, n, dims):
    for _ in range(n):
        x = g.matmul(x, g.weight(g.widths[x], rng.choice(dims)), mm_cost(rng))
    return x


def _mm15_pw5(g, rng):
    """15 MatMuls and 5 pointwise ops in random order over one input and 9 weights. The other 6
    MatMuls multiply two activations (as attention's scores and values do): the right operand is
    an earlier activation whose height (seq) equals the left operand's width."""
    seq = rng.choice([128, 128, 256])  # the total (~77k) means mostly one-tile tensors
    dims = [128, 128, 256, 512]
    acts = [g.tensor(seq, rng.choice(dims))]  # the graph input
    kinds = ["MatMul"] * 15 + ["Pointwise"] * 5
    rng.shuffle(kinds)
    if kinds[0] == "Pointwise":  # start from a MatMul on the input
        kinds[0], kinds[kinds.index("MatMul")] = "MatMul", "Pointwise"
    weight_mms = set(rng.sample(range(15), 9))
    mm = 0
    for kind in kinds:
        if kind == "Pointwise":
            x = rng.choice(acts[-4:])  # ops consume recent values, as blocks do
            same = [t for t in acts if t != x and g.widths[t] == g.widths[x]]
            ins = [x] + ([rng.choice(same)] if same and rng.random() < 0.6 else [])
            acts.append(g.pointwise(ins, pw_cost(rng)))
            continue
        lefts = [t for t in acts if g.widths[t] == seq]  # every activation has height seq
        pair_possible = bool(lefts) and len(acts) >= 2
        if mm not in weight_mms and not pair_possible:
            # No activation can be a right operand yet: swap roles with a later weight MatMul.
            later = sorted(j for j in weight_mms if j > mm)
            if later:
                weight_mms.remove(later[0])
                weight_mms.add(mm)
        if mm in weight_mms or not pair_possible:
            a = rng.choice(acts[-4:])
            # The last weight MatMuls make width seq likelier so activation pairs stay possible.
            b = g.weight(g.widths[a], seq if rng.random() < 0.4 else rng.choice(dims))
        else:
            a = rng.choice(lefts[-4:])
            b = rng.choice([t for t in acts if t != a])
        acts.append(g.matmul(a, b, mm_cost(rng)))
        mm += 1


def generate(family, seed):
    rng = random.Random(f"{family}:{seed}")
    g = Graph()
    if family == "small_mm":
        dims = [128, 256, 512, 1024]
        seq, d = rng.choice([128, 256, 512]), rng.choice([256, 512])
        x = g.tensor(seq, d)
        while len(g.types) < 17:
            kind = rng.choice(["mlp", "attn", "chain", "branch", "branch"])
            if kind == "mlp":
                x = mlp_block(g, rng, x, rng.choice(dims), residual=rng.random() < 0.5, act=rng.random() < 0.5)
            elif kind == "attn" and g.heights[x] == seq:
                x = attention_block(g, rng, x, seq)
            elif kind == "branch":  # 2-3 MatMul chains off one tensor, joined by pointwise ops
                ends = []
                for _ in range(rng.randint(2, 3)):
                    e = g.matmul(x, g.weight(g.widths[x], d), mm_cost(rng))
                    if rng.random() < 0.5:
                        e = g.matmul(e, g.weight(d, d), mm_cost(rng))
                    ends.append(e)
                x = ends[0]
                for e in ends[1:]:
                    x = g.pointwise([x, e], pw_cost(rng))
            else:
                x = matmul_chain(g, rng, x, rng.randint(1, 3), dims)
        capacity = rng.choice([20000, 25000, 30000])
        bandwidth = rng.choice([10, 15, 20])
    elif family == "mlp_chain":
        d, hidden = rng.choice([(1024, 4096), (1024, 2048), (512, 2048)])
        seq = rng.choice([1024, 2048])
        x = g.tensor(seq, d)
        for _ in range(rng.randint(4, 8)):
            x = mlp_block(g, rng, x, hidden)
        capacity = rng.choice([150000, 250000, 300000])
        bandwidth = rng.choice([20, 25, 50])
    elif family == "mixed":
        seq, d = rng.choice([512, 1024, 2048]), rng.choice([512, 1024])
        x = g.tensor(seq, d)
        target = rng.randint(40, 70)
        while len(g.types) < target:
            if rng.random() < 0.5:
                x = attention_block(g, rng, x, seq)
            else:
                x = mlp_block(g, rng, x, rng.choice([2 * d, 4 * d]))
        capacity = rng.choice([300000, 500000, 600000])
        bandwidth = rng.choice([50, 100])
    elif family == "mm15_pw5":
        _mm15_pw5(g, rng)
        capacity = 25000
        bandwidth = rng.choice([10, 15, 20])
    else:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    return g.problem(capacity, bandwidth)


if __name__ == "__main__":
    import json
    import sys
    fam, seed = sys.argv[1], int(sys.argv[2])
    json.dump(generate(fam, seed), sys.stdout)
