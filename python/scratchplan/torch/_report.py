"""The mapping report of the PyTorch front end (one row per ATen op) and its error type."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .._common import BadInput


class UnsupportedModel(BadInput):
    """The model cannot be traced or converted; the message names the module path, the model's
    source line and the reason, in one line of at most 200 characters."""


MAX_REFUSAL = 200


def refusal(module: str, where: str, reason: str) -> str:
    """One line: ``module 'encoder.1' at model.py:42: reason`` (cut to MAX_REFUSAL characters)."""
    text = f"module '{module}'" + (f" at {where}" if where else "") + ": " + " ".join(reason.split())
    return text if len(text) <= MAX_REFUSAL else text[:MAX_REFUSAL - 3] + "..."


@dataclass
class Row:
    """One ATen op of the trace and what became of it."""
    node: str                 # FX node name
    target: str               # ATen overload, e.g. "aten.addmm.default"
    module: str               # module path it came from ("" = top level)
    decision: str             # "mapped", "folded" or "opaque"
    reason: str               # how it was mapped / folded, or why it is opaque
    ops: List[str] = field(default_factory=list)  # program ops emitted for it
    compute: bool = True      # does arithmetic (counts toward the mapped fraction)


class Report:
    """The op-by-op mapping report of ``to_program``."""

    def __init__(self, rows: List[Row], trace_seconds: float, convert_seconds: float,
                 specializations: Optional[List[str]] = None) -> None:
        self.rows = rows
        self.trace_seconds = trace_seconds
        self.convert_seconds = convert_seconds
        # One line per value read in Python during the trace (the program is specialized to it).
        self.specializations = list(specializations or [])
        # Constant graph inputs computed when the model is loaded: tensor -> (FX node, output index).
        self.constants: Dict[str, tuple] = {}

    @property
    def counts(self) -> Dict[str, int]:
        c = {"mapped": 0, "folded": 0, "opaque": 0}
        for r in self.rows:
            c[r.decision] += 1
        return c

    @property
    def compute_ops(self) -> int:
        return sum(1 for r in self.rows if r.compute)

    @property
    def mapped_fraction(self) -> float:
        """Mapped compute ops over compute ops (folded views and copies are not compute)."""
        n = self.compute_ops
        return 1.0 if n == 0 else sum(1 for r in self.rows if r.compute and r.decision == "mapped") / n

    def opaque(self) -> List[Row]:
        return [r for r in self.rows if r.decision == "opaque"]

    def text(self) -> str:
        c = self.counts
        lines = [f"{len(self.rows)} ATen ops: {c['mapped']} mapped, {c['folded']} folded, {c['opaque']} opaque; "
                 f"{100 * self.mapped_fraction:.1f}% of {self.compute_ops} compute ops mapped"]
        for sline in self.specializations:
            lines.append(f"  specialized: {sline}")
        for r in self.rows:
            lines.append(f"  {r.decision:6} {r.target:40} {r.node:28} {r.module or '-':30} {r.reason}"
                         + (f" -> {', '.join(r.ops)}" if r.ops else ""))
        return "\n".join(lines)

    def to_list(self) -> List[dict]:
        """The rows as dicts (node, target, module, decision, reason, ops, compute)."""
        return [dict(node=r.node, target=r.target, module=r.module, decision=r.decision, reason=r.reason,
                     ops=list(r.ops), compute=r.compute) for r in self.rows]

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        c = self.counts
        return f"<scratchplan.torch.Report mapped={c['mapped']} folded={c['folded']} opaque={c['opaque']}>"
