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
        cyc = COSTS["barrier" if kind == "barrier" else "dma"][1](n, partitions, nbytes, cm, None)
        ins["cost"] = max(1, int(round(cyc)))
        return
    stat = (ins.pop("_stat_n", 128), ins.pop("_fp32", False)) if kind == "matmul" else None
    cyc = COSTS.get(kind, COSTS["alu"])[1](n, partitions, isz, cm, stat)
    clock = cm.get(_ENGINE_CLOCK.get(eng, "scalar_clock_ghz"), 1.4)
    ins["cost"] = max(1, int(round(cyc * cm["reference_clock_ghz"] / max(clock, 1e-9))))
    for k in [k for k in ins if k.startswith("_")]:
        del ins[k]
