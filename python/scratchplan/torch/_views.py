"""View algebra of the PyTorch front end: program tensors, views of them as affine index maps,
and the view ops (permute, slice, select, expand, reshape splits) as edits of those maps.

A view says, per dim ``j`` of its program tensor, ``base[j] = off[j] + sum(coef * view[i])``.
Composing it with an op's map (view dim -> iteration var) gives the affine-sum indexing maps of
docs/program.md, so a view costs no op. Nothing here knows about FX or ATen.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple


class ViewError(Exception):
    """A view op that has no exact form here (the converter reports it with the node)."""


class PT:
    """A program tensor."""
    __slots__ = ("name", "shape", "dtype", "graph_input", "graph_output", "producer", "reads", "dim_order", "const",
                 "weight", "origin")

    def __init__(self, name: str, shape: Sequence[int], dtype: str, graph_input: bool = False) -> None:
        self.name = name
        self.shape = [int(s) for s in shape]
        self.dtype = dtype
        self.graph_input = graph_input
        self.graph_output = False
        self.producer: Optional[dict] = None  # the op dict writing it
        self.reads = 0
        self.dim_order: Optional[List[int]] = None  # device layout when not the default
        self.const = False  # made in forward from no tensor of the model (torch.zeros, arange): a constant
        self.weight = False  # a parameter or buffer of the model
        self.origin: Optional[Tuple[str, int]] = None  # (FX node, output index) a constant holds the value of


class Val:
    """A view of a program tensor: base[j] = off[j] + sum(coef * view[i] for i, coef in terms[j])."""
    __slots__ = ("pt", "shape", "terms", "off")

    def __init__(self, pt: PT, shape: Sequence[int], terms: List[Dict[int, int]], off: List[int]) -> None:
        self.pt = pt
        self.shape = [int(s) for s in shape]
        self.terms = terms
        self.off = off

    @staticmethod
    def whole(pt: PT) -> "Val":
        return Val(pt, pt.shape, [{j: 1} for j in range(len(pt.shape))], [0] * len(pt.shape))

    def is_identity(self) -> bool:
        return (self.shape == self.pt.shape and all(o == 0 for o in self.off)
                and all(t == {j: 1} or (self.shape[j] == 1 and not t) for j, t in enumerate(self.terms)))

    def remap(self, fn):
        """New base terms rewritten by fn(view_dim, coef) -> list of (new_dim, coef, add_off)."""
        terms, off = [], list(self.off)
        for j, t in enumerate(self.terms):
            nt: Dict[int, int] = {}
            for i, c in t.items():
                for ni, nc, add in fn(i, c):
                    off[j] += add
                    if ni is not None:
                        nt[ni] = nt.get(ni, 0) + nc
            terms.append({i: c for i, c in nt.items() if c})
        return terms, off


Expr = Tuple[Dict[int, int], int]  # (var -> coefficient, constant offset)


def expr(val: Val, vars_of_view: Sequence[Optional[int]]) -> List[Expr]:
    """Composes a view with an op's map (view dim -> iteration var, None = constant 0)."""
    out = []
    for j, t in enumerate(val.terms):
        e: Dict[int, int] = {}
        for i, c in t.items():
            v = vars_of_view[i]
            if v is not None and val.shape[i] > 1:
                e[v] = e.get(v, 0) + c
        out.append((e, val.off[j]))
    return out


def compose(val: Val, exprs: Sequence[Dict[int, int]]) -> List[Expr]:
    """Composes a view with explicit expressions per view dim (view[i] = exprs[i])."""
    res = []
    for j, t in enumerate(val.terms):
        ee: Dict[int, int] = {}
        for i, c in t.items():
            for var, cc in exprs[i].items():
                ee[var] = ee.get(var, 0) + c * cc
        res.append((ee, val.off[j]))
    return res


def same_view(a: Val, b: Val) -> bool:
    return a.shape == b.shape and a.terms == b.terms and a.off == b.off


def index_box(v: Val) -> List[Tuple[int, int]]:
    """Per base dim, the lowest and highest index the view touches."""
    box = []
    for j, t in enumerate(v.terms):
        lo = hi = v.off[j]
        for i, c in t.items():
            ext = c * (v.shape[i] - 1)
            lo, hi = lo + min(0, ext), hi + max(0, ext)
        box.append((lo, hi))
    return box


def disjoint_views(a: Val, b: Val) -> bool:
    """The two views of one tensor touch no common element (their boxes miss in some dim)."""
    return any(x[1] < y[0] or y[1] < x[0] for x, y in zip(index_box(a), index_box(b)))


def fmt(nvars: int, exprs: List[Expr]) -> str:
    """An indexing map in the program format's text form."""
    res = []
    for e, off in exprs:
        parts = [f"d{v}" if c == 1 else f"d{v} * {c}" for v, c in sorted(e.items())]
        if off or not parts:
            parts.append(str(off))
        res.append(" + ".join(parts))
    return "(" + ", ".join(f"d{i}" for i in range(nvars)) + ") -> (" + ", ".join(res) + ")"


