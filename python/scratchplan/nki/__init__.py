"""NeuronCore SBUF/PSUM kernels (``nki check`` / ``nki plan``; docs/nki.md).

``kernel`` arguments are dicts in the kernel JSON format of docs/nki.md, paths, or objects
with ``to_dict()``; ``hardware`` (optional) likewise. :func:`trace` turns a real NKI kernel (its
Python source) into that format: ``nki.check(nki.trace(my_kernel, ((1, 128, 4096), "bf16")))``.
"""
from __future__ import annotations

import json
import os
from typing import Any

from .. import _core
from .._common import BadInput, Result, doc, flag, write_text
from .tracer import TraceError, rewrite, stand_ins, trace

# The cycle model of the default core: the C++ hardware description's (the tracer reads the same).
DEFAULT_CYCLE_MODEL = _core.nki_default_cycle_model()

__all__ = ["CheckReport", "PlanResult", "check", "plan", "trace", "rewrite", "cores_svg", "cores_trace", "stand_ins",
           "TraceError", "DEFAULT_CYCLE_MODEL"]


class _Traced(Result):
    """A result with a timeline: ``to_trace()`` is what ``--trace`` writes."""

    __slots__ = ()

    def to_trace(self, path: "str | os.PathLike[str] | None" = None) -> str:
        """The Chrome trace event JSON of ``--trace`` (Perfetto, chrome://tracing): a track per
        engine queue, SBUF/PSUM bytes per partition as counters; also written to ``path`` when
        given."""
        return write_text(self._r.to_trace(), path)


class CheckReport(_Traced):
    """Result of ``nki check``: ``to_dict()`` equals ``scratchplan nki check --json``."""

    __slots__ = ()

    @property
    def clean(self) -> bool:
        """No allocation violation."""
        return self._r.clean

    @property
    def distinct_violations(self) -> int:
        return self._r.distinct_violations

    @property
    def violations(self) -> list:
        """Violations as dicts (kind, tensor, block, instruction, iteration, occurrences, message)."""
        return self.to_dict()["violations"]

    def placements(self) -> dict:
        """Per directly allocated tensor: ``[(start_partition, byte_addr), ...]`` for every logical
        block (row-major), as the checker evaluated the allocation."""
        return self._r.placements()

    def report(self) -> str:
        """The text ``scratchplan nki check`` prints."""
        return self._r.report()

    def __repr__(self) -> str:
        return f"<scratchplan.nki.CheckReport clean={self.clean} violations={self.distinct_violations}>"


class PlanResult(_Traced):
    """Result of ``nki plan``: ``to_dict()`` equals ``scratchplan nki plan --json``."""

    __slots__ = ()

    @property
    def simulated_cycles(self) -> int:
        return self._r.simulated_cycles

    @property
    def single_buffered_cycles(self) -> int:
        return self._r.single_buffered_cycles

    def kernel(self) -> dict:
        """The kernel with every SBUF/PSUM tensor directly allocated (what ``-o`` writes)."""
        return json.loads(self._r.kernel_json())

    def report(self) -> str:
        """The text ``scratchplan nki plan`` prints."""
        return self._r.report()

    def __repr__(self) -> str:
        return f"<scratchplan.nki.PlanResult {self.simulated_cycles} cycles (single-buffered {self.single_buffered_cycles})>"


def cores_svg(results: "list", path: "str | os.PathLike[str] | None" = None) -> str:
    """One picture of a launch over logical cores (``--lnc N``): a section per core, in the order
    given. ``results``: every core's CheckReport, or every core's PlanResult (their timelines on
    one time scale)."""
    return write_text(_core.nki_cores_svg(_core_results(results)), path)


def cores_trace(results: "list", path: "str | os.PathLike[str] | None" = None) -> str:
    """The timelines of a launch over logical cores: a process per core, in the order given."""
    return write_text(_core.nki_cores_trace(_core_results(results)), path)


def _core_results(results):
    rs = list(results)
    if not rs or not (all(isinstance(r, CheckReport) for r in rs) or all(isinstance(r, PlanResult) for r in rs)):
        raise BadInput("results: expected a non-empty list of CheckReport, or of PlanResult, one per logical core")
    return [r._r for r in rs]


def _hw(hardware: Any):
    return None if hardware is None else doc(hardware, "hardware")


def check(kernel: Any, hardware: Any = None) -> CheckReport:
    """Finds every SBUF/PSUM allocation violation by exact simulation (``nki check``).
    A kernel with violations is a result with ``clean == False`` (the CLI exits 2); malformed
    input raises BadInput."""
    return CheckReport(_core.nki_check(doc(kernel, "kernel"), _hw(hardware)))


def plan(kernel: Any, hardware: Any = None, max_buffers: "int | None" = None, single: bool = False,
         in_order: bool = False, keep_direct: bool = False, time_limit: float = 10.0) -> PlanResult:
    """Chooses buffer counts and addresses maximizing engine overlap (``nki plan``).
    max_buffers: most physical tiles per tensor to try (None: 8, as the CLI); single: keep every
    tensor at its smallest legal tile count (excludes max_buffers); in_order: engine queues in
    program order; keep_direct: plan only the automatically allocated tensors."""
    if single and max_buffers is not None:
        raise BadInput("max_buffers excludes single")
    mb = 8 if max_buffers is None else flag("--max-buffers", "count", max_buffers, 1, 1024)
    tl = flag("--time-limit", "seconds", time_limit)
    return PlanResult(_core.nki_plan(doc(kernel, "kernel"), _hw(hardware), mb, bool(single), bool(in_order),
                                     bool(keep_direct), tl))
