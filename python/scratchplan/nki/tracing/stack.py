"""The stack allocator of `@nki.compiler.enable_stack_allocator` (API.md §5): automatic SBUF/PSUM
tensors get addresses on per-scope frames, so the kernel model is fully placed and the checker
compares them with the explicitly allocated tensors by lifetime (the two may share addresses)."""
from __future__ import annotations

import math

from . import context as _ctx
from .context import _fail

class StackAllocator:
    """Frames of [next SBUF byte, next PSUM bank]: the kernel frame starts at byte 0 and bank 0;
    a loop pushes a frame at its parent's next free address and pops it on exit, so sibling
    loops reuse the same addresses. Only loops open frames: helper functions are inlined by the
    trace and return the tensors they declare, which must outlive them."""

    def __init__(self, hw):
        self.usable = hw["sbuf_partition_bytes"] - hw["sbuf_reserved_bytes"]
        self.align = max(1, int(hw["sbuf_min_align"]))
        self.banks = int(hw["psum_banks"])
        self.bank_bytes = int(hw["psum_bank_bytes"])
        # The allocator's hidden (128, 1) fp32 zero tile (activation biases) heads the kernel frame.
        self.frames = [[self._round(4), 0, [("the hidden bias tile", self._round(4))]]]

    def _round(self, n):
        return -(-n // self.align) * self.align

    def push(self):
        top = self.frames[-1]
        self.frames.append([top[0], top[1], []])  # [next SBUF byte, next PSUM bank, (name, bytes) placed here]

    def _on_stack(self, fi):
        """The SBUF tensors of frames 0..fi, largest first: what an overflow message shows."""
        placed = sorted((x for f in self.frames[:fi + 1] for x in f[2]), key=lambda x: -x[1])
        text = ", ".join(f"{n} {b}" for n, b in placed[:6])
        return text + (f" and {len(placed) - 6} more" if len(placed) > 6 else "")

    def pop(self):
        self.frames.pop()

    def place(self, t, depth=None):
        """Gives automatic tensor `t` its frame addresses (a table with one tile per logical block)
        in the frame at `depth` (default: the innermost); the frames opened since start above it."""
        n = max(1, math.prod(t.blocks))
        fi = depth - 1 if depth is not None and 0 < depth <= len(self.frames) else len(self.frames) - 1
        top = self.frames[fi]
        if t.buffer == "psum":  # one whole bank per logical block
            if top[1] + n > self.banks:
                _fail(f"stack overflow on psum: tensor {t.name} needs {n} bank(s) at bank {top[1]}, "
                      f"{self.banks} banks in all")
            t.table = [[0, (top[1] + b) * self.bank_bytes] for b in range(n)]
            top[1] += n
        else:
            fb = t.fbytes()
            size = self._round(n * fb)
            if top[0] + size > self.usable:
                _fail(f"stack overflow on sbuf: tensor {t.name} needs {size} bytes per partition at byte {top[0]}, "
                      f"{self.usable} usable (on the stack: {self._on_stack(fi)})")
            t.table = [[0, top[0] + b * fb] for b in range(n)]
            top[0] += size
            top[2].append((t.name, size))
        for inner in self.frames[fi + 1:]:
            inner[0], inner[1] = max(inner[0], top[0]), max(inner[1], top[1])
        t.alloc = type(t.alloc)(t.buffer, "stack")


def on_loop_enter():
    if _ctx.ST is not None and _ctx.ST.stack_alloc is not None:
        _ctx.ST.stack_alloc.push()


def on_loop_exit():
    if _ctx.ST is not None and _ctx.ST.stack_alloc is not None:
        _ctx.ST.stack_alloc.pop()
