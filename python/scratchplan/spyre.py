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
  ``AssertionError``, as torch-spyre asserts), naming the rule torch-spyre checks first;
- sizes, uses, overrides, split factors and indices are integer-valued by type (``exact_int``);
- ``lx_view`` and ``lx_relayout_plans`` pass through untouched.

``LayoutSolver`` is torch-spyre's September solver object (``plan_layout``,
``plan_layout_and_core_divisions(cost_expr=None)``, ``last_solve_stats``, the helpers
``excluded`` / ``record_exclusions`` / ``partition``), with ``solved_bindings``: the objective
ladder (residency, loop-group cuts, cores, balance, tile count), a sympy cost expression lowered
onto the engine, coarse tilings, relayout copies.
The planning itself is the C++ engines' (alloc, and src/lx's joint engines); only the field
checks and conversions live here.
"""
from __future__ import annotations

import json
import time
import warnings
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import _core
from ._common import BadInput, doc, exact_int, flag

__all__ = ["solve", "solve_core_divisions", "SpyreResult", "CoreDivisionResult", "ContractError", "LayoutSolver",
           "SolveError", "solved_bindings", "ChosenRelayout", "RELAYOUT_PREFIX"]

RELAYOUT_PREFIX = "__spyre_lx_relayout__:"  # torch-spyre's names of relayout destinations and copies


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


def _where(b: Any, i: int, field: str) -> str:
    n = _get(b, "name")
    return f"buffers[{i}]" + (f" ('{n}')" if n is not None else "") + f": {field}"


def _uses(b: Any, i: int) -> List[int]:
    u = _get(b, "uses")
    if u is None:
        return []
    if isinstance(u, (str, bytes, dict)):
        raise ContractError(f"{_where(b, i, 'uses')}: expected a list of integers, got {type(u).__name__}")
    try:
        items = list(u)
    except TypeError:
        raise ContractError(f"{_where(b, i, 'uses')}: expected a list of integers, got {type(u).__name__}") from None
    return [exact_int(x, f"{_where(b, i, 'uses')}[{k}]") for k, x in enumerate(items)]


def _int_field(b: Any, i: int, field: str) -> Optional[int]:
    v = _get(b, field)
    return None if v is None else exact_int(v, _where(b, i, field))


def _bool_field(b: Any, i: int, field: str) -> bool:
    v = _get(b, field, False)
    if v is None:
        return False
    if isinstance(v, bool) or type(v).__name__ in ("bool", "bool_", "bool8"):
        return bool(v)
    raise ContractError(f"{_where(b, i, field)}: expected a bool, got {type(v).__name__} {v!r}")


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
        # lx_view and lx_relayout_plans belong to the allocator: accepted and never read or
        # altered (torch-spyre commits them from the buffers we return).
        if joint:
            menu = _get(b, "core_divisions", _MISSING)
            if menu is _MISSING or menu is None or len(menu) == 0:
                raise ContractError(f"buffer '{n}': a CoreDivisionBuffer needs core_divisions (at least one "
                                    "CoreDivision; index 0 is the committed one)")


def _common_fields(b: Any, i: int) -> Dict[str, Any]:
    """The LifetimeBoundBuffer fields both engines read (already checked by _check_contract)."""
    d: Dict[str, Any] = {"name": str(_get(b, "name"))}
    uses = _uses(b, i)
    d["uses"] = uses
    d["first_use_is_read"] = _bool_field(b, i, "first_use_is_read")
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
    capacity = flag("--capacity", "bytes", exact_int(capacity, "capacity"))
    alignment = flag("alignment", "count", exact_int(alignment, "alignment"), 1, 2 ** 62)
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


def _key(k: Any, keys: Dict[str, int]) -> str:
    """A split key as the engine's integer id: a stride stays itself; a symbol or name gets a
    fresh id above any stride (only its identity matters)."""
    s = str(k)
    if s.isdigit():
        return s
    if s not in keys:
        keys[s] = _SYMBOL_IDS + len(keys)
    return str(keys[s])


def _factors(m: Any, where: str, keys: Dict[str, int]) -> Dict[str, int]:
    if not hasattr(m, "items"):
        raise ContractError(f"{where}: expected a mapping of split factors, got {type(m).__name__}")
    return {_key(k, keys): exact_int(v, f"{where}[{k!r}]") for k, v in m.items()}


def _tiling(cd: Any, where: str) -> List[List[Any]]:
    """A CoreDivision's coarse tiling as [[count, is_reduction], ...] outermost first. torch-spyre's
    ``TileSpec()`` (no axes), a missing tiling and None are untiled: a spec is never judged by
    truthiness (an empty frozen dataclass is truthy)."""
    t = _get(cd, "tiling")
    if t is None:
        return []
    axes = t if isinstance(t, (list, tuple)) else _get(t, "axes", _MISSING)
    if axes is _MISSING:
        raise ContractError(f"{where}.tiling: expected a TileSpec (axes of TileAxis) or a list, got {type(t).__name__}")
    out = []
    for k, ax in enumerate(axes or ()):
        if isinstance(ax, (list, tuple)):  # the dict form: [host_dim, count, is_reduction]
            if len(ax) != 3:
                raise ContractError(f"{where}.tiling[{k}]: expected [host_dim, count, is_reduction]")
            ax = {"host_dim": ax[0], "count": ax[1], "is_reduction": ax[2]}
        count = exact_int(_get(ax, "count"), f"{where}.tiling.axes[{k}].count")
        if count < 1:
            raise ContractError(f"{where}.tiling.axes[{k}].count: expected a positive integer, got {count}")
        red = _get(ax, "is_reduction", False)
        if not isinstance(red, bool):
            raise ContractError(f"{where}.tiling.axes[{k}].is_reduction: expected a bool, got {red!r}")
        out.append([count, red])
    return out


def _splits(cd: Any, keys: Dict[str, int], where: str = "core_divisions") -> Dict[str, Any]:
    """A CoreDivision as {output_splits, reduction_splits, tiling} keyed by integer ids. September:
    ``splits`` + ``reduction_syms``; August (dicts): ``output_splits`` / ``reduction_splits``."""
    splits = _get(cd, "splits")
    if splits is not None:
        red_syms = {str(x) for x in (_get(cd, "reduction_syms") or ())}
        f = _factors(splits, f"{where}.splits", keys)
        red = {_key(k, keys) for k in splits if str(k) in red_syms}
        d = {"output_splits": {k: v for k, v in f.items() if k not in red},
             "reduction_splits": {k: v for k, v in f.items() if k in red}}
    else:
        d = {"output_splits": _factors(_get(cd, "output_splits") or {}, f"{where}.output_splits", keys),
             "reduction_splits": _factors(_get(cd, "reduction_splits") or {}, f"{where}.reduction_splits", keys)}
    tiling = _tiling(cd, where)
    if tiling:
        d["tiling"] = tiling
    return d


_BOUNDARY = {"Intermediate": 0, "Input": 1, "Output": 2}


def _boundary(b: Any, i: int) -> Optional[int]:
    v = _get(b, "boundary")
    if v is None:
        return None
    name = getattr(v, "name", None)  # torch-spyre's BufferType enum
    if name in _BOUNDARY:
        return _BOUNDARY[name]
    if isinstance(v, str) and v in _BOUNDARY:
        return _BOUNDARY[v]
    k = exact_int(getattr(v, "value", v), _where(b, i, "boundary"))
    if not 0 <= k <= 2:
        raise ContractError(f"{_where(b, i, 'boundary')}: expected a BufferType (Intermediate 0, Input 1, Output 2)")
    return k


def _is_relayout_copy(b: Any) -> bool:
    return type(b).__name__ == "RelayoutCopyBuffer" or str(_get(b, "name", "")).startswith(RELAYOUT_PREFIX + "copy:")


def _cd_buffer(b: Any, i: int, keys: Dict[str, int], plain: bool = False) -> Dict[str, Any]:
    """One CoreDivisionBuffer in the capture format lx_cd_solve reads (``plain``: a placement-only
    buffer, given the whole-tensor division)."""
    d = _common_fields(b, i)
    d["size"] = _size(b, i)
    if plain:
        d["core_divisions"] = [{"output_splits": {}, "reduction_splits": {}}]
        d["plain"] = True
        return d
    d["parents"] = [_name(p) for p in (_get(b, "parents") or [])]
    d["core_divisions"] = [_splits(cd, keys, f"{_where(b, i, 'core_divisions')}[{k}]")
                           for k, cd in enumerate(_get(b, "core_divisions"))]
    matches = _get(b, "cd_parent_matches") or {}
    d["cd_parent_matches"] = {
        _name(p): [[exact_int(x, _where(b, i, f"cd_parent_matches[{_name(p)!r}]")),
                    exact_int(y, _where(b, i, f"cd_parent_matches[{_name(p)!r}]"))] for x, y in pairs]
        for p, pairs in matches.items()}
    bt = _boundary(b, i)
    if bt is not None:
        d["boundary"] = bt
    if _is_relayout_copy(b):
        d["relayout_copy"] = True
        cands = list(_get(b, "candidates") or ())
        parent = _get(b, "relayout_parent") or (_get(cands[0], "parent") if cands else None)
        if parent:
            d["relayout_parent"] = _name(parent)
            d["relayout_options"] = []  # _relayout_options fills them in
    return d


def _candidate(c: Any, where: str) -> Tuple[int, str, int]:
    """A RelayoutCandidate as (source_division, consumer name, consumer_division)."""
    return (exact_int(_get(c, "source_division"), f"{where}.source_division"), _name(_get(c, "consumer")),
            exact_int(_get(c, "consumer_division"), f"{where}.consumer_division"))


def _relayout_options(bufs: List[Any], items: List[Dict[str, Any]]) -> Dict[int, List[Tuple[Tuple[int, int, int], Any]]]:
    """The options of each relayout copy: (source division, consumer index, consumer division) with
    its RelayoutCandidate. A consumer's ``cd_parent_relayouts[parent]`` is its list of the priced
    candidates (NOTES 1.14.9): where it has an entry for the copy's parent, the copy serves that
    consumer through exactly the listed candidates of the copy's group whose source division the
    copy prices (its own ``candidates``: ``cost_by_source_division``); a consumer without an entry
    is served through the copy's own candidates for it. Sets ``relayout_options`` on the items."""
    names = {str(_get(b, "name")): i for i, b in enumerate(bufs)}
    listed: Dict[Tuple[int, str], List[Tuple[Any, str]]] = {}  # (consumer, parent) -> [(candidate, where)]
    for i, b in enumerate(bufs):
        rel = _get(b, "cd_parent_relayouts") or {}
        if not hasattr(rel, "items"):
            raise ContractError(f"{_where(b, i, 'cd_parent_relayouts')}: expected a mapping parent -> candidates")
        for p, cands in rel.items():
            pn = _name(p)
            if pn not in names:
                raise ContractError(f"{_where(b, i, 'cd_parent_relayouts')}: parent '{pn}' is not in the buffer list")
            listed.setdefault((i, pn), [])  # an empty list: this edge is served by no copy
            for k, c in enumerate(cands or ()):
                where = _where(b, i, f"cd_parent_relayouts[{pn!r}][{k}]")
                if _name(_get(c, "parent")) != pn or _name(_get(c, "consumer")) != str(_get(b, "name")):
                    raise ContractError(f"{where}: a candidate of this edge names parent '{pn}' and consumer "
                                        f"'{_get(b, 'name')}', got {_name(_get(c, 'parent'))!r} -> "
                                        f"{_name(_get(c, 'consumer'))!r}")
                listed.setdefault((i, pn), []).append((c, where))
    out: Dict[int, List[Tuple[Tuple[int, int, int], Any]]] = {}
    for x, item in enumerate(items):
        if "relayout_parent" not in item:
            continue
        b, parent = bufs[x], item["relayout_parent"]
        own = list(_get(b, "candidates") or ())
        group = _get(b, "group", -1)
        priced = set()
        opts: List[Tuple[Tuple[int, int, int], Any]] = []
        for k, c in enumerate(own):
            sd, cn, cd = _candidate(c, _where(b, x, f"candidates[{k}]"))
            priced.add(sd)
            ci = names.get(cn)
            if ci is None:
                raise ContractError(f"{_where(b, x, f'candidates[{k}]')}: consumer '{cn}' is not in the buffer list")
            if (ci, parent) not in listed:
                opts.append(((sd, ci, cd), c))
        for (ci, pn), cands in listed.items():
            if pn != parent:
                continue
            for c, where in cands:
                sd, _, cd = _candidate(c, where)
                if _get(c, "group", group) == group and sd in priced:
                    opts.append(((sd, ci, cd), c))
        seen = set()
        opts = [o for o in opts if not (o[0] in seen or seen.add(o[0]))]
        out[x] = opts
        item["relayout_options"] = [[sd, str(_get(bufs[ci], "name")), cd] for (sd, ci, cd), _ in opts]
    return out


