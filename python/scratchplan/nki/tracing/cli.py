"""Command line of the tracer (run by the C++ CLI): one JSON document on stdout, or one error
line on stderr and exit 2."""
from __future__ import annotations

import json
import os
import re
import sys

from . import context as _ctx
from .context import TRACE_SECONDS, TraceError
from .launch import trace_file
from .rewrite import rewrite


def main(argv):
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message):
            raise TraceError(f"tracer: {message}")

    ap = _Parser(prog="tracer.py")
    ap.add_argument("verb", choices=["trace", "rewrite"])
    ap.add_argument("kernel")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--arg", action="append", default=[])
    ap.add_argument("--grid", default=None)
    ap.add_argument("--hardware", default=None)
    ap.add_argument("--planned", default=None)
    import signal

    def _timeout(signum, frame):
        line = frame.f_lineno if frame and os.path.abspath(frame.f_code.co_filename) == (_ctx.ST.path if _ctx.ST else "") else 0
        raise _ctx.Timeout(f"{_ctx.ST.label if _ctx.ST else 'tracer'}:{line}: tracing took longer than {TRACE_SECONDS} s "
                         "(a loop that never ends?)")

    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(TRACE_SECONDS)
    try:
        a = ap.parse_args(argv)
        grid = None
        if a.grid:
            if not re.fullmatch(r"[0-9]+(x[0-9]+)*", a.grid):
                raise TraceError(f"--grid {a.grid!r}: expected G0[xG1...]")
            grid = tuple(int(x) for x in a.grid.split("x"))
        if a.verb == "trace":
            k = trace_file(a.kernel, a.input, grid=grid, hardware=a.hardware, args=a.arg)
            sys.stdout.write(json.dumps(k, separators=(",", ":")) + "\n")
        else:
            with open(a.planned, encoding="utf-8") as f:
                planned = json.load(f)
            sys.stdout.write(rewrite(a.kernel, a.input, planned, grid=grid, hardware=a.hardware, args=a.arg))
        return 0
    except TraceError as e:
        sys.stderr.write(str(e).splitlines()[0] + "\n")
        return 2
    except Exception as e:  # a bug of the tracer itself: one line, exit 1 (internal error)
        sys.stderr.write(f"tracer internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}\n")
        return 1

