"""The table of op converters: one function per ATen op family, registered by target.

``@register("addmm", "mm")`` files a converter under ATen op names (the overload packet, as in
``aten.addmm``) or full overloads (``"aten.max.other"``, also ``torch.ops.aten.max.other``); a
full overload wins over its packet. Adding an op is one decorated function in ``_ops.py``.

Kinds: ``"compute"`` converters return True when they mapped the node (False: it becomes an
opaque op with the default reason); ``"view"`` converters return the node's value (a view, or a
list of views) and the row is folded; ``"create"`` converters bind a constant.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

Converter = Callable[..., Any]
_TABLE: Dict[str, Tuple[Converter, str]] = {}
_REASONS: Dict[str, str] = {}
_MOVES: set = set()  # opaque ops that only move data (gathers by index): not compute


def _key(t: Any) -> str:
    if isinstance(t, str):
        return t
    s = str(t)  # OpOverload: "aten.max.other"; OpOverloadPacket: "aten.max"
    if s.startswith("aten.") and s.count(".") == 1:
        return s.split(".")[1]
    return s


def register(*targets: Any, kind: str = "compute") -> Callable[[Converter], Converter]:
    """Files the decorated converter under every target."""
    if kind not in ("compute", "view", "create"):
        raise ValueError(f"register: unknown kind {kind!r}")

    def deco(fn: Converter) -> Converter:
        for t in targets:
            _TABLE[_key(t)] = (fn, kind)
        return fn
    return deco


def opaque_reason(reason: str, *targets: Any, moves_data: bool = False) -> None:
    """Ops that stay opaque, with why no indexing map describes them (the report's reason).
    ``moves_data``: the op copies elements chosen by an index and does no arithmetic (a gather),
    so like ``cat`` it is not a compute op; it stays an opaque op with its true traffic."""
    for t in targets:
        _REASONS[_key(t)] = reason
        if moves_data:
            _MOVES.add(_key(t))


def lookup(full: str, name: str) -> Optional[Tuple[Converter, str]]:
    """The converter of a node: by full overload name first, then by op name."""
    return _TABLE.get(full) or _TABLE.get(name)


def reason(name: str) -> Optional[str]:
    return _REASONS.get(name)


def moves_data(name: str) -> bool:
    return name in _MOVES
