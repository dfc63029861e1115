"""Buffer allocation: scratchpad offsets for buffers with lifetimes (the ``alloc`` verb; docs/alloc.md).

Arrays go in and come out as numpy arrays (int64) without a Python object per buffer.
Lifetimes are half-open: buffer i is live at ticks ``starts[i] <= t < ends[i]``.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

from . import _core
from ._common import BadInput, Result, doc, exact_int, flag

__all__ = ["AllocResult", "pack", "select", "alloc", "generate_stream", "SOLVERS"]

SOLVERS = ("greedy", "firstfit", "bestfit", "best-of-fits", "greedy-by-size", "sweep", "annealing", "exact", "auto")


class AllocResult(Result):
    """A validated allocation. ``offsets[i]`` is buffer i's address, -1 when spilled (select).
    ``to_dict()`` equals the JSON ``scratchplan alloc -o plan.json`` writes."""

    __slots__ = ("_offsets",)

    def __init__(self, r: Any) -> None:
        super().__init__(r)
        self._offsets = None

    @property
    def offsets(self) -> np.ndarray:
        """int64 array, one address per buffer (-1 = spilled)."""
        if self._offsets is None:
            self._offsets = self._r.offsets
            self._offsets.flags.writeable = False
        return self._offsets

    @property
    def height(self) -> int:
        """Highest placed offset + size."""
        return self._r.height

    @property
    def lower_bound(self) -> int:
        """pack: proven height lower bound; select: proven spill-cost lower bound."""
        return self._r.lower_bound

    @property
    def proven(self) -> bool:
        """The objective value equals a proven bound: the plan is optimal."""
        return self._r.proven

    @property
    def feasible(self) -> bool:
        """pack: every buffer placed within the capacity."""
        return self._r.feasible

    @property
    def spill_cost(self) -> int:
        """select: total spill cost of the spilled buffers."""
        return self._r.spill_cost

    @property
    def spilled(self) -> np.ndarray:
        """Boolean mask of spilled buffers."""
        return self.offsets < 0

    @property
    def solver(self) -> str:
        """The solver that produced the plan."""
        return self._r.solver

    @property
    def objective(self) -> str:
        """``"pack"``, ``"pack-min"`` (height minimized) or ``"select"``: the JSON's objective."""
        return self._r.objective

    @property
    def seconds(self) -> float:
        """Solver wall time (what the CLI prints as ``time:``)."""
        return self._r.seconds

    @property
    def capacity(self) -> Optional[int]:
        """The capacity in bytes; None when none was given (``null`` in the JSON)."""
        return self._r.capacity

    def to_csv(self) -> str:
        """MiniMalloc CSV with an offset column (empty = spilled)."""
        return self._r.to_csv()

    def __repr__(self) -> str:
        # The bound is on the objective (height or spill cost): say which, as the CLI's summary does.
        proven = ", proven" if self.proven else ""
        if self.objective == "select":
            what = (f"spill cost {self.spill_cost} ({int(self.spilled.sum())} spilled), "
                    f"lower bound on the spill cost {self.lower_bound}{proven}, height {self.height}")
        else:
            what = f"height {self.height}, lower bound on the height {self.lower_bound}{proven}"
        return f"<scratchplan.alloc.AllocResult {len(self.offsets)} buffers, {what}, solver {self.solver}>"


