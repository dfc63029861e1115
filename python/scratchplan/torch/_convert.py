"""ATen graph -> scratchplan program (docs/torch.md has the rules).

Tracing runs ``make_fx`` on meta tensors (no arithmetic, no weight memory). Every FX node value
is a *view* of a program tensor: per dim of the program tensor an affine expression over the
view's dims (``base[j] = offset[j] + sum coeff * view[i]``). Views, permutes, expands, slices,
selects and reshapes that split a dim only edit that expression; consumers compose it with their
own iteration variables, so the view costs no op. A reshape that merges dims is written through
the producer's output map when the tensor is fresh (nothing read it yet), else it materializes a
copy op. Compute ops become pointwise / reduction / matmul ops with exact maps; ops without an
affine form become opaque ops with the reason. Nothing is dropped: the report has one row per
ATen op.
"""
from __future__ import annotations

import contextlib
import math
import operator
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .._common import BadInput

_DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp32",
           torch.int64: "int64", torch.int32: "int32", torch.int8: "int8", torch.uint8: "int8", torch.bool: "bool",
           torch.int16: "int32"}
_DTYPE_ALIASES = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "bfloat16": "bf16",
                  "fp32": "fp32", "float32": "fp32", "float": "fp32"}
_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "int64": 64, "int32": 32, "int8": 8, "bool": 8}


class UnsupportedModel(BadInput):
    """The model cannot be traced or converted; the message names the op and the module path."""


@dataclass
class Row:
    """One ATen op of the trace and what became of it."""
    node: str                 # FX node name
    target: str               # ATen overload, e.g. "aten.addmm.default"
    module: str               # module path it came from ("" = top level)
    decision: str             # "mapped", "folded" or "opaque"
    reason: str               # how it was mapped / folded, or why it is opaque
    ops: List[str] = field(default_factory=list)  # program ops emitted for it
    compute: bool = True      # does arithmetic (counts toward the mapped fraction)


class Report:
    """The op-by-op mapping report of ``to_program``."""

    def __init__(self, rows: List[Row], trace_seconds: float, convert_seconds: float) -> None:
        self.rows = rows
        self.trace_seconds = trace_seconds
        self.convert_seconds = convert_seconds

    @property
    def counts(self) -> Dict[str, int]:
        c = {"mapped": 0, "folded": 0, "opaque": 0}
        for r in self.rows:
            c[r.decision] += 1
        return c

    @property
    def compute_ops(self) -> int:
        return sum(1 for r in self.rows if r.compute)

    @property
    def mapped_fraction(self) -> float:
        """Mapped compute ops over compute ops (folded views and copies are not compute)."""
        n = self.compute_ops
        return 1.0 if n == 0 else sum(1 for r in self.rows if r.compute and r.decision == "mapped") / n

    def opaque(self) -> List[Row]:
        return [r for r in self.rows if r.decision == "opaque"]

    def text(self) -> str:
        c = self.counts
        lines = [f"{len(self.rows)} ATen ops: {c['mapped']} mapped, {c['folded']} folded, {c['opaque']} opaque; "
                 f"{100 * self.mapped_fraction:.1f}% of {self.compute_ops} compute ops mapped"]
        for r in self.rows:
            lines.append(f"  {r.decision:6} {r.target:40} {r.node:28} {r.module or '-':30} {r.reason}"
                         + (f" -> {', '.join(r.ops)}" if r.ops else ""))
        return "\n".join(lines)

    def to_list(self) -> List[dict]:
        """The rows as dicts (node, target, module, decision, reason, ops, compute)."""
        return [dict(node=r.node, target=r.target, module=r.module, decision=r.decision, reason=r.reason,
                     ops=list(r.ops), compute=r.compute) for r in self.rows]

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        c = self.counts
        return f"<scratchplan.torch.Report mapped={c['mapped']} folded={c['folded']} opaque={c['opaque']}>"


# ---------------------------------------------------------------- program tensors and views

class _PT:
    """A program tensor."""
    __slots__ = ("name", "shape", "dtype", "graph_input", "graph_output", "producer", "reads", "dim_order", "const",
                 "weight")

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


class _Val:
    """A view of a program tensor: base[j] = off[j] + sum(coef * view[i] for i, coef in terms[j])."""
    __slots__ = ("pt", "shape", "terms", "off")

    def __init__(self, pt: _PT, shape: Sequence[int], terms: List[Dict[int, int]], off: List[int]) -> None:
        self.pt = pt
        self.shape = [int(s) for s in shape]
        self.terms = terms
        self.off = off

    @staticmethod
    def whole(pt: _PT) -> "_Val":
        return _Val(pt, pt.shape, [{j: 1} for j in range(len(pt.shape))], [0] * len(pt.shape))

    def is_identity(self) -> bool:
        return (self.shape == self.pt.shape and all(o == 0 for o in self.off)
                and all(t == {j: 1} or (self.shape[j] == 1 and not t) for j, t in enumerate(self.terms)))

    def remap(self, fn) -> "_Val":
        """New view whose base terms are rewritten by fn(view_dim, coef) -> list of (new_dim, coef, add_off)."""
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


def _expr(val: _Val, vars_of_view: Sequence[Optional[int]]) -> List[Tuple[Dict[int, int], int]]:
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


def _same_view(a: _Val, b: _Val) -> bool:
    return a.shape == b.shape and a.terms == b.terms and a.off == b.off


def _index_box(v: _Val) -> List[Tuple[int, int]]:
    """Per base dim, the lowest and highest index the view touches."""
    box = []
    for j, t in enumerate(v.terms):
        lo = hi = v.off[j]
        for i, c in t.items():
            ext = c * (v.shape[i] - 1)
            lo, hi = lo + min(0, ext), hi + max(0, ext)
        box.append((lo, hi))
    return box


def _disjoint_views(a: _Val, b: _Val) -> bool:
    """The two views of one tensor touch no common element (their boxes miss in some dim)."""
    return any(x[1] < y[0] or y[1] < x[0] for x, y in zip(_index_box(a), _index_box(b)))


def _fmt(nvars: int, exprs: List[Tuple[Dict[int, int], int]]) -> str:
    res = []
    for e, off in exprs:
        parts = [f"d{v}" if c == 1 else f"d{v} * {c}" for v, c in sorted(e.items())]
        if off or not parts:
            parts.append(str(off))
        res.append(" + ".join(parts))
    return "(" + ", ".join(f"d{i}" for i in range(nvars)) + ") -> (" + ", ".join(res) + ")"


# ---------------------------------------------------------------- the converter

def _sanitize(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", s)


def _target_name(t: Any) -> str:
    s = str(t)
    return s if s.startswith("aten.") else getattr(t, "__name__", s)


_VIEW_OPS = {"view", "_unsafe_view", "reshape", "_reshape_alias", "flatten", "unflatten", "expand", "expand_as",
             "permute", "transpose", "t", "unsqueeze", "squeeze", "slice", "select", "split", "split_with_sizes",
             "chunk", "unbind", "alias", "detach", "numpy_T", "view_as", "lift_fresh_copy", "lift_fresh"}
_UNARY = {"relu", "relu_", "gelu", "silu", "silu_", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "neg", "abs",
          "erf", "reciprocal", "hardswish", "hardswish_", "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_",
          "clamp", "clamp_", "clamp_min", "clamp_max", "leaky_relu", "elu", "sin", "cos", "pow", "mish", "softplus",
          "log1p", "expm1", "square", "threshold", "gelu_", "relu6", "sign", "floor", "ceil", "round", "trunc",
          "logical_not", "bitwise_not", "isnan", "_to_copy", "to", "clone", "contiguous", "copy", "fill", "zero", "zeros_like",
          "ones_like", "full_like", "masked_fill", "dropout", "native_dropout", "rsub", "pow_"}
_BINARY = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "maximum", "minimum", "where", "eq", "ne",
           "lt", "le", "gt", "ge", "logical_and", "logical_or", "bitwise_and", "bitwise_or", "remainder", "fmod",
           "atan2", "masked_fill_", "lerp", "addcmul", "addcdiv"}
_REDUCE = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min", "max": "max", "min": "min", "prod": "prod",
           "any": "any", "all": "all", "logsumexp": "logsumexp", "var": "var", "std": "std", "argmax": "argmax",
           "argmin": "argmin", "norm": "norm", "linalg_vector_norm": "norm"}
