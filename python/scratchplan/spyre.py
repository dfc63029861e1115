"""torch-spyre drop-ins: our solvers behind torch-spyre's LX planner data model.

``solve(buffers, capacity)`` takes objects with the fields of torch-spyre's
``LifetimeBoundBuffer`` (duck-typed: ``name, size, uses, first_use_is_read, in_place_parents,
residency_reason, lifetime_end_override``, and the newer ``lifetime_start_override``,
``paired_with``, ``lx_relayout_plans``, ``lx_view``) and sets ``address`` on each, ``None`` =
spilled to HBM, as torch-spyre's layout solvers do. ``solve_core_divisions(buffers, capacity)``
does the same for ``CoreDivisionBuffer``s (``core_divisions``, ``parents``,
``cd_parent_matches`` in addition): it chooses a division per buffer (sets ``chosen_division``,
the index into ``core_divisions``) and an address, minimizing HBM bytes.

The contract is torch-spyre's (docs/python.md, "torch-spyre contract"):
- lifetimes are half-open, ``[min(uses[0], lifetime_start_override), max(uses[-1] + 1,
  lifetime_end_override))``; an override never narrows a lifetime;
- an in-place child may take its parent's exact base address on the one hand-off tick, where the
  parent's whole footprint stays live: no other buffer, a sibling child included, may use any of
  its bytes then;
- ``paired_with`` makes an atomic group: all members resident or all in HBM;
- a buffer with a ``residency_reason`` is never placed, and every spilled buffer gets one;
- a list that breaks the contract raises ``ContractError`` (both a ``BadInput`` and an
  ``AssertionError``, as torch-spyre asserts), naming the rule torch-spyre checks first.
The planning itself is the alloc engine's (exact where it can prove optimality, never worse than
its greedy); only the field checks and conversions live here.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from . import _core
from ._common import BadInput, doc, flag

__all__ = ["solve", "solve_core_divisions", "SpyreResult", "CoreDivisionResult", "ContractError"]


class ContractError(BadInput, AssertionError):
    """A buffer list that breaks torch-spyre's LX planner contract. torch-spyre's solvers and
    tests expect an ``AssertionError``; the rest of scratchplan raises ``BadInput`` (a
    ``ValueError``): this is both."""


_MISSING = object()
_SYMBOL_IDS = 2 ** 52  # ids of symbolic split keys (the engine reads non-negative integer keys)


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


def _uses(b: Any, i: int) -> List[int]:
    try:
        return [int(u) for u in (_get(b, "uses") or [])]
    except (TypeError, ValueError, OverflowError) as e:
        raise ContractError(f"buffers[{i}] ({_get(b, 'name')}): expected integer uses: {e}") from None


def _int_field(b: Any, i: int, field: str) -> Optional[int]:
    v = _get(b, field)
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        raise ContractError(f"buffers[{i}] ({_get(b, 'name')}): {field}: expected an integer, got {v!r}") from None


def _size(b: Any, i: int) -> int:
    s = _int_field(b, i, "size")
    return -1 if s is None else s


def _check_contract(bufs: List[Any], joint: bool) -> None:
    """torch-spyre's checks, in its order: names, then the in-place edges
    (``_check_in_place_relationships``, before anything about the uses: a parent whose only later
    "use" repeats its first index is a computed buffer that is never read), then each buffer's uses
    and overrides, then the fields this drop-in gives no meaning (refused, never ignored)."""
    names: Dict[str, int] = {}
    for i, b in enumerate(bufs):
        n = _get(b, "name")
        if n is None:
            raise ContractError(f"buffers[{i}]: expected a 'name'")
        if str(n) in names:
            raise ContractError(f"buffers[{i}]: duplicate buffer name '{n}'")
        names[str(n)] = i
    uses = [_uses(b, i) for i, b in enumerate(bufs)]
    sizes = [_size(b, i) for i, b in enumerate(bufs)]

    def start(i: int) -> int:
        s = _int_field(bufs[i], i, "lifetime_start_override")
        return uses[i][0] if s is None else min(uses[i][0], s)

    def end(i: int) -> int:
        e = _int_field(bufs[i], i, "lifetime_end_override")
        return uses[i][-1] + 1 if e is None else max(uses[i][-1] + 1, e)

    for c, b in enumerate(bufs):
        for p in _get(b, "in_place_parents") or []:
            pn = _name(p)
            q = names.get(pn)
            if q is None:
                raise ContractError(f"in-place parent '{pn}' of '{_name(b)}' is not in the buffer list")
            if not uses[q] or not uses[c]:
                raise ContractError(f"in-place parent '{pn}' of '{_name(b)}': an in-place edge needs uses on both ends")
            read_after_write = bool(_get(bufs[q], "first_use_is_read", False)) or any(u > uses[q][0] for u in uses[q])
            why = _core.alloc_in_place_edge_error(_name(b), pn, end(q), start(c), read_after_write,
                                                  max(sizes[c], 0), sizes[q] if sizes[q] >= 0 else 2 ** 62)
            if why:
                raise ContractError(why)
    for i, b in enumerate(bufs):
        n, u = _name(b), uses[i]
        if any(y <= x for x, y in zip(u, u[1:])):
            raise ContractError(f"buffer '{n}': uses must be strictly increasing, got {u}")
        e = _int_field(b, i, "lifetime_end_override")
        if e is not None and u and e < u[-1] + 1:
            raise ContractError(f"buffer '{n}': lifetime_end_override {e} is below uses[-1]+1 = {u[-1] + 1}")
        s = _int_field(b, i, "lifetime_start_override")
        if s is not None and u and s > u[0]:
            raise ContractError(f"buffer '{n}': lifetime_start_override {s} is after uses[0] = {u[0]}")
        for p in _get(b, "paired_with") or []:
            if _name(p) not in names:
                raise ContractError(f"buffer '{n}': paired_with '{_name(p)}' is not in the buffer list")
        if _get(b, "lx_relayout_plans"):
            raise ContractError(f"buffer '{n}': lx_relayout_plans is not supported by scratchplan's solvers "
                                "(plan without LX relayouts, or leave the field empty)")
        if _get(b, "lx_view") is not None:
            raise ContractError(f"buffer '{n}': lx_view is not supported by scratchplan's solvers "
                                "(views of LX buffers are not modelled; leave it None)")
        if joint:
            menu = _get(b, "core_divisions", _MISSING)
            if menu is _MISSING or menu is None or len(menu) == 0:
                raise ContractError(f"buffer '{n}': a CoreDivisionBuffer needs core_divisions (at least one "
                                    "CoreDivision; index 0 is the committed one)")
            for k, cd in enumerate(menu):
                if _get(cd, "tiling"):
                    raise ContractError(f"buffer '{n}': core_divisions[{k}]: coarse tiling is not supported by "
                                        "scratchplan's solvers (give divisions without tiling)")


def _common_fields(b: Any, i: int) -> Dict[str, Any]:
    """The LifetimeBoundBuffer fields both engines read (already checked by _check_contract)."""
    d: Dict[str, Any] = {"name": str(_get(b, "name"))}
    uses = _uses(b, i)
    d["uses"] = uses
    d["first_use_is_read"] = bool(_get(b, "first_use_is_read", False))
    for f in ("lifetime_end_override", "lifetime_start_override"):
        v = _int_field(b, i, f)
        if v is not None and uses:
            d[f] = v
    reason = _get(b, "residency_reason")
    if reason:
        d["residency_reason"] = str(reason)
    parents = _get(b, "in_place_parents") or []
    if parents:
        d["in_place_parents"] = [_name(p) for p in parents]
    pairs = _get(b, "paired_with") or []
    if pairs:
        d["paired_with"] = [_name(p) for p in pairs]
    return d


def _buffer(b: Any, i: int) -> Dict[str, Any]:
    """One LifetimeBoundBuffer as a buffer of the alloc JSON format (docs/alloc.md)."""
    d = _common_fields(b, i)
    size = _size(b, i)
    d["size"] = max(size, 0)
    if size < 0 and "residency_reason" not in d:
        d["residency_reason"] = "unsized"  # torch-spyre: size -1 is never resident
    if not d["uses"]:
        # Graph inputs are seeded with empty use lists; nothing reads them from LX.
        del d["uses"], d["first_use_is_read"]
        d["start"], d["end"] = 0, 1
        d.setdefault("residency_reason", "no consumer reads it from LX")
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


def _contract(fn: Any) -> Any:
    """Every BadInput of an entry point is a ContractError: one class for torch-spyre's callers."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ContractError:
            raise
        except BadInput as e:
            raise ContractError(str(e)) from None

    wrapped.__name__, wrapped.__qualname__, wrapped.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    wrapped.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapped


