"""LX scratchpad planning of whole programs (the ``plan`` verb; docs/lx.md)."""
from __future__ import annotations

import os
from typing import Any, Union

from . import _core
from .program import Program
from ._common import Result, doc, flag, write_text

__all__ = ["Plan", "plan"]


class Plan(Result):
    """A validated LX plan. ``to_dict()`` equals the JSON ``scratchplan plan -o`` writes."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """Program name."""
        return self._r.name

    @property
    def capacity(self) -> int:
        """Usable LX bytes per core."""
        return self._r.capacity

    @property
    def hbm_bytes(self) -> int:
        """HBM bytes read and written by the plan."""
        return self._r.hbm_bytes

    @property
    def baseline_hbm_bytes(self) -> int:
        """HBM bytes of the all-HBM plan with the same splits."""
        return self._r.baseline_hbm_bytes

    @property
    def lower_bound_hbm_bytes(self) -> int:
        """Proven lower bound on HBM bytes over every split choice."""
        return self._r.lower_bound_hbm_bytes

    @property
    def cores_lower_bound_hbm_bytes(self) -> int:
        """Proven lower bound over the splits that keep each op on this plan's core count."""
        return self._r.cores_lower_bound_hbm_bytes

    @property
    def time_lower_bound_hbm_bytes(self) -> int:
        """Proven lower bound over every split of the plans whose estimated time is at most this one's."""
        return self._r.time_lower_bound_hbm_bytes

    @property
    def split_lower_bound_hbm_bytes(self) -> int:
        """Proven lower bound for this plan's splits."""
        return self._r.split_lower_bound_hbm_bytes

    @property
    def time_s(self) -> float:
        """Roofline time estimate in seconds."""
        return self._r.time_s

    def report(self) -> str:
        """The readable summary ``scratchplan plan --report`` prints."""
        return self._r.report()

    def summary(self) -> str:
        """The one line ``scratchplan plan`` prints without ``--report``."""
        return self._r.summary()

    def to_trace(self, path: "str | os.PathLike[str] | None" = None) -> str:
        """The Chrome trace ``scratchplan plan --trace`` writes (Perfetto, chrome://tracing; also
        written to ``path`` when given): ops on the cores they run on, in microseconds, with their
        HBM bytes, and the LX bytes in use per core."""
        return write_text(self._r.trace(), path)

    def __repr__(self) -> str:
        return f"<scratchplan.lx.Plan {self.summary().strip()}>"


def plan(program: Any, cores: "int | None" = None, hardware: Any = "spyre", time_limit: float = 2.0,
         stage: "int | None" = None, capacity: "int | None" = None, hbm_gbps: "float | None" = None,
         in_place: bool = True, clone_inputs: bool = True, clone_outputs: bool = True,
         eviction: bool = True, reorder: bool = True, coopt: bool = True, layout_inference: bool = True,
         fewer_cores: bool = True) -> Plan:
    """Plans the LX scratchpad of a program (``scratchplan plan``).

    program: dict in the program format (docs/program.md), a path, or a ``program.Program``.
    cores: cores for work division (None: the hardware's maximum). hardware: "spyre", a path or
    a dict. time_limit: seconds of anytime search; a fixed part linear in the program comes on top
    (docs/lx.md, "Time limit"). stage: 1..4 runs only the seed's stage (0: all).
    capacity / hbm_gbps override the hardware. The ``in_place`` ... ``fewer_cores`` switches
    are the CLI's ``--no-*`` flags (fewer_cores: cores means at most; the powers of two below it
    are planned too and the fastest plan kept). Raises BadInput on bad input.
    """
    cores = -1 if cores is None else flag("--cores", "count", cores, 1, 32)
    time_limit = flag("--time-limit", "seconds", time_limit)
    stage = 0 if not stage else flag("--stage", "count", stage, 1, 4)
    capacity = -1 if capacity is None else flag("--capacity", "bytes", capacity)
    hbm_gbps = -1.0 if hbm_gbps is None else flag("--hbm-gbps", "gbps", hbm_gbps)
    hw = _core.Doc("spyre", "", True) if hardware is None else doc(hardware, "hardware")
    if isinstance(program, Program):
        program = program.to_dict()
    return Plan(_core.lx_plan(doc(program, "program"), hw, cores, time_limit, stage, capacity, hbm_gbps,
                              bool(in_place), bool(clone_inputs), bool(clone_outputs), bool(eviction), bool(reorder),
                              bool(coopt), bool(layout_inference), bool(fewer_cores)))
