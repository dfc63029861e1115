"""The program writer of the PyTorch front end: unique names, program tensors, op dicts with
their indexing maps and ranges, and the final program dict (docs/program.md).

Op converters (``_ops.py``) call ``emit`` / ``emit_exprs`` / ``opaque``; every op is appended to
the current report row so the report accounts for each program op.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .._common import BadInput
from ._report import Row, UnsupportedModel, refusal
from . import _views as V
from ._views import PT, Val

DTYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp32",
          torch.int64: "int64", torch.int32: "int32", torch.int8: "int8", torch.uint8: "int8", torch.bool: "bool",
          torch.int16: "int32"}


def _sanitize(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", s)


def target_name(t: Any) -> str:
    s = str(t)
    return s if s.startswith("aten.") else getattr(t, "__name__", s)


class ProgramWriter:
    def __init__(self, name: str, dtype: Optional[str]) -> None:
        self.name = name
        self.float_dtype = dtype
        self.pts: List[PT] = []
        self.names: Dict[str, int] = {}
        self.used: set = set()  # tensor and op names (one namespace keeps both unique)
        self.ops: List[dict] = []
        self.row: Optional[Row] = None  # the report row the next ops belong to
        self.node = None  # the FX node being converted (names ops, places errors)

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
        if tdtype.is_complex:  # stored as (real, imag) pairs: a trailing dim of 2 (see fresh)
            tdtype = {torch.complex32: torch.float16}.get(tdtype, torch.float32)
        d = DTYPES.get(tdtype)
        if d is None:
            raise self.error(f"unsupported dtype {str(tdtype).replace('torch.', '')} (programs have fp32, fp16, bf16, "
                             "int64, int32, int8 and bool)")
        if tdtype.is_floating_point and self.float_dtype:
            return self.float_dtype
        return d

    def new_pt(self, base: str, shape: Sequence[int], dtype: str, graph_input: bool = False) -> PT:
        pt = PT(self.uniq(base), shape, dtype, graph_input)
        if graph_input and self.node is not None:
            pt.origin = (self.node.name, 0)  # a constant made by this node holds its value
        self.pts.append(pt)
        return pt

    def fresh(self, base: str, meta: Any) -> Val:
        # A complex tensor is its (real, imag) pairs, as torch.view_as_real shows it: a trailing 2.
        extra = [2] if meta.dtype.is_complex else []
        return Val.whole(self.new_pt(base, list(meta.shape) + extra, self.dtype_of(meta.dtype)))

    # -- errors
    def error(self, what: str) -> UnsupportedModel:
        """A refusal naming the node's module, its source line and op (``_report.refusal``)."""
        n = self.node
        if n is None:
            return UnsupportedModel(refusal(self.name, "", what))
        return UnsupportedModel(refusal(n.meta.get("sp_module", "") or self.name, n.meta.get("sp_where", ""),
                                        f"{target_name(n.target)}: {what}"))

    # -- ops
    def _add(self, op: dict, ins: Sequence[Val], outs: Sequence[Val]) -> dict:
        for v in ins:
            v.pt.reads += 1
        for v in outs:
            v.pt.producer = op
        self.ops.append(op)
        if self.row is not None:
            self.row.ops.append(op["name"])
        return op

    def emit(self, kind: str, payload: str, inputs: List[Tuple[Val, List[Optional[int]]]],
             outputs: List[Tuple[Val, List[Optional[int]]]], iters: List[str], name: Optional[str] = None,
             ranges: Optional[List[int]] = None) -> dict:
        """An op whose operand maps are view dim -> iteration var (None: index 0)."""
        op = {"name": self.uniq(name or (self.node.name if self.node is not None else payload)), "kind": kind,
              "payload": payload, "inputs": [v.pt.name for v, _ in inputs], "outputs": [v.pt.name for v, _ in outputs]}
        if kind != "opaque" or iters:
            n = len(iters)
            op["iterator_types"] = iters
            op["indexing_maps"] = [V.fmt(n, V.expr(v, m)) for v, m in inputs + outputs]
            # Ranges are always written: a slice [0, n) of a dim reads it with a lone var whose
            # range is below the dim size, which only an explicit range can say.
            if ranges is None:
                raise self.error("internal: an op without iteration ranges")
            op["ranges"] = [int(r) for r in ranges]
        return self._add(op, [v for v, _ in inputs], [v for v, _ in outputs])

    def emit_exprs(self, kind, payload, ins, outs, iters, ranges, name):
        """An op whose operand maps are given as expressions over the operand's view dims."""
        n = len(iters)
        op = {"name": self.uniq(name), "kind": kind, "payload": payload,
              "inputs": [v.pt.name for v, _ in ins], "outputs": [v.pt.name for v, _ in outs],
              "iterator_types": iters, "indexing_maps": [V.fmt(n, V.compose(v, exprs)) for v, exprs in ins + outs]}
        op["ranges"] = [int(r) for r in ranges]
        return self._add(op, [v for v, _ in ins], [v for v, _ in outs])

    def opaque(self, payload: str, ins: List[Val], outs: List[Val], name: Optional[str] = None) -> dict:
        op = {"name": self.uniq(name or self.node.name), "kind": "opaque", "payload": payload,
              "inputs": list(dict.fromkeys(v.pt.name for v in ins)), "outputs": [v.pt.name for v in outs]}
        return self._add(op, ins, outs)

    def op_ranges(self, op: dict) -> List[int]:
        """Iteration extents of an op, from its plain results (before a merge rewrites one)."""
        shapes = {pt.name: pt.shape for pt in self.pts}
        ranges = [0] * len(op["iterator_types"])
        for name, text in zip(op["inputs"] + op["outputs"], op["indexing_maps"]):
            for d, (e, off) in enumerate(V.parse_results(text.split(" -> ")[1])):
                if len(e) == 1 and off == 0 and list(e.values())[0] == 1:
                    ranges[next(iter(e))] = shapes[name][d]
        if 0 in ranges:
            raise self.error("internal: cannot derive the iteration ranges of op " + op["name"])
        return ranges

    def write_merged(self, pt: PT, dims: List[List[int]]) -> None:
        """Rewrites the producer of ``pt`` to write it with each group of ``dims`` merged."""
        op = pt.producer
        if op is not None and op["kind"] != "opaque":
            if "ranges" not in op:
                op["ranges"] = self.op_ranges(op)
            slot = len(op["inputs"]) + op["outputs"].index(pt.name)
            dom, res = op["indexing_maps"][slot].split(" -> ")
            op["indexing_maps"][slot] = V.fmt(dom.count("d"), V.merged_results(V.parse_results(res), dims, pt.shape))
        # An opaque producer (gather, concat) has no maps: the bytes are the same.
        pt.shape = [_prod(pt.shape[d] for d in ds) for ds in dims]

    # -- the program
    def program(self) -> dict:
        """The program dict: the tensors some op uses, in creation order, and the ops."""
        used = set()
        for op in self.ops:
            used.update(op["inputs"])
            used.update(op["outputs"])
        tensors = []
        for pt in self.pts:
            if pt.name not in used:
                continue
            if 0 in list(pt.shape):  # the program format (and any plan) needs positive sizes
                op = next(o["name"] for o in self.ops if pt.name in o["inputs"] + o["outputs"])
                raise UnsupportedModel(f"to_program: tensor '{pt.name}' of shape {list(pt.shape)} (used by op '{op}') "
                                       "has no elements; the program format needs positive sizes")
            t = {"name": pt.name, "shape": pt.shape, "dtype": pt.dtype}
            if pt.dim_order is not None and (pt.reads == 1 or not pt.graph_input) and len(pt.shape) == len(
                    [d for d in pt.dim_order if d >= 0]):
                t["dim_order"] = pt.dim_order
            if pt.graph_input:
                t["graph_input"] = True
                if pt.const or pt.weight:  # known when the model is loaded: the planner may lay it out
                    t["load_time"] = True
            if pt.graph_output:
                t["graph_output"] = True
            tensors.append(t)
        if not self.ops:
            raise BadInput(f"to_program: the model '{self.name}' performs no tensor op")
        return {"format": "scratchplan-program", "version": 1, "name": self.name, "tensors": tensors, "ops": self.ops}


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p