@_contract
def solve(buffers: Iterable[Any], capacity: int, alignment: int = 128, time_limit: float = 1.0,
          solver: str = "auto", set_reasons: bool = True) -> SpyreResult:
    """Plans LX addresses for torch-spyre LifetimeBoundBuffers and sets ``address`` on each
    (``None`` = spilled). ``capacity``: usable LX bytes per core (torch-spyre's
    ``_lx_planning_size``); ``alignment``: 128 (one stick). With ``set_reasons`` a spilled buffer
    whose ``residency_reason`` is None gets the solver's reason (one that did not fit says
    "capacity"), so that a reason is present iff address is None. A list that breaks torch-spyre's
    contract raises ContractError."""
    capacity = flag("--capacity", "bytes", capacity)
    alignment = flag("alignment", "count", alignment, 1, 2 ** 62)
    time_limit = flag("--time-limit", "seconds", time_limit)
    bufs = list(buffers)
    _check_contract(bufs, joint=False)
    items = [_buffer(b, i) for i, b in enumerate(bufs)]
    problem = {"capacity": capacity, "buffers": items}
    r = _core.alloc_doc(doc(problem, "buffers"), capacity, False, "select", str(solver), time_limit, None, None, 0, [],
                        alignment)
    offsets = r.offsets
    reasons = r.spill_reasons
    for i, b in enumerate(bufs):
        off = int(offsets[i])
        _set(b, "address", None if off < 0 else off)
        if off < 0 and set_reasons and not _get(b, "residency_reason"):
            _set(b, "residency_reason", reasons[i] or f"no room on scratchpad (capacity {capacity})")
    return SpyreResult(r)


