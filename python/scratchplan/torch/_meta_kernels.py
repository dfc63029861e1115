"""Meta kernels torch 1.13 lacks and the front end needs (registered once, only when missing).

Tracing runs on meta tensors, so an op without a Meta kernel refuses the whole model: S3D and
MViT call ``max_pool3d``. A meta kernel only computes output shapes (here by the pooling formula).
"""
from __future__ import annotations

from typing import List

import torch

_LIBS: List[object] = []  # a Library must stay alive for its kernels to stay registered


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """Output size of a pooling window (PyTorch's formula; ceil_mode drops a last window that
    would start in the right padding)."""
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _triple(v) -> List[int]:
    if isinstance(v, int):
        return [v] * 3
    v = list(v)
    return v * 3 if len(v) == 1 else v


def _max_pool3d_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    k = _triple(kernel_size)
    s = _triple(stride) if stride else k
    p, d = _triple(padding), _triple(dilation)
    out = list(x.shape[:-3]) + [_pool_out(x.shape[-3 + i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    return x.new_empty(out), x.new_empty(out, dtype=torch.int64)


def register() -> None:
    """Registers the missing kernels (idempotent)."""
    if _LIBS:
        return
    lib = torch.library.Library("aten", "IMPL", "Meta")
    _LIBS.append(lib)
    for op, fn in (("max_pool3d_with_indices", _max_pool3d_with_indices),):
        if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", "Meta"):
            lib.impl(op, fn)
