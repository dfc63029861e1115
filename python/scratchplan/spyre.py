"""torch-spyre drop-ins: our solvers behind torch-spyre's LX planner data model.

``solve(buffers, capacity)`` takes objects with the fields of torch-spyre's
``LifetimeBoundBuffer`` (duck-typed: ``name, size, uses, first_use_is_read, in_place_parents,
residency_reason, lifetime_end_override``) and sets ``address`` on each, ``None`` = spilled to
HBM, as torch-spyre's layout solvers do. Semantics follow torch-spyre (docs/python.md):
half-open lifetimes ``[uses[0], max(uses[-1] + 1, lifetime_end_override))``; a buffer with a
``residency_reason`` is never placed; an in-place child may take its parent's exact address at
the hand-off tick; the objective is the placement solvers' spill cost
``(reads_served + [not first_use_is_read]) x size``, minimized by the alloc engine's selection
solvers (exact where it can prove optimality within the time limit, never worse than its greedy).

``solve_core_divisions(buffers, capacity)`` does the same for ``CoreDivisionBuffer``s
(``core_divisions``, ``parents``, ``cd_parent_matches`` in addition): it chooses a division per
buffer (sets ``chosen_division``) and an address, minimizing HBM bytes.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence

from . import _core
from ._common import BadInput, doc, flag

__all__ = ["solve", "solve_core_divisions", "SpyreResult", "CoreDivisionResult"]


def _get(b: Any, field: str, default: Any = None) -> Any:
    if isinstance(b, dict):
        return b.get(field, default)
    return getattr(b, field, default)


def _set(b: Any, field: str, value: Any) -> None:
    if isinstance(b, dict):
        b[field] = value
    else:
        setattr(b, field, value)


def _name(x: Any) -> str:
    return x if isinstance(x, str) else str(_get(x, "name"))


def _buffer(b: Any, i: int) -> Dict[str, Any]:
    """One LifetimeBoundBuffer as a buffer of the alloc JSON format (docs/alloc.md)."""
    name = _get(b, "name")
    if name is None:
        raise BadInput(f"buffers[{i}]: expected a 'name'")
    size = _get(b, "size")
    uses = _get(b, "uses")
    try:
        uses = [int(u) for u in (uses or [])]
        size = -1 if size is None else int(size)
    except (TypeError, ValueError, OverflowError) as e:
        raise BadInput(f"buffers[{i}] ({name}): expected integer size and uses: {e}") from None
    reason = _get(b, "residency_reason")
    d: Dict[str, Any] = {"name": str(name), "size": max(size, 0)}
    if size < 0 and not reason:
        reason = "unsized"  # torch-spyre: size -1 is never resident
    if uses:
        d["uses"] = uses
        d["first_use_is_read"] = bool(_get(b, "first_use_is_read", False))
        end = _get(b, "lifetime_end_override")
        if end is not None:
            d["lifetime_end_override"] = int(end)
    else:
        # Graph inputs are seeded with empty use lists; nothing reads them from LX.
        d["start"], d["end"] = 0, 1
        reason = reason or "no consumer reads it from LX"
    if reason:
        d["residency_reason"] = str(reason)
    parents = _get(b, "in_place_parents") or []
    if parents:
        d["in_place_parents"] = [_name(p) for p in parents]
    return d


class SpyreResult:
    """What ``solve`` found (addresses are already set on the buffers)."""

    __slots__ = ("_r",)

    def __init__(self, r: Any) -> None:
        self._r = r

    @property
    def spill_cost(self) -> int:
        """Sum of the spilled buffers' spill costs (torch-spyre's level-1 objective, in bytes)."""
        return self._r.spill_cost

    @property
    def lower_bound(self) -> int:
        """Proven lower bound on the spill cost."""
        return self._r.lower_bound

    @property
    def proven(self) -> bool:
        return self._r.proven

    @property
    def solver(self) -> str:
        return self._r.solver

    def to_json(self) -> str:
        return self._r.to_json()

    def svg(self) -> str:
        return self._r.svg()

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return (f"<scratchplan.spyre.SpyreResult spill cost {self.spill_cost} (lower bound {self.lower_bound}"
                f"{', proven' if self.proven else ''}), solver {self.solver}>")


def solve(buffers: Iterable[Any], capacity: int, alignment: int = 128, time_limit: float = 1.0,
          solver: str = "auto", set_reasons: bool = True) -> SpyreResult:
    """Plans LX addresses for torch-spyre LifetimeBoundBuffers and sets ``address`` on each
    (``None`` = spilled). ``capacity``: usable LX bytes per core (torch-spyre's
    ``_lx_planning_size``); ``alignment``: 128 (one stick). With ``set_reasons`` a spilled buffer
    whose ``residency_reason`` is None gets the solver's reason ("did not fit ..."), as
    torch-spyre's SA solver does (a reason present iff address is None). Bad input (non-increasing
    uses, broken in-place edges) raises BadInput."""
    capacity = flag("--capacity", "bytes", capacity)
    alignment = flag("alignment", "count", alignment, 1, 2 ** 62)
    time_limit = flag("--time-limit", "seconds", time_limit)
    bufs = list(buffers)
    try:
        items = [_buffer(b, i) for i, b in enumerate(bufs)]
    except (TypeError, ValueError, OverflowError, AttributeError) as e:
        if isinstance(e, BadInput):
            raise
        raise BadInput(f"buffers: expected LifetimeBoundBuffer fields: {e}") from None
    problem = {"capacity": capacity, "buffers": items}
    r = _core.alloc_doc(doc(problem, "buffers"), capacity, False, "select", str(solver), time_limit, 0, 1, 0, [],
                        alignment)
    offsets = r.offsets
    reasons = r.spill_reasons
    for i, b in enumerate(bufs):
        off = int(offsets[i])
        _set(b, "address", None if off < 0 else off)
        if off < 0 and set_reasons and not _get(b, "residency_reason"):
            _set(b, "residency_reason", reasons[i] or "did not fit in LX")
    return SpyreResult(r)


def _splits(cd: Any, keys: Dict[str, int]) -> Dict[str, Dict[str, int]]:
    """A CoreDivision as {output_splits, reduction_splits} keyed by integer ids (strides stay
    themselves; symbols get fresh ids: only their identity matters)."""

    def key(k: Any) -> str:
        s = str(k)
        if s.lstrip("-").isdigit():
            return s
        if s not in keys:
            keys[s] = -(len(keys) + 1)  # negative: never collides with a stride
        return str(keys[s])

    out = _get(cd, "output_splits")
    red = _get(cd, "reduction_splits")
    if out is not None or red is not None:
        return {"output_splits": {key(k): int(v) for k, v in (out or {}).items()},
                "reduction_splits": {key(k): int(v) for k, v in (red or {}).items()}}
    splits = _get(cd, "splits") or {}
    red_syms = {str(s) for s in (_get(cd, "reduction_syms") or ())}
    return {"output_splits": {key(k): int(v) for k, v in splits.items()},
            "reduction_splits": {key(k): int(v) for k, v in splits.items() if str(k) in red_syms}}


def _cd_buffer(b: Any, i: int, keys: Dict[str, int]) -> Dict[str, Any]:
    """One CoreDivisionBuffer in the capture format lx_cd_solve reads."""
    d = _buffer(b, i)
    if "uses" not in d:
        d["uses"] = []
        d.pop("start", None), d.pop("end", None)
    size = _get(b, "size")
    d["size"] = -1 if size is None else int(size)
    d["parents"] = [_name(p) for p in (_get(b, "parents") or [])]
    menu = _get(b, "core_divisions") or []
    d["core_divisions"] = [_splits(cd, keys) for cd in menu]
    matches = _get(b, "cd_parent_matches") or {}
    d["cd_parent_matches"] = {_name(p): [[int(x), int(y)] for x, y in pairs] for p, pairs in matches.items()}
    return d


class CoreDivisionResult:
    """What ``solve_core_divisions`` found (divisions and addresses are set on the buffers)."""

    __slots__ = ("_s",)

    def __init__(self, s: Any) -> None:
        self._s = s

    @property
    def hbm_bytes(self) -> int:
        """HBM bytes of the plan: sum over non-resident sized buffers of size x len(uses)."""
        return self._s.hbm_bytes

    @property
    def seed_hbm_bytes(self) -> int:
        """The best plan with every buffer at division 0 (the committed seed)."""
        return self._s.seed_hbm_bytes

    @property
    def lower_bound(self) -> int:
        return self._s.lower_bound

    @property
    def proven(self) -> bool:
        return self._s.proven_optimal

    @property
    def divisions(self) -> List[int]:
        """Chosen menu index per buffer."""
        return list(self._s.division)

    @property
    def addresses(self) -> List[Optional[int]]:
        return [None if a < 0 else a for a in self._s.address]

    def __repr__(self) -> str:
        return (f"<scratchplan.spyre.CoreDivisionResult HBM {self.hbm_bytes} B (seed {self.seed_hbm_bytes} B, "
                f"lower bound {self.lower_bound} B)>")


def solve_core_divisions(buffers: Iterable[Any], capacity: int, alignment: int = 128,
                         time_limit: float = 1.0) -> CoreDivisionResult:
    """Co-optimizes core divisions and LX placement of torch-spyre CoreDivisionBuffers: sets
    ``chosen_division`` (an element of ``core_divisions``; index 0 is the seed) and ``address``
    (per-core LX offset, ``None`` = HBM) on each buffer. A buffer is resident only when every
    child edge slices it compatibly (``cd_parent_matches``); footprints are
    ``ceil(size / output_partition)``. Never worse than the seed divisions."""
    capacity = flag("--capacity", "bytes", capacity)
    alignment = flag("alignment", "count", alignment, 1, 2 ** 62)
    time_limit = flag("--time-limit", "seconds", time_limit)
    bufs = list(buffers)
    keys: Dict[str, int] = {}
    items = []
    for i, b in enumerate(bufs):
        try:
            items.append(_cd_buffer(b, i, keys))
        except (TypeError, ValueError, OverflowError, AttributeError) as e:
            if isinstance(e, BadInput):
                raise
            raise BadInput(f"buffers[{i}]: expected a CoreDivisionBuffer's fields: {e}") from None
    s = _core.lx_cd_solve(doc(items, "buffers"), capacity, alignment, time_limit)
    for i, b in enumerate(bufs):
        menu = _get(b, "core_divisions") or []
        k = s.division[i]
        _set(b, "chosen_division", menu[k] if k < len(menu) else None)
        a = s.address[i]
        _set(b, "address", None if a < 0 else int(a))
    return CoreDivisionResult(s)
