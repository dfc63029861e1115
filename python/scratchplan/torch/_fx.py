"""FX node helpers every converter shares: arguments, shapes and dtypes (tensor_meta), users of
tuple outputs. A leaf of the package (the driver _convert and the converters of _ops both use it)."""
from __future__ import annotations

import operator
from typing import Any, Sequence


def arg(node: Any, i: int, name: str, default: Any = None) -> Any:
    """Argument ``i`` (or keyword ``name``) of an FX node."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


class TM:
    """Shape and dtype of a traced tensor (make_fx on meta tensors records tensor_meta)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = [int(s) for s in shape]
        self.dtype = dtype


def meta(node: Any) -> Any:
    """TM for a tensor-valued node, a list (None for unknown items) for a tuple-valued one."""
    if not hasattr(node, "meta"):
        return None
    if "sp_meta" in node.meta:
        return node.meta["sp_meta"]
    tm = node.meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape") and hasattr(tm, "dtype"):
        out: Any = TM(tm.shape, tm.dtype)
    elif isinstance(tm, (list, tuple)) and tm:
        out = [TM(t.shape, t.dtype) if hasattr(t, "shape") else None for t in tm]
    else:
        items = {}
        for u in node.users:
            if u.target is operator.getitem and isinstance(u.args[1], int):
                items[u.args[1]] = meta(u)
        out = [items.get(k) for k in range(max(items) + 1)] if items else None
    node.meta["sp_meta"] = out
    return out


def uses_output(node: Any, k: int) -> bool:
    """Does anything read output ``k`` of a tuple-valued node?"""
    return any(u.target is operator.getitem and u.args[1] == k and len(u.users) > 0 for u in node.users)
