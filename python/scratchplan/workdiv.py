"""Multi-core work division of a tensor program (the ``divide`` verb; docs/workdiv.md)."""
from __future__ import annotations

import json
from typing import Any

from . import _core
from ._common import doc, flag

__all__ = ["Division", "divide"]


class Division:
    """Splits, per-core spans, candidate menus and layout issues of every op.
    ``to_dict()`` equals ``scratchplan divide --json``."""

    __slots__ = ("_r",)

    def __init__(self, r) -> None:
        self._r = r

    def to_json(self) -> str:
        return self._r.to_json()

    def to_dict(self) -> dict:
        return json.loads(self._r.to_json())

    @property
    def ops(self) -> list:
        """Per op: name, kind, cores, vars (with splits), spans, candidates."""
        return self.to_dict()["ops"]

    @property
    def layout_issues(self) -> list:
        return self.to_dict()["layout_issues"]

    def report(self) -> str:
        """The text ``scratchplan divide`` prints (with ``--candidates`` when asked)."""
        return self._r.report()

    def __repr__(self) -> str:
        return f"<scratchplan.workdiv.Division {len(self.ops)} ops>"


def divide(program: Any, cores: int = 32, candidates: bool = False, span_reduction: bool = True,
           work_distribution: bool = True) -> Division:
    """Divides each op of a program across up to ``cores`` cores (``scratchplan divide``).
    candidates: list the candidate menus in ``report()``. span_reduction / work_distribution
    are the CLI's ``--no-span-reduction`` / ``--no-work-distribution`` switched the other way."""
    from .program import Program
    p = program
    if isinstance(p, Program):
        p = p.to_dict()
    cores = flag("--cores", "count", cores, 1, 32)
    return Division(_core.workdiv_divide(doc(p, "program"), cores, bool(candidates), bool(span_reduction),
                                         bool(work_distribution)))
