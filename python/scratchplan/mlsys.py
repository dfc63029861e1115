"""MLSys 2026 contest problems: exact evaluator and scheduler (``evaluate``, ``schedule``;
docs/scheduler.md). Problems and solutions are dicts in the contest's JSON format or paths."""
from __future__ import annotations

import json
import os
from typing import Any, List, Optional

from . import _core
from ._common import BadInput, doc, flag, write_text

__all__ = ["Evaluation", "Schedule", "evaluate", "schedule"]


class Evaluation:
    """Score of a schedule. ``to_dict()`` equals ``scratchplan evaluate --json``."""

    __slots__ = ("_r",)

    def __init__(self, r) -> None:
        self._r = r

    @property
    def valid(self) -> bool:
        return self._r.valid

    @property
    def total(self) -> float:
        """Total latency (sum over subgraphs)."""
        return self._r.total

    @property
    def errors(self) -> List[str]:
        return list(self._r.errors)

    @property
    def warnings(self) -> List[str]:
        return list(self._r.warnings)

    @property
    def reported_mismatches(self) -> List[int]:
        """Subgraphs whose reported latency differs from the recomputed one."""
        return list(self._r.reported_mismatches)

    def to_json(self) -> str:
        return self._r.to_json()

    def to_dict(self) -> dict:
        return json.loads(self._r.to_json())

    def report(self) -> str:
        """The text ``scratchplan evaluate`` prints."""
        return self._r.report()

    def to_trace(self, path: "str | os.PathLike[str] | None" = None) -> str:
        """The Chrome trace ``scratchplan evaluate --trace`` writes (also written to ``path`` when
        given): subgraphs with their compute and memory time, and the working set."""
        return write_text(self._r.trace(), path)

    def __repr__(self) -> str:
        return f"<scratchplan.mlsys.Evaluation valid={self.valid} total={self.total:.6f}>"


class Schedule:
    """A validated schedule. ``to_dict()`` equals the solution ``scratchplan schedule -o`` writes."""

    __slots__ = ("_r",)

    def __init__(self, r) -> None:
        self._r = r

    @property
    def total(self) -> float:
        """Evaluator total latency of the solution."""
        return self._r.total

    @property
    def lower_bound(self) -> float:
        return self._r.lower_bound

    @property
    def iterations(self) -> int:
        return self._r.iterations

    def to_json(self) -> str:
        return self._r.to_json()

    def to_dict(self) -> dict:
        return json.loads(self._r.to_json())

    def to_trace(self, path: "str | os.PathLike[str] | None" = None) -> str:
        """The Chrome trace ``scratchplan schedule --trace`` writes (also written to ``path`` when
        given): subgraphs with their compute and memory time, and the working set."""
        return write_text(self._r.trace(), path)

    def __repr__(self) -> str:
        return f"<scratchplan.mlsys.Schedule total={self.total:.6f} (lower bound {self.lower_bound:.6f})>"


def evaluate(problem: Any, solution: Any, verbose: bool = False, check_reported: bool = False,
             mm_compute: str = "opk", allow_super_native: bool = False, spill_ephemeral: bool = False,
             resident_only_if_consumed: bool = False, strict_ephemeral: bool = False,
             no_reuse_for_null_traversal: bool = False) -> Evaluation:
    """Scores a schedule exactly (``scratchplan evaluate``). An invalid schedule is a result with
    ``valid == False`` (the CLI exits 2); malformed input raises BadInput."""
    if isinstance(solution, Schedule):
        solution = solution.to_dict()
    mm_compute = flag("--mm-compute", "enum", mm_compute, words=("opk", "native"))
    return Evaluation(_core.mlsys_evaluate(doc(problem, "problem"), doc(solution, "solution"), bool(verbose),
                                           bool(check_reported), mm_compute, bool(allow_super_native),
                                           bool(spill_ephemeral), bool(resident_only_if_consumed),
                                           bool(strict_ephemeral), bool(no_reuse_for_null_traversal)))


def schedule(problem: Any, time_limit: Optional[float] = None, iterations: Optional[int] = None,
             threads: Optional[int] = None,
             seed: int = 1, max_segment_ops: int = 12, mm_compute: str = "opk") -> Schedule:
    """Plans a schedule (``scratchplan schedule``). time_limit=None and iterations=None: a budget
    from the problem size, as the CLI; iterations (a move budget, deterministic) excludes
    time_limit. threads=None: all hardware threads. Anytime and validated; Ctrl-C stops it
    (KeyboardInterrupt)."""
    if time_limit is not None and iterations is not None:
        raise BadInput("time_limit excludes iterations")
    tl = -1.0 if time_limit is None else flag("--time-limit", "seconds", time_limit)
    it = -1 if iterations is None else flag("--iterations", "count", iterations, 0, 2 ** 40)
    th = 0 if threads is None else flag("--threads", "count", threads, 1, 256)
    sd = flag("--seed", "count", seed, 0, 2 ** 63 - 1)
    ms = flag("--max-segment-ops", "count", max_segment_ops, 1, 4096)
    mm = flag("--mm-compute", "enum", mm_compute, words=("opk", "native"))
    return Schedule(_core.mlsys_schedule(doc(problem, "problem"), tl, it, th, sd, ms, mm))