class CoreDivisionResult:
    """What ``solve_core_divisions`` found (divisions and addresses are already set on the buffers).
    ``contract`` says which objective was minimized: "august" (HBM bytes) or "september"
    (torch-spyre's ladder or cost expression; its ``last_solve_stats`` and stage values here)."""

    __slots__ = ("_s", "_sept", "_hbm")

    def __init__(self, s: Any, september: Optional[Tuple[Dict[str, Any], int, List[Any]]] = None) -> None:
        self._s, self._sept = s, september
        self._hbm = None
        if september is not None:
            self._hbm = sum(_size(b, 0) * len(_get(b, "uses") or []) for i, b in enumerate(september[2])
                            if s.address[i] < 0 and _size(b, 0) > 0)

    @property
    def contract(self) -> str:
        return "august" if self._sept is None else "september"

    @property
    def hbm_bytes(self) -> int:
        """HBM bytes of the plan: sum over non-resident sized buffers of size x len(uses)."""
        return self._s.hbm_bytes if self._sept is None else self._hbm

    @property
    def seed_hbm_bytes(self) -> Optional[int]:
        """The best plan with every buffer at division 0 (the committed seed); August only (None)."""
        return self._s.seed_hbm_bytes if self._sept is None else None

    @property
    def lower_bound(self) -> int:
        """Proven lower bound on ``hbm_bytes`` (September: the bytes of buffers no choice can keep)."""
        return self._s.lower_bound if self._sept is None else self._sept[1]

    @property
    def proven(self) -> bool:
        """``hbm_bytes == lower_bound``."""
        return self._s.proven_optimal if self._sept is None else self._hbm == self._sept[1]

    @property
    def optimal(self) -> bool:
        """The contract's own objective is proven optimal (August: HBM bytes at the bound;
        September: every choice enumerated and every placement proven)."""
        return self._s.proven_optimal if self._sept is None else bool(self._s.optimal)

    @property
    def last_solve_stats(self) -> Dict[str, Any]:
        """September: torch-spyre's ``last_solve_stats`` of this solve; August: {}."""
        return {} if self._sept is None else dict(self._sept[0])

    @property
    def stages(self) -> Optional[Dict[str, Any]]:
        """September: the ladder's stage values (residency cost in alignment units, cuts, cores,
        split^2, tiles) and the cost expression's value; August: None."""
        if self._sept is None:
            return None
        s = self._s
        return {"residency": s.residency_cost, "cuts": s.cuts, "cores": s.cores, "split_sq": s.split_sq,
                "tiles": s.tiles, "objective": s.objective}

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
        if self._sept is not None:
            return (f"<scratchplan.spyre.CoreDivisionResult (september, {self._sept[0].get('status')}) HBM "
                    f"{self.hbm_bytes} B (lower bound {self.lower_bound} B)>")
        return (f"<scratchplan.spyre.CoreDivisionResult HBM {self.hbm_bytes} B (seed {self.seed_hbm_bytes} B, "
                f"lower bound {self.lower_bound} B)>")


