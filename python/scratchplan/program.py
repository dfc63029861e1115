"""The tensor program format shared by ``divide`` and ``plan`` (docs/program.md)."""
from __future__ import annotations

import json
from typing import Any, List

from . import _core
from ._common import doc, flag

__all__ = ["Program", "load", "example", "example_names", "synthetic"]


class Program:
    """A validated program. Pass it wherever a program is expected (``lx.plan``, ``workdiv.divide``)."""

    __slots__ = ("_p",)

    def __init__(self, p: Any) -> None:
        self._p = p

    @property
    def name(self) -> str:
        return self._p.name

    @property
    def num_ops(self) -> int:
        return self._p.num_ops

    @property
    def num_tensors(self) -> int:
        return self._p.num_tensors

    def to_dict(self) -> dict:
        """The program in its JSON format (docs/program.md)."""
        return json.loads(self._p.to_json())

    def to_json(self) -> str:
        """The canonical file text (one tensor / one op per line)."""
        return self._p.text()

    def __repr__(self) -> str:
        return f"<scratchplan.program.Program {self.name!r}: {self.num_ops} ops, {self.num_tensors} tensors>"


def load(program: Any) -> Program:
    """Reads and validates a program (dict or path). Raises BadInput with the reader's message."""
    if isinstance(program, Program):
        return program
    return Program(_core.program_load(doc(program, "program")))


def example_names() -> List[str]:
    """Names of the bundled example programs."""
    return list(_core.program_example_names())


def example(name: str) -> Program:
    """A bundled example program by name (see ``example_names()``)."""
    return Program(_core.program_example(str(name)))


def synthetic(num_ops: int, seed: int = 1) -> Program:
    """A synthetic program of ``num_ops`` ops (deterministic for a seed)."""
    return Program(_core.program_synthetic(flag("num_ops", "count", num_ops, 1, 100000),
                                           flag("seed", "count", seed, 0, 2 ** 63 - 1)))
