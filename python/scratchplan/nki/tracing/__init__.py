"""The tracer of real NKI kernels: runs a kernel's Python source against stand-ins of the NKI
modules and records the kernel model of docs/nki.md (tensors, allocations, a loop nest of
instructions). One module per concept, in dependency order (no module imports one below it;
``scripts/check_import_cycles.py`` checks the package has no import cycle):

- ``context``: the state of the running trace, source locations, ``TraceError``;
- ``dtypes``; ``symbolic``: loop indices, aranges, affine expressions and predicates;
- ``api_table``: the instruction API as data (one row per call); ``costs``: cycle estimates;
- ``tensors``: tensors, views, pending results; ``instructions``: instruction records;
- ``declarations``: ``nl.ndarray`` & co. and allocation functions;
- ``calls``: the instruction calls generated from the table, and the generic model of the rest;
- ``loops``: loops and branches; ``modules``: the stand-in ``neuronxcc.nki``/``nki`` modules;
- ``launch``: loading a kernel file, binding its arguments, writing the kernel JSON;
- ``rewrite``: ``--rewrite``; ``cli``: the command line the C++ CLI runs.

Pure Python: it imports nothing of the compiled extension, so the CLI runs it as a script
(``tracer.py``) under any interpreter with numpy.
"""
from .context import TraceError
from .launch import parse_arg, parse_input, stand_ins, trace, trace_file
from .rewrite import rewrite

__all__ = ["TraceError", "trace", "trace_file", "rewrite", "parse_input", "parse_arg", "stand_ins"]
