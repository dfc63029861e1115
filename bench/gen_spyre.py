"""Generator of torch-spyre September-style solver inputs (NOTES 1.14's data model), for the
property test python/tests/test_spyre_generated.py and the benchmark table bench/tables_spyre.py.

The dataclasses (python/tests/spyre_model.py) have torch-spyre's field names, defaults and properties (written from the
contract, nothing of scratchplan in them). ``generate(seed, n, mode)`` builds a random graph of
``n`` division-carrying buffers: random lifetimes, menus of 1-3 ``CoreDivision``s over output
and reduction keys (strides, strings, sympy symbols), parents with random ``cd_parent_matches``,
``boundary``, an ``lx_view`` on every buffer, some barred buffers, and by mode:

- ``"august"``: untiled (``TileSpec()``), no cost expression, no relayouts (both contracts apply);
- ``"tiled"``: some candidates carry a coarse tiling (``TileSpec`` of ``TileAxis``), ladder;
- ``"cost"``: a cost expression (residency weights, reciprocal core counts, KroneckerDelta
  penalties) and relayout copies (``RelayoutCopyBuffer``, ``RelayoutCandidate``s in the copy
  and in the consumers' ``cd_parent_relayouts``, ``RelayoutCharge`` terms).

Deterministic in (seed, n, mode). Returns (buffers, capacity, alignment, cost_expr or None).
"""
from __future__ import annotations

import math
import os
import random
import sys
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import sympy

MODES = ("august", "tiled", "cost")
RELAYOUT_PREFIX = "__spyre_lx_relayout__:"


# torch-spyre's dataclasses: the test suite's model of them (python/tests/spyre_model.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python", "tests"))
from spyre_model import TileAxis, TileSpec, CoreDivision, BufferType, _int_sym, LifetimeBoundBuffer, CoreDivisionBuffer, RelayoutCopyBuffer  # noqa: E402,F401


@dataclass(frozen=True)
class RelayoutCandidate:
    parent: str
    consumer: str
    source_division: int
    consumer_division: int
    group: int
    source_view: Any = None
    destination_view: Any = None
    cost_ns: float = 0.0
    source_footprint: int = 0
    destination_footprint: int = 0


class RelayoutCharge(sympy.Function):
    """is_lx * p[division], 0 past the table; folds once is_lx is 0 or both are numbers."""

    @classmethod
    def eval(cls, is_lx, division, *prices):
        if is_lx == 0:
            return sympy.Integer(0)
        if is_lx.is_Number and division.is_Number:
            k = int(division)
            return is_lx * prices[k] if 0 <= k < len(prices) else sympy.Integer(0)
        return None


_KEYS = [256, 128, "h", "q", sympy.Symbol("x"), sympy.Symbol("r")]


def _menu(rng: random.Random, tiled: bool) -> List[CoreDivision]:
    menu = []
    for _ in range(rng.randint(1, 3)):
        keys = rng.sample(_KEYS, rng.randint(0, 2))
        splits = {k: rng.choice([1, 2, 4, 8]) for k in keys}
        red = frozenset(k for k in keys if str(k) == "r" or (k == "q" and rng.random() < 0.3))
        tiling = TileSpec()
        if tiled and rng.random() < 0.5:
            tiling = TileSpec(tuple(TileAxis(rng.randint(0, 1), rng.choice([2, 4]), rng.random() < 0.2)
                                    for _ in range(rng.randint(1, 2))))
        menu.append(CoreDivision(splits, red, tiling))
    return menu


def generate(seed: int, n: int, mode: str):
    assert mode in MODES
    rng = random.Random(f"{seed}/{n}/{mode}")
    alignment = rng.choice([1, 64, 128])
    bufs: List[CoreDivisionBuffer] = []
    for i in range(n):
        start = i
        uses = sorted({start} | {start + rng.randint(1, 6) for _ in range(rng.randint(1, 3))})
        menu = _menu(rng, mode == "tiled")
        parents = [f"b{j}" for j in range(max(0, i - 4), i) if rng.random() < 0.35]
        matches = {}
        for p in parents:
            pm = bufs[int(p[1:])].core_divisions
            pairs = [(a, c) for a in range(len(pm)) for c in range(len(menu)) if rng.random() < 0.5]
            matches[p] = pairs if pairs or rng.random() < 0.5 else [(0, 0)]
        boundary = rng.choice([BufferType.Intermediate] * 6 + [BufferType.Input, BufferType.Output])
        b = CoreDivisionBuffer(f"b{i}", rng.choice([256, 1024, 4096, 16384, 65536]), uses,
                               first_use_is_read=boundary == BufferType.Input,
                               residency_reason="op not allowed" if rng.random() < 0.06 else None,
                               lx_view=("view", i), core_divisions=menu, parents=parents, cd_parent_matches=matches,
                               boundary=boundary)
        bufs.append(b)
    last = max(u for b in bufs for u in b.uses)
    cost = None
    if mode == "cost":
        terms = []
        for b in bufs:
            terms.append(rng.randint(0, 3) * b.size // 64 * (1 - b.sym_is_lx))
            if b.sym_core_divs and rng.random() < 0.5:
                terms.append(rng.randint(1, 9) * 1000 / b.sym_cores)
            if len(b.core_divisions) > 1 and rng.random() < 0.3:
                terms.append(rng.randint(1, 500) * sympy.KroneckerDelta(b.sym_division, 0))
        copies = []
        for c in bufs:  # a copy per mismatched edge, sometimes
            for p in c.parents:
                if rng.random() > 0.3:
                    continue
                src = bufs[int(p[1:])]
                g = len(copies)
                prices = [rng.choice([None, rng.randint(0, 400)]) for _ in src.core_divisions]
                cands = tuple(RelayoutCandidate(p, c.name, sd, cd, g, cost_ns=pr)
                              for sd, pr in enumerate(prices) if pr is not None
                              for cd in range(len(c.core_divisions)) if (sd, cd) not in c.cd_parent_matches[p])
                if not cands:
                    continue
                c.cd_parent_relayouts.setdefault(p, []).extend(cands)
                x = RelayoutCopyBuffer(f"{RELAYOUT_PREFIX}copy:{p}:g{g}", src.size, [c.uses[0]],
                                       core_divisions=[CoreDivision({"relayout_copy": 2})], relayout_parent=p,
                                       group=g, candidates=cands, lx_view=("copy", g))
                copies.append(x)
                terms.append(RelayoutCharge(x.sym_is_lx, src.sym_division, *[pr or 0 for pr in prices]))
        bufs += copies
        cost = sympy.Add(*terms)
    peak = sum(b.size for b in bufs) // max(1, last)
    capacity = max(alignment, rng.choice([1, 2, 4]) * peak // 2 // alignment * alignment)
    return bufs, capacity, alignment, cost