# Ops that stay opaque, with why no indexing map can describe them.
_OPAQUE_REASONS = {
    "roll": "roll: a circular shift reads index (i - shift) mod n, which is not affine",
    "index": "advanced indexing: the rows read depend on an index tensor (data-dependent gather)",
    "index_select": "index_select: the rows read depend on an index tensor (data-dependent gather)",
    "gather": "gather: the elements read depend on an index tensor",
    "scatter": "scatter: the elements written depend on an index tensor",
    "scatter_add": "scatter_add: the elements written depend on an index tensor",
    "index_put": "index_put: the elements written depend on an index tensor",
    "index_put_": "index_put_: the elements written depend on an index tensor",
    "copy_": "copy_ into a view: a partial update of a tensor another op wrote (one writer per tensor)",
    "sort": "sort: data-dependent permutation",
    "topk": "topk: data-dependent selection",
    "nonzero": "nonzero: data-dependent output size",
    "upsample_nearest1d": "nearest upsampling by a fractional factor reads floor(h / scale): not affine",
    "upsample_nearest2d": "nearest upsampling by a fractional factor reads floor(h / scale): not affine",
    "upsample_nearest3d": "nearest upsampling by a fractional factor reads floor(h / scale): not affine",
    "upsample_bilinear2d": "bilinear upsampling: fractional, weighted reads",
    "grid_sampler_2d": "grid sampling: data-dependent reads",
    "cumsum": "cumsum: a prefix scan (each output reads a growing window)",
}
_CREATE = {"zeros", "ones", "full", "empty", "arange", "scalar_tensor", "empty_like", "new_zeros", "new_ones",
           "new_full", "new_empty", "rand", "randn", "tensor"}


