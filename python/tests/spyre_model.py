"""torch-spyre's September data model (plan_solver.py, NOTES 1.14): its frozen and mutable
dataclasses with torch-spyre's field names, defaults and properties, written from the contract
(nothing of scratchplan in them). Shared by the conformance tests (test_spyre_september.py) and
the generator of September inputs (bench/gen_spyre.py), so both build inputs the same way."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import sympy


@dataclass(frozen=True)
class TileAxis:
    host_dim: int
    count: int
    is_reduction: bool = False


@dataclass(frozen=True)
class TileSpec:
    axes: Tuple[TileAxis, ...] = ()

    @property
    def is_untiled(self):
        return not self.axes

    @property
    def depth(self):
        return len(self.axes)

    @property
    def tile_count(self):
        return math.prod(a.count for a in self.axes)

    @property
    def level_counts(self):
        return tuple(a.count for a in self.axes)

    @property
    def output_tile_count(self):
        return math.prod(a.count for a in self.axes if not a.is_reduction)

    @property
    def is_clean(self):
        return not any(a.is_reduction for a in self.axes)

    @property
    def label(self):
        if not self.axes:
            return "untiled"
        return "/".join(f"{'~' if a.is_reduction else ''}d{a.host_dim}:{a.count}" for a in self.axes)


@dataclass
class CoreDivision:  # mutable, compares by value, unhashable
    splits: Dict[Any, int] = field(default_factory=dict)
    reduction_syms: FrozenSet[Any] = frozenset()
    tiling: TileSpec = field(default_factory=TileSpec)
    tile_splits: Tuple[Tuple[Any, int], ...] = ()

    @property
    def output_splits(self):
        return {k: v for k, v in self.splits.items() if k not in self.reduction_syms}

    @property
    def reduction_splits(self):
        return {k: v for k, v in self.splits.items() if k in self.reduction_syms}

    @property
    def cores_used(self):
        return math.prod(self.splits.values())

    @property
    def output_partition(self):
        return math.prod(self.output_splits.values())

    @property
    def label(self):
        out = ",".join(f"s{k}/{v}" for k, v in sorted(self.output_splits.items(), key=lambda kv: str(kv[0])))
        red = ",".join(f"~s{k}/{v}" for k, v in sorted(self.reduction_splits.items(), key=lambda kv: str(kv[0])))
        return " ".join(x for x in (out, red) if x) or "whole"


class BufferType(enum.Enum):
    Intermediate = 0
    Input = 1
    Output = 2


def _int_sym(name, **kw):
    return sympy.Symbol(name, integer=True, **kw)


@dataclass
class LifetimeBoundBuffer:
    name: str
    size: int
    uses: List[int]
    first_use_is_read: bool = False
    address: Optional[int] = None
    in_place_parents: List[str] = field(default_factory=list)
    residency_reason: Optional[str] = None
    lifetime_start_override: Optional[int] = None
    lifetime_end_override: Optional[int] = None
    paired_with: List[str] = field(default_factory=list)
    lx_relayout_plans: List[Any] = field(default_factory=list)
    lx_view: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        assert all(b > a for a, b in zip(self.uses, self.uses[1:]))
        if self.uses:
            assert self.lifetime_start_override is None or self.lifetime_start_override <= self.uses[0]
            assert not self.lifetime_end_override or self.lifetime_end_override >= self.uses[-1] + 1

    @property
    def sym_is_lx(self):
        return _int_sym(f"is_lx_{self.name}", nonnegative=True)


@dataclass
class CoreDivisionBuffer(LifetimeBoundBuffer):
    core_divisions: List[CoreDivision] = field(default_factory=list)
    parents: List[str] = field(default_factory=list)
    cd_parent_matches: Dict[str, List[Tuple[int, int]]] = field(default_factory=dict)
    chosen_division: Optional[int] = None
    boundary: BufferType = BufferType.Intermediate
    cd_parent_relayouts: Dict[str, list] = field(default_factory=dict)
    chosen_relayouts: Dict[str, Any] = field(default_factory=dict)
    residency_edges: Dict[str, Any] = field(default_factory=dict)
    division_space: Any = None

    @property
    def sym_core_divs(self):
        keys = {}
        for cd in self.core_divisions:
            for k in cd.splits:
                keys.setdefault(k, _int_sym(f"split_{self.name}_{k}", positive=True))
        return keys

    @property
    def sym_cores(self):
        return sympy.Mul(*self.sym_core_divs.values())

    @property
    def sym_division(self):
        return _int_sym(f"division_{self.name}", nonnegative=True)


@dataclass
class RelayoutCopyBuffer(CoreDivisionBuffer):
    relayout_parent: str = ""
    group: int = -1
    candidates: Tuple[Any, ...] = ()
