"""Instruction costs: cycles of the reference clock from what an instruction writes (reads, for
DMA) and the formula of its cost kind in the API table (api_table.COSTS)."""
from __future__ import annotations

from . import context as _ctx
from .api_table import COSTS

_ENGINE_CLOCK = {"Tensor": "tensor_clock_ghz", "Vector": "vector_clock_ghz", "Scalar": "scalar_clock_ghz",
                 "GpSimd": "gpsimd_clock_ghz"}


def _finish_cost(ins, partitions, nbytes):
    """Cycles of the reference clock for the instruction, from the size of what it writes (or
    reads, for DMA) and the formula of its cost kind (api_table.COSTS)."""
    kind = ins.pop("_cost", None)
    if kind is None:
        return
    cm = _ctx.ST.cm
    eng = ins["engine"]
    isz = ins.pop("_isz", 2)
    n = max(1, nbytes // max(isz, 1))  # elements per partition
    if eng == "DMA":
        cyc = COSTS[kind if kind in ("barrier", "dma_dst") else "dma"][1](n, partitions, nbytes, cm, None)
        ins["cost"] = max(1, int(round(cyc)))
        return
    if kind == "matmul":
        cyc = _MATMUL(n, partitions, isz, cm, (ins.pop("_stat_n", 128), ins.pop("_fp32", False)))
    else:
        cyc = _FORMULAS.get(kind, _ALU)(n, partitions, isz, cm, None)
    clock = cm.get(_ENGINE_CLOCK.get(eng, "scalar_clock_ghz"), 1.4)
    ins["cost"] = max(1, int(round(cyc * cm["reference_clock_ghz"] / max(clock, 1e-9))))
    if len(ins) > 6:  # the instruction's private scratch keys (the record has 6 keys, 7 with guards)
        for k in _PRIVATE:
            ins.pop(k, None)


_FORMULAS = {k: f for k, (_, f) in COSTS.items()}
_ALU, _MATMUL = _FORMULAS["alu"], _FORMULAS["matmul"]
_PRIVATE = ("_stat_n", "_fp32", "_mcons")  # every key an instruction record carries while it is built
