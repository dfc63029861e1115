"""Device tensor layouts and DMA descriptors (the ``layout`` verb; docs/layout.md)."""
from __future__ import annotations

import json
from typing import List, Optional, Sequence

from . import _core
from ._common import BadInput, exact_int

__all__ = ["Layout", "layout", "DTYPES"]

DTYPES = ("fp16", "bf16", "fp32", "fp8", "int4", "int2", "int8", "int32", "int64", "bool")


class Layout:
    """A device layout. ``to_dict()`` equals ``scratchplan layout --json`` (DMA descriptors when
    ``dma=True``)."""

    __slots__ = ("_r",)

    def __init__(self, r) -> None:
        self._r = r

    @property
    def host_size(self) -> List[int]:
        return list(self._r.host_size)

    @property
    def host_strides(self) -> List[int]:
        return list(self._r.host_strides)

    @property
    def device_size(self) -> List[int]:
        """Device dimensions, outermost first (the last is the stick)."""
        return list(self._r.device_size)

    @property
    def stride_map(self) -> List[int]:
        """Host element stride of each device dimension (-1 synthetic, 0 broadcast)."""
        return list(self._r.stride_map)

    @property
    def device_bytes(self) -> int:
        return self._r.device_bytes

    def to_json(self) -> str:
        return self._r.to_json()

    def to_dict(self) -> dict:
        return json.loads(self._r.to_json())

    def report(self) -> str:
        """The text ``scratchplan layout`` prints."""
        return self._r.report()

    def __repr__(self) -> str:
        return f"<scratchplan.layout.Layout device_size={self.device_size} stride_map={self.stride_map}>"


def _list(x, what: str) -> Optional[List[int]]:
    if x is None:
        return None
    if isinstance(x, (str, bytes)):
        raise BadInput(f"{what}: expected a list of integers")
    try:
        values = list(x)
    except TypeError:
        raise BadInput(f"{what}: expected a list of integers") from None
    return [exact_int(v, f"{what}[{i}]") for i, v in enumerate(values)]


def layout(size: Sequence[int], dtype: str = "fp16", dim_order: Optional[Sequence[int]] = None,
           strides: Optional[Sequence[int]] = None, dma: bool = False) -> Layout:
    """The device layout of a host tensor (``scratchplan layout --size ... --dtype ...``).

    dim_order: host dims outermost..innermost (last = stick dim; trailing -1 = sparse).
    strides: host strides (default contiguous). dma: also compute the DMA descriptors.
    """
    if size is None or isinstance(size, (str, bytes)):
        raise BadInput("size: expected a list of integers")
    s = _list(size, "size")
    for v in s:
        if abs(v) >= 1 << 62:
            raise BadInput(f"size: {v} is out of range")
    return Layout(_core.layout_layout(s, str(dtype), _list(dim_order, "dim_order"), _list(strides, "strides"), bool(dma)))
