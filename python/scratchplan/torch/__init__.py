"""PyTorch front end: a ``torch.nn.Module`` -> a scratchplan program, its LX plan and its
activation-memory plan (docs/torch.md).

``to_program`` traces the model at the ATen level with ``make_fx`` on meta tensors (no arithmetic,
no weight memory), maps every ATen op onto the program format (mapped / folded / opaque, one
report row each) and returns the program dict. ``plan`` hands it to the LX planner
(``scratchplan.lx.plan``); ``memory_plan`` solves the static activation-allocation problem of the
program with the allocation engine (``scratchplan.alloc``).
"""
from __future__ import annotations

import time
from typing import Any, List, Optional, Tuple

from .. import alloc as _alloc
from .. import lx as _lx
from .._common import BadInput
from ._convert import Report, Row, UnsupportedModel, convert

__all__ = ["to_program", "plan", "memory_plan", "MemoryPlan", "TorchPlan", "Report", "Row", "UnsupportedModel", "lifetimes"]

_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "int64": 64, "int32": 32, "int8": 8, "bool": 8, "fp8": 8, "int4": 4,
         "int2": 2}


def to_program(model: Any, example_inputs: Any, *, dtype: Optional[str] = None,
               name: Optional[str] = None, submodule: Optional[str] = None) -> Tuple[dict, Report]:
    """Traces ``model(*example_inputs)`` and returns ``(program dict, report)``.

    dtype: "fp16" / "bf16" / "fp32" for every floating tensor of the program (None: as traced).
    submodule: a path such as "backbone": the model runs on meta tensors until it calls that
    submodule, and only the submodule is converted, with the inputs it received (the static part
    of a detection model). report.counts = {"mapped", "folded", "opaque"}; report.rows has one row
    per ATen op. Raises UnsupportedModel (a BadInput): one line with the module path, the model's
    file:line and the reason, when the model cannot be traced.
    """
    if submodule:
        from ._trace import submodule_inputs
        sub, args = submodule_inputs(model, example_inputs, submodule)
        return convert(sub, args, dtype=dtype, name=name or f"{type(model).__name__}.{submodule}")
    return convert(model, example_inputs, dtype=dtype, name=name)


def plan(model: Any, example_inputs: Any, cores: int = 32, hardware: Any = "spyre", *, dtype: Optional[str] = None,
         name: Optional[str] = None, submodule: Optional[str] = None, **options: Any) -> "_lx.Plan":
    """The LX plan of the model (``scratchplan plan`` on its program; options as ``lx.plan``).
    The plan passed the checker. ``plan.program`` and ``plan.torch_report`` hold the inputs."""
    program, report = to_program(model, example_inputs, dtype=dtype, name=name, submodule=submodule)
    t = time.perf_counter()
    p = _lx.plan(program, cores=cores, hardware=hardware, **options)
    return TorchPlan(p, program, report, time.perf_counter() - t)


class TorchPlan(_lx.Plan):
    """An ``lx.Plan`` that also keeps the program and the mapping report it came from."""

    __slots__ = ("program", "torch_report", "plan_seconds")

    def __init__(self, p: "_lx.Plan", program: dict, report: Report, seconds: float) -> None:
        super().__init__(p._r)
        self.program = program            # the program dict that was planned
        self.torch_report = report        # the op-by-op mapping report
        self.plan_seconds = seconds       # LX planning wall time


def lifetimes(program: dict) -> List[Tuple[str, int, int, int]]:
    """Every intermediate of a program as (tensor, bytes, first op, last op + 1) in op order.
    Graph inputs are the caller's memory and are not planned; graph outputs live to the end."""
    n = len(program["ops"])
    info = {t["name"]: t for t in program["tensors"]}
    start, end = {}, {}
    for k, op in enumerate(program["ops"]):
        for t in op["outputs"]:
            start.setdefault(t, k)
            end[t] = max(end.get(t, k + 1), k + 1)
        for t in op["inputs"]:
            if t in start:
                end[t] = max(end[t], k + 1)
    out = []
    for t, s in start.items():
        ti = info[t]
        elems = 1
        for d in ti["shape"]:
            elems *= d
        size = (elems * _BITS[ti["dtype"]] + 7) // 8
        out.append((t, size, s, n if ti.get("graph_output") else end[t]))
    return out


class MemoryPlan:
    """Static activation-memory plan of a traced model."""

    def __init__(self, buffers, result, greedy, lower_bound_seconds: float) -> None:
        self.buffers = buffers             # (tensor, bytes, start, end) per intermediate
        self._r = result
        self.arena_bytes = int(result.height)            # arena the allocation engine found
        self.lower_bound = int(result.lower_bound)       # proven lower bound (max load and better)
        self.proven = bool(result.proven)                # arena == lower bound
        self.no_reuse_bytes = sum(b[1] for b in buffers)  # every intermediate its own bytes
        self.greedy_by_size_bytes = int(greedy.height)   # TFLite's arena planner rule
        self.max_load = _max_load(buffers)               # the max-load lower bound
        self.seconds = lower_bound_seconds               # solve time

    @property
    def gap(self) -> float:
        """(arena - lower bound) / lower bound."""
        return 0.0 if self.lower_bound == 0 else (self.arena_bytes - self.lower_bound) / self.lower_bound

    @property
    def offsets(self):
        return self._r.offsets

    def to_csv(self, path: Optional[str] = None) -> str:
        """The instance as MiniMalloc CSV (id,lower,upper,size); written to ``path`` when given."""
        rows = ["id,lower,upper,size"] + [f"{i},{s},{e},{b}" for i, (_, b, s, e) in enumerate(self.buffers)]
        text = "\n".join(rows) + "\n"
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def __repr__(self) -> str:
        return (f"<scratchplan.torch.MemoryPlan {len(self.buffers)} buffers: arena {self.arena_bytes} B, "
                f"lower bound {self.lower_bound} B{' (proven)' if self.proven else ''}, no reuse {self.no_reuse_bytes} B, "
                f"greedy-by-size {self.greedy_by_size_bytes} B>")


def _max_load(buffers) -> int:
    ev = []
    for _, b, s, e in buffers:
        ev.append((s, b))
        ev.append((e, -b))
    ev.sort(key=lambda x: (x[0], x[1]))
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def memory_plan(model: Any, example_inputs: Any = None, *, dtype: Optional[str] = None, time_limit: float = 2.0,
                solver: str = "auto") -> MemoryPlan:
    """Plans the activation arena of the model's program (``model`` may also be a program dict):
    every intermediate's bytes and [producer, last use) lifetime in op order, solved by the
    allocation engine; compared with no reuse and greedy-by-size."""
    program = model if isinstance(model, dict) else to_program(model, example_inputs, dtype=dtype)[0]
    bufs = lifetimes(program)
    if not bufs:
        raise BadInput("memory_plan: the program has no intermediate tensors")
    sizes = [b[1] for b in bufs]
    starts = [b[2] for b in bufs]
    ends = [b[3] for b in bufs]
    t = time.perf_counter()
    r = _alloc.pack(sizes, starts, ends, time_limit=time_limit, solver=solver)
    secs = time.perf_counter() - t
    g = _alloc.pack(sizes, starts, ends, time_limit=time_limit, solver="greedy-by-size")
    return MemoryPlan(bufs, r, g, secs)