def _ints(x: Any, what: str, n: Optional[int] = None) -> np.ndarray:
    """A 1-d int64 array of integers. An integer ndarray is used as is; a sequence is read value
    by value (``exact_int``: sympy integers pass, a float, string or bool never does, where
    ``np.asarray`` would turn ``[100, True]`` into integers)."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu":
        a = x
    else:
        if isinstance(x, (str, bytes)) or np.isscalar(x):
            raise BadInput(f"{what}: expected a 1-d array of integers, got {type(x).__name__}")
        if isinstance(x, np.ndarray):
            if x.dtype != object:
                raise BadInput(f"{what}: expected integers, got dtype {x.dtype}")
            if x.ndim != 1:
                raise BadInput(f"{what}: expected a 1-d array, got {x.ndim} dimensions")
        try:
            values = list(x)
        except TypeError:
            raise BadInput(f"{what}: expected a 1-d array of integers, got {type(x).__name__}") from None
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in values):
            raise BadInput(f"{what}: expected a 1-d array, got nested sequences")
        ints = [exact_int(v, f"{what}[{i}]") if not isinstance(v, int) or isinstance(v, bool) else v
                for i, v in enumerate(values)]
        try:
            a = np.array(ints, dtype=np.int64)
        except OverflowError:
            raise BadInput(f"{what}: a value does not fit in int64") from None
    if a.ndim != 1:
        raise BadInput(f"{what}: expected a 1-d array, got {a.ndim} dimensions")
    if n is not None and a.shape[0] != n:
        raise BadInput(f"{what}: expected {n} values (as sizes), got {a.shape[0]}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise BadInput(f"{what}: value {int(a.max())} does not fit in int64")
    return np.ascontiguousarray(a, dtype=np.int64)


def _opt(x: Any, what: str, n: int) -> Optional[np.ndarray]:
    if x is None:
        return None
    if not isinstance(x, (list, tuple, np.ndarray)) and np.ndim(x) == 0:  # one value for every buffer
        v = exact_int(x, what)
        if not -2 ** 63 <= v < 2 ** 63:
            raise BadInput(f"{what}: value {v} does not fit in int64")
        return np.full(n, v, dtype=np.int64)
    return _ints(x, what, n)


def _arrays(sizes, starts, ends, alignment, fixed_offsets, spill_costs):
    s = _ints(sizes, "sizes")
    n = s.shape[0]
    return (s, _ints(starts, "starts", n), _ints(ends, "ends", n), _opt(alignment, "alignment", n),
            _opt(fixed_offsets, "fixed_offsets", n), _opt(spill_costs, "spill_costs", n))


def _cap(capacity: Optional[int]) -> int:
    return -1 if capacity is None else flag("--capacity", "bytes", capacity)


def _opts(time_limit, threads, seed, iterations, exact_off):
    """The CLI's flag rules for the options every alloc entry point shares (threads and seed None:
    not given, as without the flag: a seed given to a solver that has none is refused)."""
    return (flag("--time-limit", "seconds", time_limit), None if threads is None else flag("--threads", "count", threads, 1, 256),
            None if seed is None else flag("--seed", "count", seed, 0, 2 ** 63 - 1),
            0 if iterations is None else flag("--iterations", "count", iterations, 1, 2 ** 40),
            [str(t) for t in exact_off])


def pack(sizes: Any, starts: Any, ends: Any, capacity: Optional[int] = None, alignment: Any = None,
         time_limit: float = 10.0, *, fixed_offsets: Any = None, minimize: Optional[bool] = None,
         solver: str = "auto", threads: Optional[int] = None, seed: Optional[int] = None, iterations: Optional[int] = None,
         exact_off: Iterable[str] = ()) -> AllocResult:
    """Places every buffer (``alloc --objective pack``).

    capacity=None minimizes the height (``--minimize`` with no limit); with a capacity the plan
    must fit below it (``minimize=True`` also lowers the height as far as it can). alignment and
    fixed_offsets (-1 = free) are per-buffer arrays or a scalar. threads=None (``--threads``
    unset): one exact-search worker, and a height minimization of 2,000 buffers or more runs its
    multi-start on every hardware thread. Raises BadInput for bad input or when no plan fits
    (the CLI's "infeasible: ..." line).
    """
    cap = _cap(capacity)
    opts = _opts(time_limit, threads, seed, iterations, exact_off)
    arrays = _arrays(sizes, starts, ends, alignment, fixed_offsets, None)
    mini = capacity is None if minimize is None else bool(minimize)
    return AllocResult(_core.alloc_arrays(*arrays, cap, mini, "pack", str(solver), *opts))


def select(sizes: Any, starts: Any, ends: Any, capacity: int, spill_costs: Any = None, alignment: Any = None,
           time_limit: float = 10.0, *, fixed_offsets: Any = None, solver: str = "auto", threads: Optional[int] = None,
           seed: Optional[int] = None, iterations: Optional[int] = None, exact_off: Iterable[str] = ()) -> AllocResult:
    """Places a subset within ``capacity`` minimizing the spill cost of the rest
    (``alloc --objective select``). ``offsets[i] == -1``: spilled. spill_costs=None uses
    torch-spyre's rule (reads + 1) x size."""
    if capacity is None:
        raise BadInput("<arrays>: no capacity (pass capacity=N)")
    cap = _cap(capacity)
    opts = _opts(time_limit, threads, seed, iterations, exact_off)
    arrays = _arrays(sizes, starts, ends, alignment, fixed_offsets, spill_costs)
    return AllocResult(_core.alloc_arrays(*arrays, cap, False, "select", str(solver), *opts))


def alloc(input: Any, capacity: Optional[int] = None, minimize: bool = False, objective: str = "pack",
          solver: str = "auto", time_limit: float = 10.0, threads: Optional[int] = None, seed: Optional[int] = None,
          iterations: Optional[int] = None, exact_off: Iterable[str] = ()) -> AllocResult:
    """The ``alloc`` verb on a problem document: a path (MiniMalloc ``.csv`` or JSON) or a dict
    in the alloc JSON format (docs/alloc.md: in-place parents, spill costs, torch-spyre uses)."""
    cap = _cap(capacity)
    objective = flag("--objective", "enum", objective, words=("pack", "select"))
    opts = _opts(time_limit, threads, seed, iterations, exact_off)
    return AllocResult(_core.alloc_doc(doc(input, "alloc"), cap, bool(minimize), objective, str(solver), *opts))


def generate_stream(n: int, seed: int = 1, per_tick: int = 4):
    """A deterministic synthetic instance (the scale benchmarks' generator, alloc/generate.h):
    ``n`` tensors produced one after another, about ``per_tick`` per tick, mostly short-lived,
    sizes multiples of 64 in [64, 256 KiB]. Returns ``(sizes, starts, ends)`` int64 arrays."""
    return _core.alloc_generate_stream(flag("n", "count", n, 1, 100_000_000), flag("seed", "count", seed, 0, 2 ** 63 - 1),
                                       flag("per_tick", "count", per_tick, 1, 2 ** 31 - 1))
