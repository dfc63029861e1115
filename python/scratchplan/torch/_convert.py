"""ATen graph -> scratchplan program: the driver (docs/torch.md has the rules).

``convert`` traces the model (``_trace``), then walks the FX graph once: every node value is a
*view* of a program tensor (``_views``), and each ATen node goes to the converter registered for
its target (``_registry``, converters in ``_ops``), which emits program ops through the writer
(``_writer``). Ops without a converter, or whose converter finds no exact form, become opaque ops
with the reason. Nothing is dropped: the report has one row per ATen op.

This module keeps what every converter shares: operand lookup, binding values, the building
blocks (pointwise, reduction, copy, pad, view wrappers) and constant folding.
"""
from __future__ import annotations

import gc
import operator
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .._common import BadInput
from . import _registry
from . import _views as V
from ._report import Report, Row, UnsupportedModel
from ._views import Val
from ._views import parse_results as _parse_results  # noqa: F401 - the tests' evaluator reads maps
from ._fx import TM, arg, meta, uses_output  # noqa: F401 - converters share them
from ._writer import DTYPES, ProgramWriter, target_name

__all__ = ["convert", "Report", "Row", "UnsupportedModel"]

_DTYPE_ALIASES = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "bfloat16": "bf16",
                  "fp32": "fp32", "float32": "fp32", "float": "fp32"}