_CONTRACTS = ("auto", "september", "august")


def _september_input(bufs: List[Any]) -> bool:
    """True when some candidate is in torch-spyre's September form: it carries a ``tiling`` (its
    ``CoreDivision`` always does, ``TileSpec()`` by default; the August dicts and the captures have
    none)."""
    for b in bufs:
        for cd in _get(b, "core_divisions") or ():
            if _get(cd, "tiling") is not None:
                return True
    return False


@_contract
def solve_core_divisions(buffers: Iterable[Any], capacity: int, alignment: int = 128,
                         time_limit: float = 1.0, set_reasons: bool = True, cost_expr: Any = None,
                         contract: str = "auto", warn_on_cost_expr: bool = True) -> CoreDivisionResult:
    """Co-optimizes core divisions and LX placement of torch-spyre CoreDivisionBuffers: sets
    ``chosen_division`` (the integer index into ``core_divisions``; 0 is the seed) and ``address``
    (per-core LX offset, ``None`` = HBM) on each buffer. A buffer is resident only when every
    child edge slices it compatibly (``cd_parent_matches``).

    ``contract``: "september" follows torch-spyre's current ``plan_layout_and_core_divisions``
    (the objective ladder: residency, loop-group cuts, cores, balance, tile count; or ``cost_expr``
    alone, lowered as ``LayoutSolver`` lowers it, with its fallback), as ``LayoutSolver`` does;
    "august" minimizes HBM bytes (never worse than the seed divisions). "auto" (default) takes
    "september" when ``cost_expr`` is given or some candidate is in September's form (it carries
    a ``tiling``, ``TileSpec()`` included), else "august", so the dicts and captures that work
    today keep their results. With ``set_reasons`` a buffer left in HBM without a
    ``residency_reason`` gets one ("capacity ..." when it did not fit, "core div mismatch" when a
    consumer slices it differently). The same checks as ``solve`` (ContractError), and every
    buffer needs ``core_divisions``."""
    capacity = flag("--capacity", "bytes", exact_int(capacity, "capacity"))
    alignment = flag("alignment", "count", exact_int(alignment, "alignment"), 1, 2 ** 62)
    time_limit = flag("--time-limit", "seconds", time_limit)
    if contract not in _CONTRACTS:
        raise ContractError(f"contract: expected one of {', '.join(_CONTRACTS)}, got {contract!r}")
    bufs = list(buffers)
    _check_contract(bufs, joint=True)
    if contract == "august" and cost_expr is not None:
        raise ContractError("cost_expr: the August objective (contract='august') takes no cost expression")
    if bufs and (contract == "september" or (contract == "auto" and (cost_expr is not None or
                                                                      _september_input(bufs)))):
        solver = LayoutSolver(bufs, capacity, alignment, time_limit=time_limit, warn_on_cost_expr=warn_on_cost_expr)
        solver._fresh_only = False  # the module-level entry has always overwritten addresses
        solver._solve(joint=True, cost_expr=cost_expr)
        s = solver._engine
        if set_reasons:
            for i, b in enumerate(bufs):
                if s.address[i] < 0 and not _get(b, "residency_reason"):
                    _set(b, "residency_reason", s.reason[i])
        forced = 0  # HBM bytes no choice avoids: barred, or no candidate fits (torch-spyre's excluded())
        for b in bufs:
            size, uses = _size(b, 0), _get(b, "uses") or []
            if size > 0 and solver.excluded(b) is not None:
                forced += size * len(uses)
        return CoreDivisionResult(s, september=(solver.last_solve_stats, forced, bufs))
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


