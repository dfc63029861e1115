"""scratchplan: plans the on-chip memory of ML accelerators.

A Python front end to the scratchplan C++ engines (the library behind the ``scratchplan`` CLI).
Every CLI verb has a function with the same options as keyword arguments and the same defaults;
inputs are dicts in the documented JSON formats, paths, or numpy arrays; results are typed
objects with ``to_dict()`` (equal to the CLI's JSON), ``to_json()``, ``svg()`` and, where the
CLI has ``--report``, ``report()``. Bad input raises :class:`BadInput` (a ``ValueError``) with
the CLI's one-line message. See docs/python.md.
"""
from __future__ import annotations

from . import _core
from ._common import BadInput
from . import alloc, layout, lx, mlsys, nki, program, spyre, workdiv
from .sweep import sweep

__all__ = ["BadInput", "alloc", "layout", "lx", "mlsys", "nki", "program", "spyre", "sweep", "torch", "workdiv"]


def __getattr__(name: str):
    # scratchplan.torch imports PyTorch (seconds): loaded on first use only.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'scratchplan' has no attribute {name!r}")
__version__ = "0.1.0"