def parse_results(res: str) -> List[Expr]:
    """The results of a map written by ``fmt`` (the part after ``->``)."""
    body = res.strip()[1:-1]
    out = []
    if not body.strip():
        return out
    for r in body.split(","):
        e: Dict[int, int] = {}
        off = 0
        for t in r.split("+"):
            t = t.strip()
            if "*" in t:
                a, b = [x.strip() for x in t.split("*")]
                if a.startswith("d"):
                    e[int(a[1:])] = int(b)
                else:
                    e[int(b[1:])] = int(a)
            elif t.startswith("d"):
                e[int(t[1:])] = 1
            else:
                off += int(t)
        out.append((e, off))
    return out


# ---------------------------------------------------------------- view ops

def permute(v: Val, perm: Sequence[int]) -> Val:
    r = len(v.shape)
    perm = [p % r for p in perm]
    inv = {old: new for new, old in enumerate(perm)}
    terms, off = v.remap(lambda i, c: [(inv[i], c, 0)])
    return Val(v.pt, [v.shape[p] for p in perm], terms, off)


def drop(v: Val, fixed: Dict[int, int], new_shape: Sequence[int]) -> Val:
    """Removes view dims ``fixed`` (dim -> fixed index), renumbering the rest."""
    keep = [i for i in range(len(v.shape)) if i not in fixed]
    pos = {old: new for new, old in enumerate(keep)}
    terms, off = v.remap(lambda i, c: [(None, 0, c * fixed[i])] if i in fixed else [(pos[i], c, 0)])
    return Val(v.pt, new_shape, terms, off)


def insert(v: Val, at: int) -> Val:
    """A size-1 dim at ``at`` (always index 0)."""
    terms, off = v.remap(lambda i, c: [(i + (i >= at), c, 0)])
    shape = list(v.shape)
    shape.insert(at, 1)
    return Val(v.pt, shape, terms, off)


def slice_(v: Val, dim: int, start: int, end: int, step: int) -> Val:
    r = len(v.shape)
    dim %= r
    n = v.shape[dim]
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(start, min(n, end + n if end < 0 else end))
    size = max(0, (end - start + step - 1) // step)
    terms, off = v.remap(lambda i, c: [(i, c * step, c * start)] if i == dim else [(i, c, 0)])
    shape = list(v.shape)
    shape[dim] = size
    return Val(v.pt, shape, terms, off)


def expand(v: Val, sizes: Sequence[int]) -> Val:
    sizes = [int(s) for s in sizes]
    for _ in range(len(sizes) - len(v.shape)):
        v = insert(v, 0)
    shape = [v.shape[i] if s == -1 else s for i, s in enumerate(sizes)]
    for i, (a, b) in enumerate(zip(v.shape, shape)):
        if a != b and a != 1:
            raise ViewError(f"cannot expand dim {i} of size {a} to {b}")
    # A size-1 dim read at index 0 for every expanded index: its terms drop out.
    grown = {i for i, (a, b) in enumerate(zip(v.shape, shape)) if a == 1 and b > 1}
    terms, off = v.remap(lambda i, c: [] if i in grown else [(i, c, 0)])
    return Val(v.pt, shape, terms, off)


def reshape_target(old: Sequence[int], new_shape: Sequence[int]) -> List[int]:
    """The new shape with -1 resolved; ViewError when the element count changes."""
    new = [int(s) for s in new_shape]
    if -1 in new:
        k = new.index(-1)
        rest = math.prod(s for i, s in enumerate(new) if i != k)
        new[k] = math.prod(old) // max(rest, 1)
    if math.prod(old) != math.prod(new):
        raise ViewError(f"reshape {list(old)} -> {new} changes the element count")
    return new


def reshape_groups(o: Sequence[int], n: Sequence[int]) -> List[Tuple[List[int], List[int]]]:
    """Groups of old and new dims (no size-1 dims) with equal products: (old dims, new dims)."""
    groups = []
    i = j = 0
    while i < len(o) or j < len(n):
        gi, gj = [i], [j]
        po, pn = o[i], n[j]
        i += 1
        j += 1
        while po != pn:
            if po < pn:
                po *= o[i]
                gi.append(i)
                i += 1
            else:
                pn *= n[j]
                gj.append(j)
                j += 1
        groups.append((gi, gj))
    return groups


def split(v: Val, groups, n: Sequence[int]) -> Val:
    """Every group splits one dim of ``v``: old = sum(stride_k * new_k) (mixed radix)."""
    parts_of = {}
    for gi, gj in groups:
        stride = 1
        parts = []
        for jj in reversed(gj):
            parts.append((jj, stride))
            stride *= n[jj]
        parts_of[gi[0]] = parts
    terms, off = v.remap(lambda i, c: [(jj, c * s, 0) for jj, s in parts_of[i]])
    return Val(v.pt, n, terms, off)


def merged_results(results: List[Expr], dims: List[List[int]], shape: Sequence[int]) -> List[Expr]:
    """An output map's results with each group of dims merged row-major (the producer writes the
    merged shape: sum over the group of result_k * stride_k)."""
    new_res = []
    for ds in dims:
        e: Dict[int, int] = {}
        off = 0
        stride = 1
        for k in reversed(ds):
            re_, ro = results[k]
            for var, c in re_.items():
                e[var] = e.get(var, 0) + c * stride
            off += ro * stride
            stride *= shape[k]
        new_res.append((e, off))
    return new_res