# --------------------------------------------------------------------------------------------
# torch-spyre's September solver object (NOTES: plan_solver.py / ilp_solver_ortools.py)

class ChosenRelayout:
    """torch-spyre's ``ChosenRelayout``: the priced candidate a consumer reads its parent through,
    and the copy's LX address (bytes; the same for every consumer of one copy)."""

    __slots__ = ("candidate", "destination_address")

    def __init__(self, candidate: Any, destination_address: int) -> None:
        self.candidate, self.destination_address = candidate, destination_address

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, ChosenRelayout) and other.candidate == self.candidate
                and other.destination_address == self.destination_address)

    def __repr__(self) -> str:
        return f"ChosenRelayout({self.candidate!r}, destination_address={self.destination_address})"


class SolveError(Exception):
    """No plan: torch-spyre's ``SolveError`` (its allocator then falls back to greedy)."""


class _NotLowerable(NotImplementedError):
    """A cost expression node the engine cannot evaluate (torch-spyre: "cannot linearize")."""


def _sym(name: str, **assumptions: Any) -> Any:
    import sympy
    return sympy.Symbol(name, integer=True, **assumptions)


def _buffer_symbols(b: Any, keys_in_order: List[Any]) -> Tuple[Any, Dict[Any, Any], Any]:
    """(is_lx, {split key: symbol}, division) of a buffer: its own properties when it has them
    (torch-spyre's ``sym_is_lx``, ``sym_core_divs``, ``sym_division``: the symbols' assumptions are
    part of their identity), else built with the same names and assumptions."""
    n = str(_get(b, "name"))
    is_lx = getattr(b, "sym_is_lx", None)
    if is_lx is None:
        is_lx = _sym(f"is_lx_{n}", nonnegative=True)
    divs = getattr(b, "sym_core_divs", None)
    if divs is None:
        divs = {k: _sym(f"split_{n}_{k}", positive=True) for k in keys_in_order}
    division = getattr(b, "sym_division", None)
    if division is None:
        division = _sym(f"division_{n}", nonnegative=True)
    return is_lx, dict(divs), division


