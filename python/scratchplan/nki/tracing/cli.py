"""Command line of the tracer (run by the C++ CLI). The result travels on its own channel, a
file descriptor the CLI opens (`--result-fd N`), which the kernel's code does not know: the first
line is `ok` followed by the JSON document, or `error` followed by the one-line message (exit 2).
Run by hand (no --result-fd) the document goes to stdout and the error to stderr. Either way
whatever the kernel prints (print(), logging to stdout) goes to stderr."""
from __future__ import annotations

import json
import os
import re
import sys

from .context import TraceError
from . import launch as _launch
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
    ap.add_argument("--hardware-json", default=None)
    ap.add_argument("--hardware-defaults", default=None)  # the C++ default description (JSON), never embedded
    ap.add_argument("--lnc", type=int, default=1)
    ap.add_argument("--stated-limit", type=float, default=None)  # the user's --time-limit, for the message
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--result-fd", type=int, default=None)
    # The result channel: the given descriptor (kept from the kernel: not inherited by children),
    # else the original stdout; fd 1 becomes stderr so the kernel's prints cannot mix in.
    fd = None
    for i, x in enumerate(argv):
        if x == "--result-fd" and i + 1 < len(argv) and argv[i + 1].isdigit():
            fd = int(argv[i + 1])
        elif x.startswith("--result-fd="):
            fd = int(x.split("=", 1)[1]) if x.split("=", 1)[1].isdigit() else None
    try:
        out_fd = fd if fd is not None else os.dup(1)
        os.set_inheritable(out_fd, False)
        out = os.fdopen(out_fd, "w", encoding="utf-8")
    except OSError as e:
        sys.stderr.write(f"tracer: cannot open the result channel: {e.strerror}\n")
        return 1
    sys.stdout.flush()
    os.dup2(2, 1)

    def reply(kind, text):
        if fd is None:  # run by hand: the result on stdout, the error line on stderr
            (out if kind == "ok" else sys.stderr).write(text)
        else:
            out.write(kind + "\n" + text)
        out.flush()

    try:
        a = ap.parse_args(argv)
        grid = None
        if a.grid:
            if not re.fullmatch(r"[0-9]+(x[0-9]+)*", a.grid):
                raise TraceError(f"--grid {a.grid!r}: expected G0[xG1...]")
            grid = tuple(int(x) for x in a.grid.split("x"))
        if a.hardware_json:
            a.hardware = a.hardware_json
        if a.hardware_defaults:
            try:
                _launch.HARDWARE_DEFAULTS = json.loads(a.hardware_defaults)
            except ValueError as e:
                raise TraceError(f"--hardware-defaults: {e}") from None
        tl = a.time_limit if a.time_limit is None or a.time_limit > 0 else 1e-3
        if a.verb == "trace":
            k = trace_file(a.kernel, a.input, grid=grid, hardware=a.hardware, args=a.arg, time_limit=tl, lnc=a.lnc,
                           core_id=a.core, stated_limit=a.stated_limit)
            reply("ok", json.dumps(k, separators=(",", ":")) + "\n")
        else:
            with open(a.planned, encoding="utf-8") as f:
                planned = json.load(f)
            reply("ok", rewrite(a.kernel, a.input, planned, grid=grid, hardware=a.hardware, args=a.arg, time_limit=tl))
        return 0
    except TraceError as e:
        reply("error", (str(e).splitlines() or ["the tracer rejected the kernel"])[0] + "\n")
        return 2
    except (KeyboardInterrupt, GeneratorExit) as e:  # raised by the kernel's code (a real Ctrl-C ends the CLI too)
        m = re.fullmatch(r"(.*?\.py)(?::\w+)?", argv[1] if len(argv) > 1 else "")
        path = os.path.abspath(m.group(1)) if m else ""
        from .launch import _kernel_line
        reply("error", f"{os.path.basename(path) or 'tracer'}:{_kernel_line(e.__traceback__, path)}: "
                       f"the kernel raised {type(e).__name__}\n")
        return 2
    except Exception as e:  # a bug of the tracer itself: one line, exit 1 (internal error)
        reply("error", f"tracer internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}\n")
        return 1
