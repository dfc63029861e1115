"""Entry point of the NKI tracer (the modules are in ``tracing/``): imported, it re-exports the
tracer's API (``scratchplan.nki.tracer.trace`` & co.); run as a script, it is the command line
the C++ CLI starts: ``python3 tracer.py trace FILE[:FUNCTION] --input q=1x128x4096:bf16 ...``.
"""
import os
import sys
import types

if __name__ == "__main__":
    # Run as a script: reach the tracing package without running scratchplan/__init__.py, which
    # loads the compiled extension the tracer does not need (and the interpreter may not match).
    _here = os.path.dirname(os.path.abspath(__file__))
    del sys.path[0]  # this folder: a kernel's `import tracing` or `import nki` must not find it
    for _name, _path in (("scratchplan", os.path.dirname(_here)), ("scratchplan.nki", _here)):
        _m = types.ModuleType(_name)
        _m.__path__ = [_path]
        sys.modules[_name] = _m
    from scratchplan.nki.tracing.cli import main
    sys.exit(main(sys.argv[1:]))

from .tracing import TraceError, parse_input, rewrite, stand_ins, trace, trace_file  # noqa: E402

__all__ = ["TraceError", "trace", "trace_file", "rewrite", "parse_input", "stand_ins"]