def _split_keys(b: Any) -> List[Any]:
    """Distinct split keys across all candidates, in first-seen order."""
    seen: Dict[str, Any] = {}
    for cd in _get(b, "core_divisions") or ():
        m = _get(cd, "splits")
        if m is None:
            m = dict(_get(cd, "output_splits") or {})
            m.update(_get(cd, "reduction_splits") or {})
        for k in m:
            seen.setdefault(str(k), k)
    return list(seen.values())


def _has_candidates(b: Any) -> bool:
    return bool(_get(b, "core_divisions") or ())


def _lower(expr: Any, leaves: Dict[Any, Any]) -> Any:
    """A sympy expression as the engine's expression tree (JSON). Raises _NotLowerable on a node
    or symbol the engine does not know: the same set of nodes torch-spyre's CP-SAT printer takes,
    evaluated exactly instead of linearized."""
    import sympy
    from sympy.logic.boolalg import BooleanFalse, BooleanTrue

    ops = {sympy.Add: "add", sympy.Mul: "mul", sympy.Pow: "pow", sympy.Min: "min", sympy.Max: "max",
           sympy.Abs: "abs", sympy.log: "log", sympy.exp: "exp", sympy.floor: "floor", sympy.ceiling: "ceiling",
           sympy.KroneckerDelta: "delta", sympy.StrictLessThan: "lt", sympy.LessThan: "le",
           sympy.StrictGreaterThan: "gt", sympy.GreaterThan: "ge", sympy.Equality: "eq", sympy.Unequality: "ne",
           sympy.And: "and", sympy.Or: "or", sympy.Not: "not"}

    def go(e: Any, depth: int) -> Any:
        if depth > 180:
            raise _NotLowerable("expression nested too deeply")
        if isinstance(e, BooleanTrue):
            return 1
        if isinstance(e, BooleanFalse):
            return 0
        if e.is_Number:
            v = float(e)
            if v != v or v in (float("inf"), float("-inf")):
                raise _NotLowerable(f"non-finite constant {e}")
            return v
        if e.is_Symbol:
            if e not in leaves:
                raise _NotLowerable(f"unbound symbol {e}")
            return leaves[e]
        if type(e).__name__ == "RelayoutCharge":
            return ["charge"] + [go(a, depth + 1) for a in e.args]
        if isinstance(e, sympy.Piecewise):
            out: List[Any] = ["piecewise"]
            for v, c in e.args:
                out += [go(v, depth + 1), go(c, depth + 1)]
            return out
        for cls, name in ops.items():
            if isinstance(e, cls):
                if name == "log" and len(e.args) != 1:
                    raise _NotLowerable("log with a base")
                return [name] + [go(a, depth + 1) for a in e.args]
        raise _NotLowerable(f"cannot linearize {type(e).__name__}: {e}")

    return go(sympy.sympify(expr), 0)