class _Converter:
    def __init__(self, name: str, dtype: Optional[str]) -> None:
        self.name = name
        self.float_dtype = dtype
        self.pts: List[_PT] = []
        self.names: Dict[str, int] = {}
        self.used: set = set()  # tensor and op names (one namespace keeps both unique)
        self.ops: List[dict] = []
        self.rows: List[Row] = []
        self.env: Dict[Any, Any] = {}
        self.row: Optional[Row] = None
        self.node_pts: Dict[int, List[Any]] = {}  # id(pt) -> fx nodes whose value views it
        self.processed: set = set()
        self.node = None
        # With in-place ops in the graph a clone must stay a copy (the mutation would reach both).
        self.has_inplace = False
        self.pos: Dict[Any, int] = {}  # FX node -> its place in the graph (which readers come later)

    # -- names and tensors
    def uniq(self, base: str) -> str:
        base = _sanitize(base) or "t"
        name = base
        n = self.names.get(base, 0)
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.names[base] = n
        self.used.add(name)
        return name

    def dtype_of(self, tdtype: torch.dtype) -> str:
        d = _DTYPES.get(tdtype)
        if d is None:
            raise self.error(f"dtype {tdtype} has no program dtype")
        if tdtype.is_floating_point and self.float_dtype:
            return self.float_dtype
        return d

    def new_pt(self, base: str, shape: Sequence[int], dtype: str, graph_input: bool = False) -> _PT:
        pt = _PT(self.uniq(base), shape, dtype, graph_input)
        self.pts.append(pt)
        return pt

    def fresh(self, base: str, meta: Any) -> _Val:
        return _Val.whole(self.new_pt(base, list(meta.shape), self.dtype_of(meta.dtype)))

    # -- errors
    def error(self, what: str) -> UnsupportedModel:
        n = self.node
        where = ""
        if n is not None:
            where = f"op {_target_name(n.target)} (node {n.name}"
            mod = n.meta.get("sp_module", "")
            where += f", module '{mod}')" if mod else ", top-level module)"
        return UnsupportedModel(f"{where}: {what}" if where else what)

    # -- ops
    def emit(self, kind: str, payload: str, inputs: List[Tuple[_Val, List[Optional[int]]]],
             outputs: List[Tuple[_Val, List[Optional[int]]]], iters: List[str], name: Optional[str] = None,
             ranges: Optional[List[int]] = None) -> dict:
        op = {"name": self.uniq(name or (self.node.name if self.node is not None else payload)), "kind": kind,
              "payload": payload, "inputs": [v.pt.name for v, _ in inputs], "outputs": [v.pt.name for v, _ in outputs]}
        if kind != "opaque" or iters:
            n = len(iters)
            op["iterator_types"] = iters
            op["indexing_maps"] = [_fmt(n, _expr(v, m)) for v, m in inputs + outputs]
            plain = set()
            for v, m in inputs + outputs:
                for e, off in _expr(v, m):
                    if len(e) == 1 and off == 0 and list(e.values())[0] == 1:
                        plain.add(next(iter(e)))
            # Ranges are always written: a slice [0, n) of a dim reads it with a lone var whose
            # range is below the dim size, which only an explicit range can say.
            if ranges is None:
                raise self.error("internal: an op without iteration ranges")
            op["ranges"] = [int(r) for r in ranges]
        for v, _ in inputs:
            v.pt.reads += 1
        for v, _ in outputs:
            v.pt.producer = op
        self.ops.append(op)
        if self.row is not None:
            self.row.ops.append(op["name"])
        return op

    def opaque(self, payload: str, ins: List[_Val], outs: List[_Val], name: Optional[str] = None) -> dict:
        op = {"name": self.uniq(name or self.node.name), "kind": "opaque", "payload": payload,
              "inputs": list(dict.fromkeys(v.pt.name for v in ins)), "outputs": [v.pt.name for v in outs]}
        for v in ins:
            v.pt.reads += 1
        for v in outs:
            v.pt.producer = op
        self.ops.append(op)
        if self.row is not None:
            self.row.ops.append(op["name"])
        return op

    def pointwise(self, payload: str, ins: List[_Val], out_shape: Sequence[int], out_dtype: str,
                  name: Optional[str] = None, out: Optional[_Val] = None) -> _Val:
        """Numpy broadcasting: output dims are the vars; size-1 input dims read constant 0."""
        r = len(out_shape)
        fresh = out is None
        if out is None:
            out = _Val.whole(self.new_pt(name or self.node.name, out_shape, out_dtype))
        var_of: Dict[int, int] = {}
        for od in range(r):
            if out_shape[od] > 1:
                var_of[od] = len(var_of)
        operands = []
        seen = set()
        for v in ins:
            m: List[Optional[int]] = []
            k = len(v.shape)
            for i in range(k):
                od = r - k + i
                m.append(var_of.get(od) if v.shape[i] == out_shape[od] and v.shape[i] > 1 else None)
            key = (id(v.pt), tuple(map(str, _expr(v, m))))
            if key in seen:
                continue  # x * x reads x once
            seen.add(key)
            operands.append((v, m))
        # Pointwise ops on sparse reduction results (rsqrt of a variance) stay sparse.
        same = [v for v in ins if v.shape == list(out_shape)]
        if fresh and same and all(v.pt.dim_order and v.pt.dim_order[-1] == -1 for v in same):
            out.pt.dim_order = list(range(r)) + [-1]
        n = len(var_of)
        self.emit("pointwise", payload, operands, [(out, [var_of.get(od) for od in range(r)])], ["parallel"] * n,
                  name=name, ranges=[out_shape[od] for od in sorted(var_of)])
        return out

    def reduce(self, payload: str, x: _Val, dims: Sequence[int], keepdim: bool, out_dtype: str,
               name: Optional[str] = None, extra: Sequence[_Val] = ()) -> _Val:
        r = len(x.shape)
        dims = sorted({d % r for d in dims} if dims else set(range(r)))
        out_shape = [1 if d in dims else s for d, s in enumerate(x.shape)] if keepdim else \
            [s for d, s in enumerate(x.shape) if d not in dims]
        out = _Val.whole(self.new_pt(name or self.node.name, out_shape, out_dtype))
        # Vars: the kept dims (parallel) then the reduced dims of size > 1 (reduction).
        var_of = {}
        iters = []
        ranges = []
        for d in range(r):
            if d not in dims and x.shape[d] > 1:
                var_of[d] = len(iters)
                iters.append("parallel")
                ranges.append(x.shape[d])
        for d in dims:
            if x.shape[d] > 1:
                var_of[d] = len(iters)
                iters.append("reduction")
                ranges.append(x.shape[d])
        xin = [var_of.get(d) for d in range(r)]
        if keepdim:
            om = [None if d in dims else var_of.get(d) for d in range(r)]
        else:
            om = [var_of.get(d) for d in range(r) if d not in dims]
        kind = "reduction" if "reduction" in iters else "pointwise"
        # Reducing along the input's stick (its tensor's last dim) writes a sparse output, the
        # layout torch-spyre gives such reductions (docs/program.md, "Decisions").
        last = _expr(x, xin)[-1][0] if x.pt.shape else {}
        if any(iters[v] == "reduction" for v in last) and out_shape:
            out.pt.dim_order = list(range(len(out_shape))) + [-1]
        ins = [(x, xin)] + [(e, self.bcast_map(e, x.shape, xin)) for e in extra]
        self.emit(kind, payload, ins, [(out, om)], iters, name=name, ranges=ranges)
        return out

    def bcast_map(self, v: _Val, shape: Sequence[int], vars_of_dims: Sequence[Optional[int]]) -> List[Optional[int]]:
        k, r = len(v.shape), len(shape)
        return [vars_of_dims[r - k + i] if v.shape[i] > 1 else None for i in range(k)]

    def copy(self, v: _Val, payload: str = "copy", name: Optional[str] = None, dtype: Optional[str] = None) -> _Val:
        if v.pt.const:  # a copy of a constant is another constant: no op
            pt = self.new_pt(name or self.node.name, v.shape, dtype or v.pt.dtype, graph_input=True)
            pt.const = True
            return _Val.whole(pt)
        return self.pointwise(payload, [v], v.shape, dtype or v.pt.dtype, name=name)

    # -- views
    def view_permute(self, v: _Val, perm: Sequence[int]) -> _Val:
        r = len(v.shape)
        perm = [p % r for p in perm]
        inv = {old: new for new, old in enumerate(perm)}
        terms, off = v.remap(lambda i, c: [(inv[i], c, 0)])
        return _Val(v.pt, [v.shape[p] for p in perm], terms, off)

    def view_drop(self, v: _Val, drop: Dict[int, int], new_shape: Sequence[int]) -> _Val:
        """Removes view dims `drop` (dim -> fixed index), renumbering the rest."""
        keep = [i for i in range(len(v.shape)) if i not in drop]
        pos = {old: new for new, old in enumerate(keep)}
        terms, off = v.remap(lambda i, c: [(None, 0, c * drop[i])] if i in drop else [(pos[i], c, 0)])
        return _Val(v.pt, new_shape, terms, off)

    def view_insert(self, v: _Val, at: int) -> _Val:
        terms, off = v.remap(lambda i, c: [(i + (i >= at), c, 0)])
        shape = list(v.shape)
        shape.insert(at, 1)
        return _Val(v.pt, shape, terms, off)

    def view_slice(self, v: _Val, dim: int, start: int, end: int, step: int) -> _Val:
        r = len(v.shape)
        dim %= r
        n = v.shape[dim]
        start = max(0, min(n, start + n if start < 0 else start))
        end = max(start, min(n, end + n if end < 0 else end))
        size = max(0, (end - start + step - 1) // step)
        if size == 0:
            raise self.error("an empty slice has no program tensor")
        terms, off = v.remap(lambda i, c: [(i, c * step, c * start)] if i == dim else [(i, c, 0)])
        shape = list(v.shape)
        shape[dim] = size
        return _Val(v.pt, shape, terms, off)

    def view_expand(self, v: _Val, sizes: Sequence[int]) -> _Val:
        sizes = [int(s) for s in sizes]
        lead = len(sizes) - len(v.shape)
        for _ in range(lead):
            v = self.view_insert(v, 0)
        shape = [v.shape[i] if s == -1 else s for i, s in enumerate(sizes)]
        for i, (a, b) in enumerate(zip(v.shape, shape)):
            if a != b and a != 1:
                raise self.error(f"cannot expand dim {i} of size {a} to {b}")
        # A size-1 dim read at index 0 for every expanded index: its terms drop out.
        grown = {i for i, (a, b) in enumerate(zip(v.shape, shape)) if a == 1 and b > 1}
        terms, off = v.remap(lambda i, c: [] if i in grown else [(i, c, 0)])
        return _Val(v.pt, shape, terms, off)

    def view_reshape(self, v: _Val, new_shape: Sequence[int], node: Any) -> _Val:
        old = list(v.shape)
        new = [int(s) for s in new_shape]
        if -1 in new:
            k = new.index(-1)
            rest = math.prod(s for i, s in enumerate(new) if i != k)
            new[k] = math.prod(old) // max(rest, 1)
        if math.prod(old) != math.prod(new):
            raise self.error(f"reshape {old} -> {new} changes the element count")
        # Drop size-1 dims on both sides; they carry no index.
        v1 = self.view_drop(v, {i: 0 for i, s in enumerate(old) if s == 1}, [s for s in old if s != 1])
        o = v1.shape
        n = [s for s in new if s != 1]
        groups = []  # (old dims, new dims)
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
        if any(len(gi) > 1 for gi, _ in groups):
            # Merging dims is div/mod for a consumer: write the merged shape through the producer
            # (fresh tensor) or materialize a copy first.
            v1 = self.merge_in_place(v, [i for i, s in enumerate(old) if s != 1], groups, node)
            groups = [([k], gj) for k, (_, gj) in enumerate(groups)]
        # Now every group splits one dim: old = sum(stride_k * new_k) (mixed radix).
        split = {}
        for gi, gj in groups:
            stride = 1
            parts = []
            for jj in reversed(gj):
                parts.append((jj, stride))
                stride *= n[jj]
            split[gi[0]] = parts
        terms, off = v1.remap(lambda i, c: [(jj, c * s, 0) for jj, s in split[i]])
        v2 = _Val(v1.pt, n, terms, off)
        for k, s in enumerate(new):
            if s == 1:
                v2 = self.view_insert(v2, k)
        return v2

    def merge_in_place(self, v: _Val, nonone: List[int], groups, node: Any) -> _Val:
        """Rewrites the producer of a fresh tensor to write the merged shape (no copy). `v` is the
        value before its size-1 dims were dropped; `nonone` maps the dims the groups count to
        v's dims; the result has one dim per group."""
        pt = v.pt
        users_ok = all(set(u for u in n.users) <= (self.processed | {node}) for n in self.node_pts.get(id(pt), []))
        if not (v.is_identity() and pt.reads == 0 and users_ok and not pt.graph_output
                and (pt.producer is not None or pt.graph_input)):
            c = self.copy(v, "copy", name=(node.name + "_copy"))
            self.row.reason = "reshape merging dims of a non-contiguous view: copy op, then the copy writes the merged shape"
            self.row.decision = "folded"
            pt = c.pt
        dims = [[nonone[k] for k in gi] for gi, _ in groups]  # pt dims of each group
        merged = [math.prod(pt.shape[d] for d in ds) for ds in dims]
        op = pt.producer
        if op is not None and op["kind"] != "opaque":
            if "ranges" not in op:
                op["ranges"] = _op_ranges(op, self)
            slot = len(op["inputs"]) + op["outputs"].index(pt.name)
            text = op["indexing_maps"][slot]
            dom, res = text.split(" -> ")
            nvars = dom.count("d")
            results = _parse_results(res)
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
                    stride *= pt.shape[k]
                new_res.append((e, off))
            op["indexing_maps"][slot] = _fmt(nvars, new_res)
        pt.shape = merged  # an opaque producer (gather, concat) has no maps: the bytes are the same
        return _Val.whole(pt)


def _parse_results(res: str) -> List[Tuple[Dict[int, int], int]]:
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


def _op_ranges(op: dict, conv: _Converter) -> List[int]:
    """Iteration extents of an op, from its plain results (before a merge rewrites one)."""
    shapes = {pt.name: pt.shape for pt in conv.pts}
    n = len(op["iterator_types"])
    ranges = [0] * n
    for name, text in zip(op["inputs"] + op["outputs"], op["indexing_maps"]):
        for d, (e, off) in enumerate(_parse_results(text.split(" -> ")[1])):
            if len(e) == 1 and off == 0 and list(e.values())[0] == 1:
                ranges[next(iter(e))] = shapes[name][d]
    if 0 in ranges:
        raise conv.error("internal: cannot derive the iteration ranges of op " + op["name"])
    return ranges


def _has_plain_ranges(op: dict) -> bool:
    n = len(op["iterator_types"])
    plain = set()
    for text in op["indexing_maps"]:
        for e, off in _parse_results(text.split(" -> ")[1]):
            if len(e) == 1 and off == 0 and list(e.values())[0] == 1:
                plain.add(next(iter(e)))
    return len(plain) == n


# ---------------------------------------------------------------- node handlers

def _arg(node: Any, i: int, name: str, default: Any = None) -> Any:
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


class _TM:
    """Shape and dtype of a traced tensor (make_fx on meta tensors records tensor_meta)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = [int(s) for s in shape]
        self.dtype = dtype


def _meta(node: Any) -> Any:
    """_TM for a tensor-valued node, a list (None for unknown items) for a tuple-valued one."""
    if not hasattr(node, "meta"):
        return None
    if "sp_meta" in node.meta:
        return node.meta["sp_meta"]
    tm = node.meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape") and hasattr(tm, "dtype"):
        out: Any = _TM(tm.shape, tm.dtype)
    elif isinstance(tm, (list, tuple)) and tm:
        out = [_TM(t.shape, t.dtype) if hasattr(t, "shape") else None for t in tm]
    else:
        items = {}
        for u in node.users:
            if u.target is operator.getitem and isinstance(u.args[1], int):
                items[u.args[1]] = _meta(u)
        out = [items.get(k) for k in range(max(items) + 1)] if items else None
    node.meta["sp_meta"] = out
    return out


class _Run(_Converter):
    def val(self, a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            if a not in self.env:
                raise self.error(f"input {a.name} has no value")
            return self.env[a]
        return a

    def tensor(self, a: Any) -> _Val:
        v = self.val(a)
        if not isinstance(v, _Val):
            raise self.error(f"expected a tensor operand, got {type(v).__name__}")
        return v

    def bind(self, node: Any, v: Any) -> None:
        self.env[node] = v
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(x, _Val):
                self.node_pts.setdefault(id(x.pt), []).append(node)

    def set_row(self, decision: str, reason: str, compute: bool = True) -> None:
        self.row.decision = decision
        self.row.reason = reason
        self.row.compute = compute

    def out_dtype(self, node: Any) -> str:
        m = _meta(node)
        if isinstance(m, (list, tuple)):
            m = m[0]
        return self.dtype_of(m.dtype)

    def run_node(self, node: Any) -> None:
        t = node.target
        full = _target_name(t)
        name = full.split(".")[1] if full.startswith("aten.") else full
        # unsafe_split / unsafe_chunk (nn.LSTMCell's gates) differ from split / chunk only in autograd.
        name = name[len("unsafe_"):] if name in ("unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk") else name
        self.row = Row(node.name, full, node.meta.get("sp_module", ""), "mapped", "")
        handled = True
        if t is operator.getitem:
            src = self.val(node.args[0])
            self.bind(node, src[node.args[1]] if isinstance(src, (list, tuple)) else src)
            self.row = None
            return
        if name in _VIEW_OPS:
            self.bind(node, self.do_view(node, name))
            if self.row.decision == "mapped":
                self.set_row("folded", self.row.reason or "view: folded into the consumers' indexing maps", compute=False)
            else:
                self.row.compute = False
        elif name in _CREATE:
            m = _meta(node)
            pt = self.new_pt(node.name, list(m.shape), self.dtype_of(m.dtype), graph_input=True)
            pt.const = True
            self.bind(node, _Val.whole(pt))
            self.set_row("folded", "creates a tensor without reading one: a graph input (constant) of the program",
                         compute=False)
        else:
            handled = self.do_compute(node, name)
        if not handled:
            self.do_opaque(node, _OPAQUE_REASONS.get(name, f"no affine form known for {full}"))
        self.rows.append(self.row)
        self.row = None

    # -- views
    def do_view(self, node: Any, name: str) -> Any:
        x = self.tensor(node.args[0])
        r = len(x.shape)
        if name in ("view", "_unsafe_view", "reshape", "_reshape_alias", "view_as"):
            shape = list(_meta(node).shape)
            self.row.reason = "reshape: splits are affine sums in the consumers' maps; merges are written by the producer"
            return self.view_reshape(x, shape, node)
        if name in ("flatten", "unflatten"):
            return self.view_reshape(x, list(_meta(node).shape), node)
        if name in ("expand", "expand_as"):
            self.row.reason = "expand: the broadcast dims read index 0 (the var drops out of the map)"
            return self.view_expand(x, list(_meta(node).shape))
        if name == "permute":
            self.row.reason = "permute: the consumers' maps permute their results"
            return self.view_permute(x, list(node.args[1]))
        if name in ("transpose", "t", "numpy_T"):
            if name == "transpose":
                a, b = node.args[1] % max(r, 1), node.args[2] % max(r, 1)
            else:
                a, b = 0, max(r - 1, 0)
            perm = list(range(r))
            perm[a], perm[b] = perm[b], perm[a]
            self.row.reason = "transpose: the consumers' maps swap two results"
            return self.view_permute(x, perm)
        if name == "unsqueeze":
            self.row.reason = "unsqueeze: a size-1 dim indexed by 0"
            return self.view_insert(x, node.args[1] % (r + 1))
        if name == "squeeze":
            dims = [i for i, s in enumerate(x.shape) if s == 1]
            if len(node.args) > 1:
                d = node.args[1]
                ds = [d] if isinstance(d, int) else list(d)
                dims = [q % r for q in ds if x.shape[q % r] == 1]
            self.row.reason = "squeeze: size-1 dims drop out of the maps"
            return self.view_drop(x, {d: 0 for d in dims}, [s for i, s in enumerate(x.shape) if i not in dims])
        if name == "slice":
            dim = _arg(node, 1, "dim", 0)
            start = _arg(node, 2, "start", None)
            end = _arg(node, 3, "end", None)
            step = _arg(node, 4, "step", 1)
            start = 0 if start is None else start
            end = x.shape[dim % r] if end is None else min(end, 2 ** 62)
            self.row.reason = f"slice: offset {start}, step {step} in the consumers' maps"
            return self.view_slice(x, dim, start, end, step)
        if name == "select":
            dim, idx = node.args[1] % r, node.args[2]
            idx = idx + x.shape[dim] if idx < 0 else idx
            self.row.reason = f"select: the constant {idx} in the consumers' maps"
            return self.view_drop(x, {dim: idx}, [s for i, s in enumerate(x.shape) if i != dim])
        if name in ("split", "split_with_sizes", "chunk", "unbind"):
            dim = _arg(node, 2 if name != "unbind" else 1, "dim", 0) % r
            outs = []
            start = 0
            for m in _meta(node):
                size = m.shape[dim] if name != "unbind" else 1
                if name == "unbind":
                    outs.append(self.view_drop(x, {dim: start}, [s for i, s in enumerate(x.shape) if i != dim]))
                else:
                    outs.append(self.view_slice(x, dim, start, start + size, 1))
                start += size
            self.row.reason = f"{name}: one slice (offset in the consumers' maps) per piece"
            return outs
        if name in ("alias", "detach", "lift_fresh", "lift_fresh_copy"):
            self.row.reason = f"{name}: the same tensor"
            return x
        raise self.error("unhandled view")

    # -- compute
    def normalize(self, x: _Val, dims: List[int], dt: str, name: str) -> Tuple[_Val, _Val, _Val]:
        """The statistics ops of layer and group norm over `dims`: (mean, x - mean, rsqrt(var + eps))."""
        mean = self.reduce("mean", x, dims, True, dt, name=name + "_mean")
        xc = self.pointwise("sub", [x, mean], x.shape, dt, name=name + "_centered")
        var = self.reduce("mean_square", xc, dims, True, dt, name=name + "_var")
        rstd = self.pointwise("add_eps_rsqrt", [var], var.shape, dt, name=name + "_rstd")
        return mean, xc, rstd

    def fold_constant(self, node: Any, name: str, why: str = "") -> bool:
        """An op (not in place) whose tensor inputs are all weights and constants: a compiler
        computes it once when it loads the model (swin's relative position bias, a table gathered
        by a constant index and, in swin v2, an MLP over a constant coordinate table), so its
        results are constant graph inputs and no op runs. True when folded."""
        ins = [self.env[a] for a in node.all_input_nodes if isinstance(self.env.get(a), _Val)]
        if not ins or name.endswith("_") or not all(v.pt.const or v.pt.weight for v in ins):
            return False
        m = _meta(node)
        metas = m if isinstance(m, (list, tuple)) else [m]
        outs: List[Optional[_Val]] = []
        for k, mm in enumerate(metas):
            if isinstance(mm, _TM) and 0 not in list(mm.shape):
                outs.append(self.fresh(node.name if k == 0 else f"{node.name}_{k}", mm))
                outs[-1].pt.graph_input = outs[-1].pt.const = True
            else:
                outs.append(None)
        if not any(o is not None for o in outs):
            return False
        self.bind(node, outs if isinstance(m, (list, tuple)) else outs[0])
        self.set_row("folded", (why + "; " if why else "") + "on weights and constants only: computed once when "
                     "the model is loaded, a constant graph input", compute=False)
        return True

    def do_opaque(self, node: Any, reason: str, payload: Optional[str] = None) -> None:
        full = _target_name(node.target)
        if self.fold_constant(node, full.split(".")[1] if full.startswith("aten.") else full, reason):
            return
        ins = [self.env[a] for a in node.all_input_nodes if isinstance(self.env.get(a), _Val)]
        m = _meta(node)
        metas = m if isinstance(m, (list, tuple)) else [m]
        outs = []
        for k, mm in enumerate(metas):
            # An output without elements (embedding_bag's empty offset2bag) moves no bytes: none.
            if isinstance(mm, _TM) and 0 not in list(mm.shape):
                outs.append(self.fresh(node.name if k == 0 else f"{node.name}_{k}", mm))
            else:
                outs.append(None)
        real = [o for o in outs if o is not None]
        if not real:
            raise self.error("produces no tensor")
        self.opaque(payload or _target_name(node.target).split(".")[1], ins, real)
        self.bind(node, outs if isinstance(m, (list, tuple)) else outs[0])
        self.set_row("opaque", reason)

    def do_compute(self, node: Any, name: str) -> bool:
        m = _meta(node)
        if self.fold_constant(node, name):
            return True
        if name in ("addmm", "mm", "bmm", "baddbmm", "matmul", "linear"):
            return self.do_matmul(node, name)
        if name == "convolution" or name == "_convolution":
            return self.do_conv(node)
        if name in ("_softmax", "softmax", "_log_softmax", "log_softmax"):
            x = self.tensor(node.args[0])
            dim = node.args[1] % len(x.shape)
            dt = self.out_dtype(node)
            mx = self.reduce("max", x, [dim], True, dt, name=node.name + "_max")
            e = self.pointwise("sub_exp", [x, mx], x.shape, dt, name=node.name + "_exp")
            s = self.reduce("sum", e, [dim], True, dt, name=node.name + "_sum")
            log = "log" in name
            out = self.pointwise("log_div" if log else "div", [e, s] if not log else [x, mx, s], x.shape, dt, name=node.name)
            self.bind(node, out)
            self.set_row("mapped", "softmax: max, sub+exp, sum, div over the dim (4 ops)")
            return True
        if name in ("native_layer_norm", "layer_norm"):
            x = self.tensor(node.args[0])
            shape = node.args[1]
            w, b = self.val(_arg(node, 2, "weight")), self.val(_arg(node, 3, "bias"))
            dt = self.out_dtype(node)
            dims = list(range(len(x.shape) - len(shape), len(x.shape)))
            mean, xc, rstd = self.normalize(x, dims, dt, node.name)
            ins = [xc, rstd] + [v for v in (w, b) if isinstance(v, _Val)]
            y = self.pointwise("mul_affine", ins, x.shape, dt, name=node.name)
            self.bind(node, [y, mean, rstd] if name == "native_layer_norm" else y)
            self.set_row("mapped", "layer norm: mean, centre, mean of squares, rsqrt, scale+shift (5 ops)")
            return True
        if name == "native_group_norm":
            # Layer norm over each group: x viewed as [N, G, C / G, *spatial], normalized over all
            # but the first two dims, the per-channel weight and bias viewed as [1, G, C / G, 1...].
            x = self.tensor(node.args[0])
            w, b = self.val(node.args[1]), self.val(node.args[2])
            G = int(node.args[6])
            N, C, rest = x.shape[0], x.shape[1], list(x.shape[2:])
            if G < 1 or C % G:
                return False
            gshape = [N, G, C // G] + rest
            xg = self.view_reshape(x, gshape, node)
            dims = list(range(2, len(gshape)))
            dt = self.out_dtype(node)
            mean, xc, rstd = self.normalize(xg, dims, dt, node.name)
            cshape = [1, G, C // G] + [1] * len(rest)
            ins = [xc, rstd] + [self.view_reshape(v, cshape, node) for v in (w, b) if isinstance(v, _Val)]
            y = self.pointwise("mul_affine", ins, gshape, dt, name=node.name)
            self.bind(node, [self.view_reshape(y, list(x.shape), node), self.view_reshape(mean, [N, G], node),
                             self.view_reshape(rstd, [N, G], node)])
            self.set_row("mapped", "group norm: layer norm over [N, G, C/G, ...] (5 ops; the outputs are views)")
            return True
        if name == "glu":
            x = self.tensor(node.args[0])
            dim = _arg(node, 1, "dim", -1) % len(x.shape)
            half = x.shape[dim] // 2
            a, g = self.view_slice(x, dim, 0, half, 1), self.view_slice(x, dim, half, 2 * half, 1)
            self.bind(node, self.pointwise("mul_sigmoid", [a, g], list(m.shape), self.out_dtype(node), name=node.name))
            self.set_row("mapped", "glu: a * sigmoid(b) over the two halves (views)")
            return True
        if name == "prelu":
            x, w = self.tensor(node.args[0]), self.tensor(node.args[1])
            if len(w.shape) == 1 and w.shape[0] > 1 and len(x.shape) >= 2:
                shape = [1] * len(x.shape)
                shape[1] = w.shape[0]
                w = self.view_reshape(w, shape, node)
            self.bind(node, self.pointwise("prelu", [x, w], x.shape, self.out_dtype(node), name=node.name))
            self.set_row("mapped", "prelu: one pointwise op, the slope per channel")
            return True
        if name in ("native_batch_norm", "_native_batch_norm_legit_no_training", "batch_norm",
                    "_native_batch_norm_legit"):
            x = self.tensor(node.args[0])
            training = _arg(node, 5, "training", False)
            if training and name != "_native_batch_norm_legit_no_training":
                return False
            ins = [x]
            shape = [1] * len(x.shape)
            shape[1] = x.shape[1]
            for a in node.args[1:5]:
                v = self.val(a)
                if isinstance(v, _Val):
                    ins.append(self.view_reshape(v, shape, node) if len(v.shape) == 1 else v)
            dt = self.out_dtype(node)
            y = self.pointwise("batch_norm", ins, x.shape, dt, name=node.name)
            outs = [y]
            if isinstance(m, (list, tuple)):
                for k, mm in enumerate(list(m)[1:]):
                    pt = self.new_pt(f"{node.name}_{k + 1}", list(mm.shape), self.dtype_of(mm.dtype), graph_input=True)
                    outs.append(_Val.whole(pt))
            self.bind(node, outs if isinstance(m, (list, tuple)) else y)
            self.set_row("mapped", "batch norm (inference): one pointwise op with per-channel statistics")
            return True
        if name in ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "pixel_shuffle"):
            return self.do_spread(node, name)
        if name in ("max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "_adaptive_avg_pool2d"):
            return self.do_pool(node, name)
        if name in ("max", "min") and len(node.args) > 1 and isinstance(node.args[1], torch.fx.Node):
            name = "maximum" if name == "max" else "minimum"  # the binary overloads
        if name in ("mean", "sum", "amax", "amin", "var", "std", "prod", "any", "all", "logsumexp", "norm",
                    "linalg_vector_norm", "max", "min", "argmax", "argmin") and isinstance(m, _TM) or \
                (name in ("max", "min") and isinstance(m, (list, tuple))):
            x = self.tensor(node.args[0])
            r = len(x.shape)
            if name in ("norm", "linalg_vector_norm"):
                dims = _arg(node, 2, "dim", None)
                keep = _arg(node, 3, "keepdim", False)
            elif name in ("var", "std"):
                dims = _arg(node, 1, "dim", None)
                keep = node.kwargs.get("keepdim", _arg(node, 3, "keepdim", False))
            else:
                dims = _arg(node, 1, "dim", None)
                keep = _arg(node, 2, "keepdim", False)
            if dims is None:
                dims = list(range(r))
            dims = [dims] if isinstance(dims, int) else list(dims)
            mv = m[0] if isinstance(m, (list, tuple)) else m
            out = self.reduce(_REDUCE.get(name, name), x, dims, bool(keep), self.dtype_of(mv.dtype), name=node.name)
            if isinstance(m, (list, tuple)) and _uses_output(node, 1):
                idx = self.fresh(node.name + "_indices", m[1])
                self.opaque("argmax_indices", [x], [idx], name=node.name + "_indices")
                self.bind(node, [out, idx])
                self.set_row("mapped", "reduction; its indices output is an opaque op (data-dependent)")
            else:
                self.bind(node, [out, None] if isinstance(m, (list, tuple)) else out)
                self.set_row("mapped", f"reduction ({_REDUCE.get(name, name)}) over dims {sorted(d % r for d in dims)}")
            return True
        if name in ("as_strided", "as_strided_"):
            # Only the restride of a whole contiguous tensor to its own shape (meta kernels emit it
            # after adaptive pooling) is a no-op; any other stride pattern is opaque.
            x = self.tensor(node.args[0])
            size, stride = list(node.args[1]), list(node.args[2])
            off = _arg(node, 3, "storage_offset", 0) or 0
            contiguous = [math.prod(size[i + 1:]) for i in range(len(size))]
            if x.is_identity() and size == x.shape and off == 0 and all(
                    a == b or n == 1 for a, b, n in zip(stride, contiguous, size)):
                self.bind(node, x)
                self.set_row("folded", f"{name} to the tensor's own shape and contiguous strides: the same tensor",
                             compute=False)
                return True
            return False
        if name in ("embedding",):
            self.do_opaque(node, "embedding: a data-dependent gather of rows (opaque gather)", payload="gather")
            return True
        if name == "cat":
            tensors = [self.tensor(a) for a in node.args[0]]
            dim = _arg(node, 1, "dim", 0)
            out = self.fresh(node.name, m)
            self.opaque("concat", tensors, [out])
            self.bind(node, out)
            self.set_row("folded", f"concat along dim {dim}: a copy op (opaque kind: one op writes each output once, "
                                   "and its pieces come from different inputs)", compute=False)
            return True
        if name == "constant_pad_nd":
            x = self.tensor(node.args[0])
            pad = list(node.args[1])
            value = _arg(node, 2, "value", 0)
            out = self.pad(x, pad, value, node.name)
            self.bind(node, out)
            self.set_row("folded", "pad: a copy op writing the input at an offset (pointwise, offset output map)",
                         compute=False)
            return True
        if name in _UNARY or name in _BINARY or name.rstrip("_") in _UNARY | _BINARY:
            if not isinstance(m, _TM):
                return False
            ins = [self.val(a) for a in node.args if isinstance(self.val(a), _Val)]
            ins += [self.val(a) for a in node.kwargs.values() if isinstance(self.val(a), _Val)]
            base = name.rstrip("_")
            inplace = name.endswith("_") and node.args and isinstance(self.val(node.args[0]), _Val)
            if name in ("clone", "contiguous", "_to_copy", "to", "copy"):
                x = ins[0]
                dt = self.dtype_of(m.dtype)
                if x.is_identity() and dt == x.pt.dtype and not self.has_inplace:
                    self.bind(node, x)
                    self.set_row("folded", f"{name} of a whole tensor moves no bytes in a planned program: the same tensor",
                                 compute=False)
                    return True
                out = self.copy(x, "copy" if dt == x.pt.dtype else "cast", name=node.name, dtype=dt)
                self.bind(node, out)
                self.set_row("folded", f"{name}: a copy op materializes the view (pointwise, view maps on the input)",
                             compute=False)
                return True
            if base in ("zeros_like", "ones_like", "full_like", "fill", "zero", "empty_like"):
                pt = self.new_pt(node.name, list(m.shape), self.dtype_of(m.dtype), graph_input=True)
                pt.const = True
                self.bind(node, _Val.whole(pt))
                self.set_row("folded", "creates a constant tensor: a graph input of the program", compute=False)
                return True
            if inplace and all(v.pt.const for v in ins):
                # Constant folding of an update of a constant (swin's attention mask: slices of a
                # zeros tensor set to region numbers): it stays a constant, with no op.
                self.bind(node, ins[0])
                self.set_row("folded", "updates a constant with constants: still a constant", compute=False)
                return True
            if not ins:  # (ops on constants and weights were folded by fold_constant already)
                pt = self.new_pt(node.name, list(m.shape), self.dtype_of(m.dtype), graph_input=True)
                pt.const = True
                self.bind(node, _Val.whole(pt))
                self.set_row("folded", "computes on constants only: a graph input of the program", compute=False)
                return True
            partial = False  # in place on a view that no later reader sees through another view
            if inplace:
                tgt = ins[0]
                if not tgt.is_identity():
                    if not self.view_update_is_private(node, tgt):
                        self.do_opaque(node, "in-place op on a view (partial update of a tensor)")
                        return True
                    partial = True
            if name == "copy_":
                ins = [self.tensor(node.args[1])]  # x.copy_(src) overwrites x: it does not read x
            out = self.pointwise(base, ins, list(m.shape), self.dtype_of(m.dtype), name=node.name)
            if partial:
                # Later readers of this very view read the new tensor; the others are disjoint or dead.
                tgt = ins[0]
                for n, v in list(self.env.items()):
                    if isinstance(v, _Val) and v.pt is tgt.pt and _same_view(v, tgt):
                        self.env[n] = _Val.whole(out.pt)
            elif inplace:
                # The op writes a new program tensor; later readers of the mutated tensor read it.
                old = ins[0].pt
                for n, v in list(self.env.items()):
                    if isinstance(v, _Val) and v.pt is old:
                        self.env[n] = _Val(out.pt, v.shape, v.terms, v.off)
                        self.node_pts.setdefault(id(out.pt), []).append(n)
            self.bind(node, out)
            self.set_row("mapped", f"pointwise {base}" + (" (in place: writes a new tensor)" if inplace else ""))
            return True
        return False

    def pad(self, x: _Val, pad: List[int], value: Any, name: str, payload: str = "pad") -> _Val:
        r = len(x.shape)
        lo = [0] * r
        hi = [0] * r
        for k in range(len(pad) // 2):
            d = r - 1 - k
            lo[d], hi[d] = pad[2 * k], pad[2 * k + 1]
        if any(p < 0 for p in lo + hi):
            raise self.error("negative padding (a crop) is not supported")
        shape = [s + a + b for s, a, b in zip(x.shape, lo, hi)]
        out = _Val.whole(self.new_pt(name, shape, x.pt.dtype))
        # Iterate over the input; the output map adds the low padding. A size-1 dim that is
        # padded keeps a var of range 1: the output dim is larger than 1, and a constant may only
        # index a size-1 output dim (the program checker's rule: every written dim is iterated).
        outv = _Val(out.pt, x.shape, [{j: 1} for j in range(r)], lo)
        var_of = {}
        for d in range(r):
            if x.shape[d] > 1 or shape[d] > 1:
                var_of[d] = len(var_of)
        exprs = [{var_of[d]: 1} if d in var_of else {} for d in range(r)]
        self.emit_exprs("pointwise", payload, [(x, exprs)], [(outv, exprs)], ["parallel"] * len(var_of),
                        [x.shape[d] for d in sorted(var_of)], name=name)
        return out

    def do_matmul(self, node: Any, name: str) -> bool:
        m = _meta(node)
        dt = self.dtype_of(m.dtype)
        bias = None
        if name in ("addmm", "baddbmm"):
            bias, a, b = (self.val(x) for x in node.args[:3])
            if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
                return False
        elif name == "linear":
            a, w = self.tensor(node.args[0]), self.tensor(node.args[1])
            b = self.view_permute(w, [1, 0])
            bias = self.val(_arg(node, 2, "bias"))
        else:
            a, b = self.tensor(node.args[0]), self.tensor(node.args[1])
        if len(a.shape) < 2 or len(b.shape) < 2:
            return False
        out_shape = list(m.shape)
        r = len(out_shape)
        # Vars: output dims of size > 1 (batch.., M, N) then K.
        var_of: Dict[int, int] = {}
        for od in range(r):
            if out_shape[od] > 1:
                var_of[od] = len(var_of)
        k = len(var_of)
        am: List[Optional[int]] = [None] * len(a.shape)
        bm: List[Optional[int]] = [None] * len(b.shape)
        for i in range(len(a.shape) - 2):
            am[i] = var_of.get(r - len(a.shape) + i) if a.shape[i] > 1 else None
        for i in range(len(b.shape) - 2):
            bm[i] = var_of.get(r - len(b.shape) + i) if b.shape[i] > 1 else None
        am[-2], am[-1] = (var_of.get(r - 2) if a.shape[-2] > 1 else None), k
        bm[-2], bm[-1] = k, (var_of.get(r - 1) if b.shape[-1] > 1 else None)
        mmname = node.name + ("_mm" if isinstance(bias, _Val) else "")
        out = _Val.whole(self.new_pt(mmname, out_shape, dt))
        om = [var_of.get(od) for od in range(r)]
        ranges = [out_shape[od] for od in sorted(var_of)] + [a.shape[-1]]
        if a.shape[-1] == 1:
            self.pointwise("mul", [a, b], out_shape, dt, name=mmname, out=out)
        else:
            self.emit("matmul", "matmul", [(a, am), (b, bm)], [(out, om)], ["parallel"] * k + ["reduction"],
                      name=mmname, ranges=ranges)
        # A weight read only here as a transposed B ([N, K] read as (k, n)) is laid out sticked on
        # N, the layout matmul needs (weights are laid out once when loaded, as torch-spyre does).
        w = b.pt
        if (w.graph_input and w.reads == 1 and len(w.shape) == 2 and len(b.shape) == 2 and b.off == [0, 0]
                and b.terms == [{1: 1}, {0: 1}] and w.dim_order is None):
            w.dim_order = [1, 0]
        if isinstance(bias, _Val):
            out = self.pointwise("add", [out, bias], out_shape, dt, name=node.name)
        self.bind(node, out)
        why = {"addmm": "matmul + bias add", "baddbmm": "batched matmul + add", "linear": "matmul (B = W^T) + bias",
               "bmm": "batched matmul", "mm": "matmul", "matmul": "matmul"}[name]
        self.set_row("mapped", why + "; transposed operands are maps, not copies")
        return True

    def do_conv(self, node: Any) -> bool:
        x, w = self.tensor(node.args[0]), self.tensor(node.args[1])
        bias = self.val(node.args[2])
        stride, padding, dilation, transposed, _, groups = node.args[3:9]
        m = _meta(node)
        if transposed:
            self.do_opaque(node, "transposed convolution: its input index is (h - r) / stride, not affine")
            return True
        nd = len(x.shape) - 2
        if nd not in (1, 2, 3):
            return False
        if any(p > 0 for p in padding):
            pad = []
            for p in reversed(list(padding)):
                pad += [p, p]
            x = self.pad(x, pad, 0, node.name + "_pad")
        out_shape = list(m.shape)
        N, O = out_shape[0], out_shape[1]
        C = x.shape[1]
        G = groups
        Cg, Og = C // G, O // G
        # Vars: n, [g], [k], spatial outs, [c], kernel spatial.
        iters, ranges = [], []

        def var(kind: str, ext: int) -> Optional[int]:
            if ext == 1:
                return None
            iters.append(kind)
            ranges.append(ext)
            return len(iters) - 1
        vn = var("parallel", N)
        vg = var("parallel", G)
        vk = var("parallel", Og)
        vh = [var("parallel", out_shape[2 + i]) for i in range(nd)]
        vc = var("reduction", Cg)
        vr = [var("reduction", w.shape[2 + i]) for i in range(nd)]

        def e(*terms):
            return {v: c for v, c in terms if v is not None}
        # Maps as explicit expressions over the base program tensors (views composed by hand).
        xin = [e((vn, 1)), e((vg, Cg), (vc, 1))] + [e((vh[i], stride[i]), (vr[i], dilation[i])) for i in range(nd)]
        win = [e((vg, Og), (vk, 1)), e((vc, 1))] + [e((vr[i], 1)) for i in range(nd)]
        yout = [e((vn, 1)), e((vg, Og), (vk, 1))] + [e((vh[i], 1)) for i in range(nd)]
        y = _Val.whole(self.new_pt(node.name + ("_conv" if isinstance(bias, _Val) else ""), out_shape, self.dtype_of(m.dtype)))
        ops = []
        for v, exprs in ((x, xin), (w, win), (y, yout)):
            ops.append((v, exprs))
        self.emit_exprs("reduction" if "reduction" in iters else "pointwise", f"conv{nd}d", ops[:2], ops[2:], iters, ranges,
                        name=node.name + ("_conv" if isinstance(bias, _Val) else ""))
        # A filter read only here (a graph input) is sticked on its input channels when they
        # outnumber its kernel width: the default layout sticks a 3x3 filter on its width, 3 elements
        # padded to a 64-element stick (21 times its bytes). Sticked on C it is a contraction operand
        # the convolution reads like a matmul's A on K (docs/layout.md); weights are laid out once
        # when loaded, as for nn.Linear above.
        wp = w.pt
        if (wp.graph_input and wp.reads == 1 and w.is_identity() and wp.dim_order is None and len(wp.shape) == nd + 2
                and wp.shape[-1] > 1 and wp.shape[1] > wp.shape[-1]):
            wp.dim_order = [0] + list(range(2, nd + 2)) + [1]
        if isinstance(bias, _Val):
            shape = [1] * len(out_shape)
            shape[1] = O
            y = self.pointwise("add", [y, self.view_reshape(bias, shape, node)], out_shape, y.pt.dtype, name=node.name)
        self.bind(node, y)
        self.set_row("mapped", f"conv{nd}d (stride {list(stride)}, groups {G}): exact affine-sum maps"
                     + (", explicit pad op" if any(p > 0 for p in padding) else "") + (", bias add" if isinstance(bias, _Val) else ""))
        return True

    def view_update_is_private(self, node: Any, tgt: _Val) -> bool:
        """True when no node after ``node`` reads ``tgt``'s tensor through a view that may overlap
        ``tgt`` other than ``tgt`` itself: then an in-place op on the view can write a new tensor
        (nn.LSTMCell updates its four gate chunks in place: disjoint slices of one tensor)."""
        here = self.pos.get(node, -1)
        for n, v in self.env.items():
            later = any(self.pos.get(u, here + 1) > here for u in getattr(n, "users", ()))
            if not later:
                continue
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if not isinstance(x, _Val) or x.pt is not tgt.pt:
                    continue
                if isinstance(v, _Val) and _same_view(x, tgt):
                    continue
                if not _disjoint_views(x, tgt):
                    return False
        return True

    def emit_exprs(self, kind, payload, ins, outs, iters, ranges, name):
        """Emits an op whose operand maps are given as expressions over the operand's view dims."""
        n = len(iters)
        op = {"name": self.uniq(name), "kind": kind, "payload": payload,
              "inputs": [v.pt.name for v, _ in ins], "outputs": [v.pt.name for v, _ in outs],
              "iterator_types": iters, "indexing_maps": []}
        for v, exprs in ins + outs:
            # Compose: base[j] = off[j] + sum coef * view[i], view[i] = exprs[i].
            res = []
            for j, t in enumerate(v.terms):
                ee: Dict[int, int] = {}
                for i, c in t.items():
                    for var, cc in exprs[i].items():
                        ee[var] = ee.get(var, 0) + c * cc
                res.append((ee, v.off[j]))
            op["indexing_maps"].append(_fmt(n, res))
        op["ranges"] = [int(r) for r in ranges]
        for v, _ in ins:
            v.pt.reads += 1
        for v, _ in outs:
            v.pt.producer = op
        self.ops.append(op)
        if self.row is not None:
            self.row.ops.append(op["name"])
        return op

    def do_spread(self, node: Any, name: str) -> bool:
        """Nearest upsampling by integer factors and pixel shuffle: a copy whose output map is an
        affine sum. Iterating the input index h and the offset r within a factor f, the output
        index is f * h + r, so no division appears (out[f*h + r] = in[h]; pixel shuffle reads
        channel c*f*f + i*f + j into out[c, f*h + i, f*w + j])."""
        x = self.tensor(node.args[0])
        out_shape = list(_meta(node).shape)
        iters: List[str] = []
        ranges: List[int] = []

        def var(ext: int) -> Optional[int]:
            if ext == 1:
                return None
            iters.append("parallel")
            ranges.append(ext)
            return len(iters) - 1

        def e(*terms):
            return {v: c for v, c in terms if v is not None}
        if name == "pixel_shuffle":
            f = int(node.args[1])
            if len(x.shape) < 3 or x.shape[-3] % (f * f):
                return False
            lead = [var(d) for d in x.shape[:-3]]
            vc, vi, vj = var(x.shape[-3] // (f * f)), var(f), var(f)
            vh, vw = var(x.shape[-2]), var(x.shape[-1])
            xin = [e((v, 1)) for v in lead] + [e((vc, f * f), (vi, f), (vj, 1)), e((vh, 1)), e((vw, 1))]
            yout = [e((v, 1)) for v in lead] + [e((vc, 1)), e((vh, f), (vi, 1)), e((vw, f), (vj, 1))]
            why = f"pixel shuffle by {f}: a copy, channel c*{f * f} + i*{f} + j to (c, {f}h + i, {f}w + j)"
        else:
            k = len(x.shape) - 2
            if k < 1 or any(o % i for o, i in zip(out_shape[2:], x.shape[2:])):
                self.do_opaque(node, _OPAQUE_REASONS[name])
                return True
            facs = [o // i for o, i in zip(out_shape[2:], x.shape[2:])]
            lead = [var(d) for d in x.shape[:2]]
            vs = [var(d) for d in x.shape[2:]]
            vr = [var(f) for f in facs]
            xin = [e((v, 1)) for v in lead] + [e((v, 1)) for v in vs]
            yout = [e((v, 1)) for v in lead] + [e((v, f), (r, 1)) for v, r, f in zip(vs, vr, facs)]
            why = f"nearest upsampling by {facs}: a copy, out[f*h + r] = in[h]"
        y = _Val.whole(self.new_pt(node.name, out_shape, self.out_dtype(node)))
        self.emit_exprs("pointwise", "copy", [(x, xin)], [(y, yout)], iters, ranges, name=node.name)
        self.bind(node, y)
        self.set_row("mapped", why)
        return True

    def do_pool(self, node: Any, name: str) -> bool:
        x = self.tensor(node.args[0])
        if name == "_adaptive_avg_pool2d":
            # Exact when the output divides the input: a window of in / out with the same stride.
            oh, ow = list(node.args[1])
            hh, ww = x.shape[-2], x.shape[-1]
            if hh % oh or ww % ow:
                self.do_opaque(node, f"adaptive average pool {hh}x{ww} -> {oh}x{ow}: windows of varying size")
                return True
            ks, stride, padding, dil = [hh // oh, ww // ow], [hh // oh, ww // ow], [0, 0], [1, 1]
        else:
            ks = list(node.args[1])
            stride = list(_arg(node, 2, "stride", []) or ks)
            padding = list(_arg(node, 3, "padding", [0, 0]))
            dil = list(_arg(node, 4, "dilation", [1, 1])) if name != "avg_pool2d" else [1, 1]
        if len(ks) == 1:
            ks *= 2
        if len(stride) == 1:
            stride *= 2
        if len(padding) == 1:
            padding *= 2
        if len(dil) == 1:
            dil *= 2
        m = _meta(node)
        mv = m[0] if isinstance(m, (list, tuple)) else m
        out_shape = list(mv.shape)
        # ceil_mode: the last window may run past the padded input; pad the high side to cover it.
        hi = [padding[i] for i in range(2)]
        for i in range(2):
            need = (out_shape[-2 + i] - 1) * stride[i] + (ks[i] - 1) * dil[i] + 1
            hi[i] = max(hi[i], need - x.shape[-2 + i] - padding[i])
        if any(padding) or any(hi):
            # Max pools pad with -inf (the pad op's payload says so), average pools with 0.
            x = self.pad(x, [padding[1], hi[1], padding[0], hi[0]], 0, node.name + "_pad",
                         payload="pad_neg_inf" if "max" in name else "pad")
        r = len(out_shape)
        iters, ranges = [], []

        def var(kind, ext):
            if ext == 1:
                return None
            iters.append(kind)
            ranges.append(ext)
            return len(iters) - 1
        lead = [var("parallel", out_shape[i]) for i in range(r - 2)]
        vh = [var("parallel", out_shape[r - 2 + i]) for i in range(2)]
        vr = [var("reduction", ks[i]) for i in range(2)]

        def e(*terms):
            return {v: c for v, c in terms if v is not None}
        xin = [e((v, 1)) for v in lead] + [e((vh[i], stride[i]), (vr[i], dil[i])) for i in range(2)]
        yout = [e((v, 1)) for v in lead] + [e((vh[i], 1)) for i in range(2)]
        y = _Val.whole(self.new_pt(node.name, out_shape, self.dtype_of(mv.dtype)))
        self.emit_exprs("reduction" if "reduction" in iters else "pointwise", "max_pool2d" if "max" in name else "avg_pool2d",
                        [(x, xin)], [(y, yout)], iters, ranges, node.name)
        if isinstance(m, (list, tuple)) and _uses_output(node, 1):
            idx = self.fresh(node.name + "_indices", m[1])
            self.opaque("pool_indices", [x], [idx], name=node.name + "_indices")
            self.bind(node, [y, idx])
        elif isinstance(m, (list, tuple)):
            self.bind(node, [y, None])
        else:
            self.bind(node, y)
        self.set_row("mapped", f"{name}: reduction over the window with affine-sum maps (h * {stride[0]} + r)"
                     + ("; the indices output is an opaque op" if isinstance(m, (list, tuple)) else ""))
        return True


def _uses_output(node: Any, k: int) -> bool:
    return any(u.target is operator.getitem and u.args[1] == k and len(u.users) > 0 for u in node.users)


# ---------------------------------------------------------------- tracing

def _module_paths(model: torch.nn.Module) -> Dict[int, str]:
    return {id(m): name for name, m in model.named_modules()}


_FACTORIES = {torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.eye, torch.linspace,
              torch.rand, torch.randn, torch.randint, torch.tensor, torch.as_tensor, torch.scalar_tensor}


class _FactoriesOnMeta(torch.overrides.TorchFunctionMode):
    """Tensors a forward creates without a device (``torch.zeros(2, 64)``, ``torch.arange(n)``) are
    made on meta like everything else traced; on the CPU they met meta tensors in the first op and
    the trace failed (a state initialized in forward, position ids). Used for a second trace only
    when the first one failed so (see trace)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _FACTORIES and kwargs.get("device") is None:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


def trace(model: torch.nn.Module, example_inputs: Sequence[Any]):
    """make_fx on meta tensors; every node gets meta["sp_module"], the module path it ran in."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless

    if not isinstance(model, torch.nn.Module):
        raise BadInput(f"to_program: expected a torch.nn.Module, got {type(model).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise BadInput(f"to_program: example_inputs: expected a tuple of arguments, got {type(example_inputs).__name__}")
    # Arguments may nest tensors in tuples, lists and dicts; other leaves (ints, floats, strings,
    # None: a step count, a flag) are passed as they are, so the trace is specialized to them.
    from torch.utils._pytree import tree_flatten, tree_unflatten
    leaves, spec = tree_flatten(list(example_inputs))
    for i, x in enumerate(leaves):
        if not isinstance(x, (torch.Tensor, bool, int, float, str, type(None))):
            raise BadInput(f"to_program: example_inputs: argument leaf {i} is a {type(x).__name__}; expected tensors "
                           "(in tuples, lists or dicts) and plain values (int, float, bool, str, None)")
    tensor_at = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    inputs = [leaves[i] for i in tensor_at]
    # Recurrent modules run one fused kernel over weights cached at construction (_flat_weights),
    # which the meta-tensor swap below does not reach: name them instead of a device error.
    for path, mod in model.named_modules():
        if isinstance(mod, torch.nn.RNNBase):
            raise UnsupportedModel(f"module '{path or type(model).__name__}' ({type(mod).__name__}): recurrent modules "
                                   "(RNN, LSTM, GRU) are not supported; unroll the cell (nn.LSTMCell etc.) over time steps")
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    names = list(state)
    metas = [torch.empty(v.shape, dtype=v.dtype, device="meta") for v in state.values()]
    in_metas = [torch.empty(x.shape, dtype=x.dtype, device="meta") for x in inputs]
    paths = _module_paths(model)
    stack: List[str] = []

    def pre(mod, args):
        stack.append(paths.get(id(mod), stack[-1] if stack else ""))

    def post(mod, args, out):
        if stack:
            stack.pop()

    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post)
    orig = torch.fx.Graph.create_node

    def create_node(self, *a, **k):
        n = orig(self, *a, **k)
        n.meta["sp_module"] = stack[-1] if stack else ""
        return n

    on_meta = [False]  # second attempt: factories without a device make meta tensors

    def f(*flat):
        args = list(leaves)
        for i, x in zip(tensor_at, flat[len(names):]):
            args[i] = x
        with _FactoriesOnMeta() if on_meta[0] else contextlib.nullcontext():
            return stateless.functional_call(model, dict(zip(names, flat[:len(names)])), tuple(tree_unflatten(args, spec)))

    torch.fx.Graph.create_node = create_node
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            try:
                g = make_fx(f, tracing_mode="real")(*metas, *in_metas)
            except RuntimeError as e:
                # A tensor made in forward on the CPU met the meta tensors: trace again with the
                # factories on meta. Only then, so that a model reading such a tensor's values
                # (`.tolist()`, `.item()`) traces as before.
                if "meta" not in str(e) or "device" not in str(e):
                    raise
                stack.clear()
                on_meta[0] = True
                g = make_fx(f, tracing_mode="real")(*metas, *in_metas)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - any trace failure becomes one clear line
        where = stack[-1] if stack else ""
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnsupportedModel(f"trace failed in module '{where or type(model).__name__}' "
                               f"({type(e).__name__}): {msg}") from None
    finally:
        torch.fx.Graph.create_node = orig
        h1.remove()
        h2.remove()
        model.train(was_training)
    return g, names, metas + in_metas


def convert(model: torch.nn.Module, example_inputs: Sequence[Any], dtype: Optional[str] = None,
            name: Optional[str] = None) -> Tuple[dict, Report]:
    if dtype is not None:
        if str(dtype) not in _DTYPE_ALIASES and dtype not in (torch.float16, torch.bfloat16, torch.float32):
            raise BadInput(f"to_program: dtype {dtype!r}: expected fp16, bf16 or fp32")
        dtype = _DTYPES[dtype] if isinstance(dtype, torch.dtype) else _DTYPE_ALIASES[str(dtype)]
    t0 = time.perf_counter()
    g, names, flat_metas = trace(model, example_inputs)
    nin = len(flat_metas) - len(names)
    t1 = time.perf_counter()
    c = _Run(name or type(model).__name__, dtype)
    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    c.pos = {n: k for k, n in enumerate(g.graph.nodes)}
    c.has_inplace = any(n.op == "call_function" and _target_name(n.target).startswith("aten.")
                        and _target_name(n.target).split(".")[1].endswith("_") for n in g.graph.nodes)
    for k, n in enumerate(placeholders):
        m = flat_metas[k] if k < len(flat_metas) else _meta(n)
        label = names[k] if k < len(names) else (f"input{k - len(names)}" if nin > 1 else "input")
        if isinstance(m, (torch.Tensor, _TM)) and 0 in list(m.shape):
            what = f"example input tensor {k - len(names)}" if k >= len(names) else f"parameter '{label}'"
            raise BadInput(f"to_program: {what}: shape {list(m.shape)} has no elements; the program format needs "
                           "positive sizes")
        if isinstance(m, (torch.Tensor, _TM)):
            pt = c.new_pt(label, list(m.shape), c.dtype_of(m.dtype), graph_input=True)
            pt.weight = k < len(names)
            c.bind(n, _Val.whole(pt))
        else:
            c.env[n] = m
    outputs: List[_Val] = []
    for n in g.graph.nodes:
        c.node = n
        if n.op == "placeholder":
            pass
        elif n.op == "get_attr":
            t = getattr(g, n.target)
            if isinstance(t, torch.Tensor):
                pt = c.new_pt(str(n.target), list(t.shape), c.dtype_of(t.dtype), graph_input=True)
                c.bind(n, _Val.whole(pt))
            else:
                c.env[n] = t
        elif n.op == "call_function":
            try:
                c.run_node(n)
            except BadInput:
                raise
            except Exception as e:  # noqa: BLE001 - a clear line, never a traceback
                raise c.error(f"cannot convert ({type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''})") from None
        elif n.op == "output":
            flat = []

            def walk(a):
                if isinstance(a, dict):
                    a = list(a.values())
                if isinstance(a, (list, tuple)):
                    for x in a:
                        walk(x)
                elif isinstance(a, torch.fx.Node):
                    flat.append(c.env.get(a))
            walk(n.args[0])
            c.row = Row(n.name, "output", "", "folded", "graph outputs", compute=False)
            for k, v in enumerate(flat):
                if not isinstance(v, _Val):
                    continue
                if not v.is_identity() or v.pt.graph_input:
                    v = c.copy(v, "copy", name=f"output{k}")
                v.pt.graph_output = True
                outputs.append(v)
            if c.row.ops:
                c.row.reason = "graph outputs that are views or inputs: copy ops"
                c.rows.append(c.row)
        else:
            raise c.error(f"unexpected FX node kind {n.op}")
        c.processed.add(n)
    c.node = None
    used = set()
    for op in c.ops:
        used.update(op["inputs"])
        used.update(op["outputs"])
    tensors = []
    for pt in c.pts:
        if pt.name not in used:
            continue
        if 0 in list(pt.shape):  # the program format (and any plan) needs positive sizes
            op = next(o["name"] for o in c.ops if pt.name in o["inputs"] + o["outputs"])
            raise UnsupportedModel(f"to_program: tensor '{pt.name}' of shape {list(pt.shape)} (used by op '{op}') has "
                                   "no elements; the program format needs positive sizes")
        t = {"name": pt.name, "shape": pt.shape, "dtype": pt.dtype}
        if pt.dim_order is not None and (pt.reads == 1 or not pt.graph_input) and len(pt.shape) == len(
                [d for d in pt.dim_order if d >= 0]):
            t["dim_order"] = pt.dim_order
        if pt.graph_input:
            t["graph_input"] = True
        if pt.graph_output:
            t["graph_output"] = True
        tensors.append(t)
    if not c.ops:
        raise BadInput(f"to_program: the model '{c.name}' performs no tensor op")
    program = {"format": "scratchplan-program", "version": 1, "name": c.name, "tensors": tensors, "ops": c.ops}
    t2 = time.perf_counter()
    return program, Report(c.rows, t1 - t0, t2 - t1)