class Converter(ProgramWriter):
    def __init__(self, name: str, dtype: Optional[str]) -> None:
        super().__init__(name, dtype)
        self.rows: List[Row] = []
        self.env: Dict[Any, Any] = {}
        self.node_pts: Dict[int, List[Any]] = {}  # id(pt) -> fx nodes whose value views it
        self.processed: set = set()
        # With in-place ops in the graph a clone must stay a copy (the mutation would reach both).
        self.has_inplace = False
        self.pos: Dict[Any, int] = {}  # FX node -> its place in the graph (which readers come later)

    # -- operands and results
    def val(self, a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            if a not in self.env:
                raise self.error(f"input {a.name} has no value")
            return self.env[a]
        return a

    def tensor(self, a: Any) -> Val:
        v = self.val(a)
        if not isinstance(v, Val):
            raise self.error(f"expected a tensor operand, got {type(v).__name__}")
        return v

    def bind(self, node: Any, v: Any) -> None:
        self.env[node] = v
        for x in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(x, Val):
                self.node_pts.setdefault(id(x.pt), []).append(node)

    def viewers(self, pt: Any) -> List[Any]:
        """The nodes whose value may view ``pt`` (a superset: some were rebound since); looked up
        instead of scanning every value, which was quadratic in the graph (MViT v2)."""
        return list(dict.fromkeys(self.node_pts.get(id(pt), ())))

    def rebind(self, old: Any, new: Any, skip: Any = None) -> None:
        """Later readers of ``old`` read ``new`` (same views): an op wrote a new tensor in place of it."""
        for n in self.viewers(old):
            v = self.env.get(n)
            if n is not skip and isinstance(v, Val) and v.pt is old:
                self.env[n] = Val(new, v.shape, v.terms, v.off)
                self.node_pts.setdefault(id(new), []).append(n)

    def set_row(self, decision: str, reason: str, compute: bool = True) -> None:
        self.row.decision = decision
        self.row.reason = reason
        self.row.compute = compute

    def out_dtype(self, node: Any) -> str:
        m = meta(node)
        if isinstance(m, (list, tuple)):
            m = m[0]
        return self.dtype_of(m.dtype)

    def const_input(self, base: str, m: Any) -> Val:
        """A constant graph input (a tensor made without reading one)."""
        pt = self.new_pt(base, list(m.shape), self.dtype_of(m.dtype), graph_input=True)
        pt.const = True
        pt.origin = (self.node.name, 0) if self.node is not None else None
        return Val.whole(pt)

    # -- dispatch
    def run_node(self, node: Any) -> None:
        t = node.target
        full = target_name(t)
        name = full.split(".")[1] if full.startswith("aten.") else full
        # unsafe_split / unsafe_chunk (nn.LSTMCell's gates) differ from split / chunk only in autograd.
        name = name[len("unsafe_"):] if name in ("unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk") else name
        if t is operator.getitem:
            src = self.val(node.args[0])
            self.bind(node, src[node.args[1]] if isinstance(src, (list, tuple)) else src)
            return
        self.row = Row(node.name, full, node.meta.get("sp_module", ""), "mapped", "")
        entry = _registry.lookup(full, name)
        kind = entry[1] if entry else "compute"
        if self.zero_size(node, name, kind) or self.complex_values(node, name):
            pass
        elif kind == "view":
            self.bind(node, entry[0](self, node, name))
            if self.row.decision == "mapped":
                self.set_row("folded", self.row.reason or "view: folded into the consumers' indexing maps", compute=False)
            else:
                self.row.compute = False
        elif kind == "create":
            entry[0](self, node, name)
        elif not self.fold_constant(node, name) and not (entry and entry[0](self, node, name)):
            self.do_opaque(node, _registry.reason(name) or f"no affine form known for {full}",
                           compute=not _registry.moves_data(name))
        self.rows.append(self.row)
        self.row = None

    # -- tensors without elements and complex tensors
    def zero_size(self, node: Any, name: str, kind: str) -> bool:
        """A tensor without elements (an empty slice: a streaming model's empty right context) is
        legal and holds no bytes: an op whose outputs are all empty is dropped (its value is an
        empty tensor no op reads); an op that reads an empty tensor and writes elements computes
        them from the other operands (``cat`` drops the piece) or, with none, makes a constant.
        True when the node was handled here."""
        m = meta(node)
        metas = [t for t in (m if isinstance(m, (list, tuple)) else [m]) if isinstance(t, TM)]
        ins = [v for v in (self.env.get(a) for a in node.all_input_nodes) if isinstance(v, Val)]
        for a in node.all_input_nodes:
            v = self.env.get(a)
            if isinstance(v, (list, tuple)):
                ins += [x for x in v if isinstance(x, Val)]
        empty_in = [v for v in ins if 0 in v.shape]
        if metas and all(0 in t.shape for t in metas):
            outs = [Val.whole(self.new_pt(node.name, t.shape, self.dtype_of(t.dtype))) if isinstance(t, TM) else None
                    for t in (m if isinstance(m, (list, tuple)) else [m])]
            self.bind(node, outs if isinstance(m, (list, tuple)) else outs[0])
            self.set_row("folded", "zero-size tensor: no elements, no bytes, no op", compute=False)
            return True
        if not empty_in or kind == "view" or name in ("cat", "stack"):
            return False
        rest = [v for v in ins if 0 not in v.shape]
        if not rest:
            outs = [self.const_input(node.name, t) if isinstance(t, TM) else None
                    for t in (m if isinstance(m, (list, tuple)) else [m])]
            self.bind(node, outs if isinstance(m, (list, tuple)) else outs[0])
            self.set_row("folded", "computed from tensors without elements only: a constant graph input",
                         compute=False)
            return True
        self.do_opaque(node, f"{name} reads a tensor without elements: opaque, reading its other operands")
        return True

    def complex_values(self, node: Any, name: str) -> bool:
        """Complex tensors (STFT) are stored as (real, imag) pairs, a trailing dim of 2, which is
        what ``view_as_real`` shows: ``view_as_real`` / ``view_as_complex`` are the same tensor;
        every other op reading or writing a complex tensor is opaque with its true traffic (the
        program format has no complex arithmetic). True when the node was handled here."""
        def cplx(t):
            return isinstance(t, TM) and t.dtype.is_complex
        m = meta(node)
        outs = m if isinstance(m, (list, tuple)) else [m]
        if not (any(cplx(t) for t in outs) or any(cplx(meta(a)) for a in node.all_input_nodes)):
            return False
        x = self.val(node.args[0]) if node.args else None
        if name in ("view_as_real", "view_as_complex", "alias", "detach", "clone", "contiguous", "lift_fresh") \
                and isinstance(x, Val) and x.is_identity():
            self.bind(node, x)
            self.set_row("folded", f"{name}: complex tensors are stored as (real, imag) pairs: the same tensor",
                         compute=False)
            return True
        if name == "abs" and isinstance(x, Val) and not any(cplx(t) for t in outs):
            # |z| of (real, imag) pairs: the norm over the pair dim, a mapped reduction.
            self.bind(node, self.reduce("norm", x, [len(x.shape) - 1], False, self.out_dtype(node), name=node.name))
            self.set_row("mapped", "abs of a complex tensor: the norm of its (real, imag) pairs, a reduction")
            return True
        if name in ("view_as_real", "view_as_complex", "alias", "detach", "clone", "contiguous", "lift_fresh"):
            self.bind(node, self.copy(x, "copy", name=node.name))
            self.set_row("folded", f"{name} of a view of a complex tensor: a copy op", compute=False)
            return True
        self.do_opaque(node, f"{name} on complex tensors: stored as (real, imag) pairs; the program format has no "
                       "complex arithmetic, so the op is opaque with its true traffic")
        return True

    # -- views (errors name the node)
    def _view(self, fn, *a):
        try:
            return fn(*a)
        except V.ViewError as e:
            raise self.error(str(e)) from None

    def view_permute(self, v: Val, perm: Sequence[int]) -> Val:
        return V.permute(v, perm)

    def view_drop(self, v: Val, fixed: Dict[int, int], new_shape: Sequence[int]) -> Val:
        return V.drop(v, fixed, new_shape)

    def view_insert(self, v: Val, at: int) -> Val:
        return V.insert(v, at)

    def view_slice(self, v: Val, dim: int, start: int, end: int, step: int) -> Val:
        return self._view(V.slice_, v, dim, start, end, step)

    def view_expand(self, v: Val, sizes: Sequence[int]) -> Val:
        return self._view(V.expand, v, sizes)

    def view_reshape(self, v: Val, new_shape: Sequence[int], node: Any) -> Val:
        old = list(v.shape)
        new = self._view(V.reshape_target, old, new_shape)
        # Drop size-1 dims on both sides; they carry no index.
        v1 = V.drop(v, {i: 0 for i, s in enumerate(old) if s == 1}, [s for s in old if s != 1])
        n = [s for s in new if s != 1]
        groups = V.reshape_groups(v1.shape, n)
        if any(len(gi) > 1 for gi, _ in groups):
            # Merging dims is div/mod for a consumer: write the merged shape through the producer
            # (fresh tensor) or materialize a copy first.
            v1 = self.merge_in_place(v, [i for i, s in enumerate(old) if s != 1], groups, node)
            groups = [([k], gj) for k, (_, gj) in enumerate(groups)]
        v2 = V.split(v1, groups, n)
        for k, s in enumerate(new):
            if s == 1:
                v2 = V.insert(v2, k)
        return v2

    def merge_in_place(self, v: Val, nonone: List[int], groups, node: Any) -> Val:
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
        self.write_merged(pt, [[nonone[k] for k in gi] for gi, _ in groups])
        return Val.whole(pt)

    # -- building blocks
    def pointwise(self, payload: str, ins: List[Val], out_shape: Sequence[int], out_dtype: str,
                  name: Optional[str] = None, out: Optional[Val] = None) -> Val:
        """Numpy broadcasting: output dims are the vars; size-1 input dims read constant 0."""
        r = len(out_shape)
        fresh = out is None
        if out is None:
            out = Val.whole(self.new_pt(name or self.node.name, out_shape, out_dtype))
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
            key = (id(v.pt), tuple(map(str, V.expr(v, m))))
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

    def reduce(self, payload: str, x: Val, dims: Sequence[int], keepdim: bool, out_dtype: str,
               name: Optional[str] = None, extra: Sequence[Val] = ()) -> Val:
        r = len(x.shape)
        dims = sorted({d % r for d in dims} if dims else set(range(r)))
        out_shape = [1 if d in dims else s for d, s in enumerate(x.shape)] if keepdim else \
            [s for d, s in enumerate(x.shape) if d not in dims]
        out = Val.whole(self.new_pt(name or self.node.name, out_shape, out_dtype))
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
        last = V.expr(x, xin)[-1][0] if x.pt.shape else {}
        if any(iters[v] == "reduction" for v in last) and out_shape:
            out.pt.dim_order = list(range(len(out_shape))) + [-1]
        ins = [(x, xin)] + [(e, self.bcast_map(e, x.shape, xin)) for e in extra]
        self.emit(kind, payload, ins, [(out, om)], iters, name=name, ranges=ranges)
        return out

    def bcast_map(self, v: Val, shape: Sequence[int], vars_of_dims: Sequence[Optional[int]]) -> List[Optional[int]]:
        k, r = len(v.shape), len(shape)
        return [vars_of_dims[r - k + i] if v.shape[i] > 1 else None for i in range(k)]

    def copy(self, v: Val, payload: str = "copy", name: Optional[str] = None, dtype: Optional[str] = None) -> Val:
        if v.pt.const:  # a copy of a constant is another constant: no op
            pt = self.new_pt(name or self.node.name, v.shape, dtype or v.pt.dtype, graph_input=True)
            pt.const = True
            return Val.whole(pt)
        return self.pointwise(payload, [v], v.shape, dtype or v.pt.dtype, name=name)

    def pad(self, x: Val, pad: List[int], value: Any, name: str, payload: str = "pad") -> Val:
        r = len(x.shape)
        lo = [0] * r
        hi = [0] * r
        for k in range(len(pad) // 2):
            d = r - 1 - k
            lo[d], hi[d] = pad[2 * k], pad[2 * k + 1]
        if any(p < 0 for p in lo + hi):
            raise self.error("negative padding (a crop) is not supported")
        shape = [s + a + b for s, a, b in zip(x.shape, lo, hi)]
        out = Val.whole(self.new_pt(name, shape, x.pt.dtype))
        # Iterate over the input; the output map adds the low padding. A size-1 dim that is
        # padded keeps a var of range 1: the output dim is larger than 1, and a constant may only
        # index a size-1 output dim (the program checker's rule: every written dim is iterated).
        outv = Val(out.pt, x.shape, [{j: 1} for j in range(r)], lo)
        var_of = {}
        for d in range(r):
            if x.shape[d] > 1 or shape[d] > 1:
                var_of[d] = len(var_of)
        exprs = [{var_of[d]: 1} if d in var_of else {} for d in range(r)]
        self.emit_exprs("pointwise", payload, [(x, exprs)], [(outv, exprs)], ["parallel"] * len(var_of),
                        [x.shape[d] for d in sorted(var_of)], name=name)
        return out

    def normalize(self, x: Val, dims: List[int], dt: str, name: str) -> Tuple[Val, Val, Val]:
        """The statistics ops of layer and group norm over `dims`: (mean, x - mean, rsqrt(var + eps))."""
        mean = self.reduce("mean", x, dims, True, dt, name=name + "_mean")
        xc = self.pointwise("sub", [x, mean], x.shape, dt, name=name + "_centered")
        var = self.reduce("mean_square", xc, dims, True, dt, name=name + "_var")
        rstd = self.pointwise("add_eps_rsqrt", [var], var.shape, dt, name=name + "_rstd")
        return mean, xc, rstd

    # -- constants and opaque ops
    def fold_constant(self, node: Any, name: str, why: str = "") -> bool:
        """An op (not in place) whose tensor inputs are all weights and constants: a compiler
        computes it once when it loads the model (swin's relative position bias, a table gathered
        by a constant index and, in swin v2, an MLP over a constant coordinate table), so its
        results are constant graph inputs and no op runs. True when folded."""
        ins = [self.env[a] for a in node.all_input_nodes if isinstance(self.env.get(a), Val)]
        if not ins or not all(v.pt.const or v.pt.weight for v in ins):
            return False
        if name.endswith("_"):
            # In place on a constant with constants (invert_permutation's scatter_ into an empty
            # tensor): still a constant. In place on a weight is not folded.
            tgt = self.val(node.args[0]) if node.args else None
            if not (isinstance(tgt, Val) and all(v.pt.const for v in ins)):
                return False
            self.bind(node, tgt)
            self.set_row("folded", (why + "; " if why else "") + "updates a constant with constants: still a "
                         "constant", compute=False)
            return True
        m = meta(node)
        metas = m if isinstance(m, (list, tuple)) else [m]
        outs: List[Optional[Val]] = []
        for k, mm in enumerate(metas):
            if isinstance(mm, TM) and 0 not in list(mm.shape):
                outs.append(self.fresh(node.name if k == 0 else f"{node.name}_{k}", mm))
                outs[-1].pt.graph_input = outs[-1].pt.const = True
                outs[-1].pt.origin = (node.name, k)
            else:
                outs.append(None)
        if not any(o is not None for o in outs):
            return False
        self.bind(node, outs if isinstance(m, (list, tuple)) else outs[0])
        self.set_row("folded", (why + "; " if why else "") + "on weights and constants only: computed once when "
                     "the model is loaded, a constant graph input", compute=False)
        return True

    def do_opaque(self, node: Any, reason: str, payload: Optional[str] = None, compute: bool = True) -> None:
        """An opaque op reading every tensor operand and writing every output: its true traffic."""
        full = target_name(node.target)
        if self.fold_constant(node, full.split(".")[1] if full.startswith("aten.") else full, reason):
            return
        ins = [self.env[a] for a in node.all_input_nodes if isinstance(self.env.get(a), Val)]
        for a in node.all_input_nodes:
            if isinstance(self.env.get(a), (list, tuple)):
                ins += [x for x in self.env[a] if isinstance(x, Val)]
        ins = [v for v in ins if 0 not in v.shape]  # tensors without elements move no bytes
        tgt = self.val(node.args[0]) if node.args else None
        if full.startswith("aten.") and full.split(".")[1].endswith("_") and isinstance(tgt, Val) \
                and not tgt.is_identity() and 0 not in tgt.shape:
            # In place on a view (pad_sequence's out[i, :n].copy_(x)): the op reads the whole tensor
            # and writes the whole updated tensor, which every later reader of it reads.
            out = Val.whole(self.new_pt(node.name, tgt.pt.shape, tgt.pt.dtype))
            self.opaque(payload or full.split(".")[1], ins, [out])
            self.rebind(tgt.pt, out.pt, skip=node)
            self.bind(node, Val(out.pt, tgt.shape, tgt.terms, tgt.off))
            self.set_row("opaque", reason, compute=compute)
            return
        m = meta(node)
        metas = m if isinstance(m, (list, tuple)) else [m]
        outs = []
        for k, mm in enumerate(metas):
            # An output without elements (embedding_bag's empty offset2bag) moves no bytes: none.
            if isinstance(mm, TM) and 0 not in list(mm.shape):
                outs.append(self.fresh(node.name if k == 0 else f"{node.name}_{k}", mm))
            else:
                outs.append(None)
        real = [o for o in outs if o is not None]
        if not real:
            raise self.error("produces no tensor")
        self.opaque(payload or target_name(node.target).split(".")[1], ins, real)
        self.bind(node, outs if isinstance(m, (list, tuple)) else outs[0])
        self.set_row("opaque", reason, compute=compute)
        # In place on a whole tensor (scatter_ into a zeros mask): later readers of the mutated
        # tensor read the op's output, as for in-place pointwise ops.
        if full.startswith("aten.") and full.split(".")[1].endswith("_") and isinstance(tgt, Val) and tgt.is_identity() and outs[0] is not None:
            self.rebind(tgt.pt, outs[0].pt, skip=node)

    def view_update_is_private(self, node: Any, tgt: Val) -> bool:
        """True when no node after ``node`` reads ``tgt``'s tensor through a view that may overlap
        ``tgt`` other than ``tgt`` itself: then an in-place op on the view can write a new tensor
        (nn.LSTMCell updates its four gate chunks in place: disjoint slices of one tensor)."""
        here = self.pos.get(node, -1)
        for n in self.viewers(tgt.pt):
            v = self.env[n]
            later = any(self.pos.get(u, here + 1) > here for u in getattr(n, "users", ()))
            if not later:
                continue
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if not isinstance(x, Val) or x.pt is not tgt.pt:
                    continue
                if isinstance(v, Val) and V.same_view(x, tgt):
                    continue
                if not V.disjoint_views(x, tgt):
                    return False
        return True


def convert(model: torch.nn.Module, example_inputs: Sequence[Any], dtype: Optional[str] = None,
            name: Optional[str] = None) -> Tuple[dict, Report]:
    from . import _ops  # noqa: F401 - fills the converter table
    from ._trace import trace
    if dtype is not None:
        if str(dtype) not in _DTYPE_ALIASES and dtype not in (torch.float16, torch.bfloat16, torch.float32):
            raise BadInput(f"to_program: dtype {dtype!r}: expected fp16, bf16 or fp32")
        dtype = DTYPES[dtype] if isinstance(dtype, torch.dtype) else _DTYPE_ALIASES[str(dtype)]
    # Tracing allocates many small objects that all live until the end: the cyclic garbage
    # collector's passes over them were 15 % of the CPU time (MViT v2) and free nothing.
    gc_was = gc.isenabled()
    gc.disable()
    try:
        return _convert(model, example_inputs, dtype, name, trace)
    finally:
        if gc_was:
            gc.enable()


def _convert(model, example_inputs, dtype, name, trace) -> Tuple[dict, Report]:
    t0 = time.perf_counter()
    g, names, flat_metas = trace(model, example_inputs)
    nin = len(flat_metas) - len(names)
    t1 = time.perf_counter()
    c = Converter(name or type(model).__name__, dtype)
    placeholders = [n for n in g.graph.nodes if n.op == "placeholder"]
    c.pos = {n: k for k, n in enumerate(g.graph.nodes)}
    c.has_inplace = any(n.op == "call_function" and target_name(n.target).startswith("aten.")
                        and target_name(n.target).split(".")[1].endswith("_") for n in g.graph.nodes)
    for k, n in enumerate(placeholders):
        m = flat_metas[k] if k < len(flat_metas) else meta(n)
        label = names[k] if k < len(names) else (f"input{k - len(names)}" if nin > 1 else "input")
        if isinstance(m, (torch.Tensor, TM)):
            # A complex input is its (real, imag) pairs; one without elements is no tensor of the
            # program (nothing reads its bytes), like every zero-size tensor.
            extra = [2] if m.dtype.is_complex else []
            pt = c.new_pt(label, list(m.shape) + extra, c.dtype_of(m.dtype), graph_input=True)
            pt.weight = k < len(names)
            c.bind(n, Val.whole(pt))
        else:
            c.env[n] = m
    dead = _dead_nodes(g)
    for n in g.graph.nodes:
        c.node = n
        if n.op == "placeholder":
            pass
        elif n.op == "get_attr":
            t = getattr(g, n.target)
            if isinstance(t, torch.Tensor):
                # A tensor the trace captured by value (a CPU tensor made in forward, the sorted
                # indices of known lengths): a constant.
                pt = c.new_pt(str(n.target), list(t.shape) + ([2] if t.is_complex() else []), c.dtype_of(t.dtype),
                              graph_input=True)
                pt.const = True
                c.bind(n, Val.whole(pt))
            else:
                c.env[n] = t
        elif n.op == "call_function" and n in dead:
            if n.target is not operator.getitem:
                c.rows.append(Row(n.name, target_name(n.target), n.meta.get("sp_module", ""), "folded",
                                  "result unused (only read in Python, where the trace was specialized to it): no op",
                                  compute=False))
        elif n.op == "call_function":
            try:
                c.run_node(n)
            except BadInput:
                raise
            except Exception as e:  # noqa: BLE001 - a clear line, never a traceback
                raise c.error(f"cannot convert ({type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''})") from None
        elif n.op == "output":
            _outputs(c, n)
        else:
            raise c.error(f"unexpected FX node kind {n.op}")
        c.processed.add(n)
    c.node = None
    program = c.program()
    t2 = time.perf_counter()
    report = Report(c.rows, t1 - t0, t2 - t1, getattr(g, "sp_specializations", []))
    used = {t["name"] for t in program["tensors"]}
    report.constants = {pt.name: pt.origin for pt in c.pts if pt.const and pt.origin and pt.name in used}
    return program, report


def _dead_nodes(g: Any) -> set:
    """Nodes whose results nothing reads and that write nothing in place: a value Python read
    (``int(lengths.max())``, the trace is specialized to it) leaves its op behind without users."""
    dead: set = set()
    for n in reversed(list(g.graph.nodes)):
        if n.op != "call_function" or not all(u in dead for u in n.users):
            continue
        name = target_name(n.target)
        op = name.split(".")[1] if name.startswith("aten.") else name
        if n.target is operator.getitem or (name.startswith("aten.") and not op.endswith("_") and "out" not in n.kwargs):
            dead.add(n)
    return dead


def _outputs(c: Converter, n: Any) -> None:
    """Graph outputs: views and graph inputs get a copy op (an output is a tensor an op writes)."""
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
        if not isinstance(v, Val) or 0 in v.shape:  # an output without elements: nothing to write
            continue
        if not v.is_identity() or v.pt.graph_input:
            v = c.copy(v, "copy", name=f"output{k}")
        v.pt.graph_output = True
    if c.row.ops:
        c.row.reason = "graph outputs that are views or inputs: copy ops"
        c.rows.append(c.row)