def solved_bindings(buffers: Iterable[Any]) -> Dict[Any, int]:
    """torch-spyre's ``solved_bindings``: ``is_lx`` -> residency (0/1) for every buffer; for a
    buffer with candidates and an int ``chosen_division`` in range, each split symbol -> the chosen
    candidate's factor (1 for a key it does not split) and ``division`` -> the index."""
    out: Dict[Any, int] = {}
    for b in buffers:
        keys = _split_keys(b)
        is_lx, divs, division = _buffer_symbols(b, keys)
        out[is_lx] = 0 if _get(b, "address") is None else 1
        menu = list(_get(b, "core_divisions") or ())
        k = _get(b, "chosen_division")
        if not menu or type(k) is not int or not 0 <= k < len(menu):
            continue
        cd = menu[k]
        m = _get(cd, "splits")
        if m is None:
            m = dict(_get(cd, "output_splits") or {})
            m.update(_get(cd, "reduction_splits") or {})
        by_str = {str(x): v for x, v in m.items()}
        for key, sym in divs.items():
            out[sym] = int(by_str.get(str(key), 1))
        out[division] = k
    return out


class LayoutSolver:
    """torch-spyre's layout-solver object (the interface of its ``CpSatLayoutSolver``), planned by
    scratchplan's engine: ``LayoutSolver(buffers, size, alignment=128)`` then ``plan_layout()``
    (placement; buffers that carry candidates still choose a division) or
    ``plan_layout_and_core_divisions(cost_expr=None)`` (joint). Without a cost expression the
    objective ladder of torch-spyre's CP-SAT model is minimized (residency, loop-group cuts,
    cores, balance, tile count); with one, the expression alone. Exact (every choice enumerated,
    ``last_solve_stats["status"] == "OPTIMAL"``) while the choice space is small, local search
    beyond ("FEASIBLE"). The caller's buffer objects come back in input order with ``address``
    (bytes or None), and joint buffers with ``chosen_division`` (int) and ``chosen_relayouts``.
    ``lx_view`` and ``lx_relayout_plans`` are never read or altered."""

    supports_paired_buffers = True  # paired_with groups are placed all or nothing, members never share bytes
    decides_lx_relayouts = True     # with a cost expression, LX-to-LX relayout copies may be chosen

    def __init__(self, buffers: Iterable[Any], size: Any, alignment: Any = 128, *, time_limit: float = 30.0,
                 warn_on_cost_expr: bool = True, exact: bool = True) -> None:
        self.buffers = list(buffers)
        self.limit = _contract(lambda: flag("--capacity", "bytes", exact_int(size, "size")))()
        self.alignment = _contract(lambda: flag("alignment", "count", exact_int(alignment, "alignment"), 1,
                                                2 ** 62))()
        self.time_limit = _contract(lambda: flag("--time-limit", "seconds", time_limit))()
        self.warn_on_cost_expr = warn_on_cost_expr
        self.exact = bool(exact)  # False: skip the enumeration, use the local search (as beyond the exact sizes)
        self.spill_reasons: Dict[str, str] = {}
        self.last_solve_stats: Dict[str, Any] = {}
        self._fresh_only = True  # torch-spyre asserts the buffers carry no address yet
        self._engine: Any = None  # the engine's LadderSolution of the last solve

    @classmethod
    def replans_after_tiling(cls) -> bool:
        return True  # tilings are chosen here: the allocator re-plans over the tiled graph, as for CP-SAT

    # -- torch-spyre's MemoryPlanSolver helpers (exact semantics, NOTES §1.14.11) --
    def _min_footprint(self, b: Any) -> int:
        size = exact_int(_get(b, "size"), f"buffer '{_get(b, 'name')}': size")
        menu = list(_get(b, "core_divisions") or ())
        if not menu:
            return size
        best = None
        for cd in menu:
            sp = _splits(cd, {})
            part = 1
            for k, v in sp["output_splits"].items():
                part *= 1 if k in sp["reduction_splits"] else v
            for c, red in sp.get("tiling", []):
                part *= 1 if red else c
            fp = -(-size // part)
            best = fp if best is None else min(best, fp)
        return best

    def excluded(self, buf: Any) -> Optional[str]:
        """``residency_reason`` if set; else the capacity text when the minimum footprint exceeds
        the limit (bytes, no alignment rounding); else None."""
        r = _get(buf, "residency_reason")
        if r is not None:
            return r
        m = self._min_footprint(buf)
        if m > self.limit:
            return f"min footprint {m} B > LX capacity {self.limit} B"
        return None

    def record_exclusions(self) -> Dict[str, str]:
        """Replaces ``spill_reasons`` with the barred buffers' reasons and returns it."""
        self.spill_reasons = {str(_get(b, "name")): r for b in self.buffers if (r := self.excluded(b)) is not None}
        return self.spill_reasons

    def partition(self) -> Tuple[List[Any], List[Any]]:
        """(placeable, excluded), both in input order."""
        ex = self.record_exclusions()
        return ([b for b in self.buffers if str(_get(b, "name")) not in ex],
                [b for b in self.buffers if str(_get(b, "name")) in ex])

    # -- solving --
    def plan_layout(self) -> List[Any]:
        return _contract(self._solve)(joint=False, cost_expr=None)

    def plan_layout_and_core_divisions(self, cost_expr: Any = None) -> List[Any]:
        return _contract(self._solve)(joint=True, cost_expr=cost_expr)

    def _solve(self, joint: bool, cost_expr: Any) -> List[Any]:
        t0 = time.monotonic()
        bufs = self.buffers
        if not bufs:
            return bufs
        _check_contract(bufs, joint=joint)
        for b in bufs:
            a = _get(b, "address")
            if a is not None and self._fresh_only:
                raise ContractError(f"buffer '{_get(b, 'name')}' already has an address ({a!r}): "
                                    "plan fresh buffers (torch-spyre asserts this too)")
        keys: Dict[str, int] = {}
        items = []
        for i, b in enumerate(bufs):
            try:
                items.append(_cd_buffer(b, i, keys, plain=not _has_candidates(b)))
            except (TypeError, ValueError, OverflowError, AttributeError) as e:
                if isinstance(e, BadInput):
                    raise
                raise ContractError(f"buffers[{i}]: expected a CoreDivisionBuffer's fields: {e}") from None
        options = _relayout_options(bufs, items)
        cost = ""
        if cost_expr is not None:
            leaves: Dict[Any, Any] = {}
            for i, b in enumerate(bufs):
                ks = _split_keys(b)
                is_lx, divs, division = _buffer_symbols(b, ks)
                leaves[is_lx] = ["is_lx", i]
                if _has_candidates(b):
                    leaves[division] = ["division", i]
                    for k, sym in divs.items():
                        leaves[sym] = ["split", i, int(_key(k, keys))]
            try:
                cost = json.dumps(_lower(cost_expr, leaves))
            except (RuntimeError, TypeError, ValueError) as e:
                if not self.warn_on_cost_expr:
                    raise
                self.last_solve_stats = {"status": "NOT_LINEARIZABLE", "error": str(e), "objective_used": False}
                warnings.warn(f"scratchplan.spyre: cannot linearize cost_expr ({e}); falling back to the objective "
                              "ladder", RuntimeWarning, stacklevel=3)
                cost = ""
        # The limit holds for the whole call: the engine gets what the checks and the lowering of the
        # cost expression left (a large sympy expression takes a noticeable part), less 2 % for
        # the result's conversion (0 = no limit stays 0).
        limit = max(1e-3, (self.time_limit - (time.monotonic() - t0)) * 0.98) if self.time_limit > 0 else 0.0
        try:
            s = _core.lx_cd_ladder(doc(items, "buffers"), self.limit, self.alignment, limit, cost, True, self.exact)
        except BadInput as e:
            if "no division choice satisfies" not in str(e):
                raise
            # Infeasible model (the tiled pair tables exclude every choice): torch-spyre's SolveError,
            # with the failing status recorded first.
            self.last_solve_stats = {"status": "INFEASIBLE", "solve_s": 0.0, "variables": 0, "constraints": 0,
                                     "limit_s": float(self.time_limit) if self.time_limit > 0 else None,
                                     "objective_used": bool(cost)}
            err = SolveError(f"scratchplan returned INFEASIBLE without a plan: {e}")
            err.last_solve_stats = dict(self.last_solve_stats)  # type: ignore[attr-defined]
            raise err from None
        self._engine = s
        self.last_solve_stats = {
            "status": "OPTIMAL" if s.optimal else "FEASIBLE",
            "solve_s": round(s.seconds, 3),
            "variables": int(s.variables),
            "constraints": int(s.constraints),
            "limit_s": float(self.time_limit) if self.time_limit > 0 else None,
            "objective_used": bool(cost),
        }
        self.spill_reasons = {}
        for i, b in enumerate(bufs):
            a = s.address[i]
            _set(b, "address", None if a < 0 else int(a))
            if a < 0:
                self.spill_reasons[str(_get(b, "name"))] = s.reason[i]
            if _has_candidates(b):
                _set(b, "chosen_division", int(s.division[i]))
                if joint or hasattr(b, "chosen_relayouts") or isinstance(b, dict):
                    _set(b, "chosen_relayouts", {})
        for consumer, parent, copy in s.served:
            c, p = bufs[consumer], bufs[parent]
            sd, cd = int(s.division[parent]), int(s.division[consumer])
            cand = next(k for (ksd, kc, kcd), k in options[copy] if (ksd, kc, kcd) == (sd, consumer, cd))
            _get(c, "chosen_relayouts")[str(_get(p, "name"))] = ChosenRelayout(cand, int(s.address[copy]))
        return bufs