def _splits(cd: Any, keys: Dict[str, int]) -> Dict[str, Dict[str, int]]:
    """A CoreDivision as {output_splits, reduction_splits} keyed by integer ids (strides stay
    themselves; symbols get fresh ids: only their identity matters)."""

    def key(k: Any) -> str:
        s = str(k)
        if s.isdigit():
            return s
        if s not in keys:
            keys[s] = _SYMBOL_IDS + len(keys)  # above any stride: never collides with one
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
    d = _common_fields(b, i)
    d["size"] = _size(b, i)
    d["parents"] = [_name(p) for p in (_get(b, "parents") or [])]
    d["core_divisions"] = [_splits(cd, keys) for cd in _get(b, "core_divisions")]
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

    @property
    def reasons(self) -> List[Optional[str]]:
        """Why each buffer is in HBM (None when resident)."""
        return [r or None for r in self._s.reason]

    def __repr__(self) -> str:
        return (f"<scratchplan.spyre.CoreDivisionResult HBM {self.hbm_bytes} B (seed {self.seed_hbm_bytes} B, "
                f"lower bound {self.lower_bound} B)>")


@_contract
def solve_core_divisions(buffers: Iterable[Any], capacity: int, alignment: int = 128,
                         time_limit: float = 1.0, set_reasons: bool = True) -> CoreDivisionResult:
    """Co-optimizes core divisions and LX placement of torch-spyre CoreDivisionBuffers: sets
    ``chosen_division`` (the integer index into ``core_divisions``; 0 is the seed) and ``address``
    (per-core LX offset, ``None`` = HBM) on each buffer. A buffer is resident only when every
    child edge slices it compatibly (``cd_parent_matches``); footprints are
    ``ceil(size / output_partition)``. Never worse than the seed divisions. With ``set_reasons``
    a buffer left in HBM without a ``residency_reason`` gets one ("capacity: ..." when it did not
    fit, "core div mismatch" when a consumer slices it differently). The same checks as
    ``solve`` (ContractError), and every buffer needs ``core_divisions``."""
    capacity = flag("--capacity", "bytes", capacity)
    alignment = flag("alignment", "count", alignment, 1, 2 ** 62)
    time_limit = flag("--time-limit", "seconds", time_limit)
    bufs = list(buffers)
    _check_contract(bufs, joint=True)
    keys: Dict[str, int] = {}
    items = []
    for i, b in enumerate(bufs):
        try:
            items.append(_cd_buffer(b, i, keys))
        except (TypeError, ValueError, OverflowError, AttributeError) as e:
            if isinstance(e, BadInput):
                raise
            raise ContractError(f"buffers[{i}]: expected a CoreDivisionBuffer's fields: {e}") from None
    s = _core.lx_cd_solve(doc(items, "buffers"), capacity, alignment, time_limit)
    for i, b in enumerate(bufs):
        _set(b, "chosen_division", int(s.division[i]))
        a = s.address[i]
        _set(b, "address", None if a < 0 else int(a))
        if a < 0 and set_reasons and not _get(b, "residency_reason"):
            _set(b, "residency_reason", s.reason[i] or f"no room on scratchpad (capacity {capacity})")
    return CoreDivisionResult(s)
