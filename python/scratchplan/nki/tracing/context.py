"""Where a trace is: the state one trace records, the kernel source line being executed, and
the one-line `file:line: what` errors every part of the tracer raises."""
from __future__ import annotations

import os
import re
import sys



try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy ships with every supported setup
    np = None

try:  # inside the package TraceError is the package's BadInput; run as a script (the CLI) it needs no extension
    from ..._common import BadInput as _BadInput
except ImportError:
    _BadInput = ValueError

MAX_INSTRUCTIONS = 2_000_000  # recorded (static) instructions; loops traced once do not count trips
TRACE_SECONDS = 60.0          # default time limit of a trace (Python trace(); `nki check --time-limit`)

# The hardware (partitions, SBUF and PSUM sizes, the per-instruction cycle model) is never written
# here: every trace gets the C++ description (src/nki builtin_hardware), from the CLI
# (--hardware-defaults / --hardware-json) or from the extension (launch.py), in _State.hw.


class TraceError(_BadInput):
    """A kernel the tracer cannot accept; the message is one line starting with ``file:line``."""


class Timeout(TraceError):
    """The trace ran out of time (never swallowed by a speculative loop). Raised bare inside the
    kernel by the watchdog; trace() turns it into the located one-line message."""


class _Watchdog:
    """Raises Timeout in the tracing thread once `seconds` have passed, and again every 50 ms
    until the trace ends (a kernel's `except Exception` cannot swallow it for good). The main
    thread uses SIGALRM (it also interrupts sleep); another thread gets an asynchronous
    exception (delivered between bytecodes)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.timer = None
        self.saved = None
        self.fired = False

    def __enter__(self):
        if self.seconds is None:
            return self
        import threading
        if threading.current_thread() is threading.main_thread():
            import signal

            def ring(signum, frame):
                self.fired = True
                raise Timeout("time limit")

            self.saved = (signal.signal(signal.SIGALRM, ring), signal.getitimer(signal.ITIMER_REAL))
            signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 1e-3), 0.05)
        else:
            import ctypes
            tid = threading.get_ident()
            self.done = threading.Event()

            def ring():
                while not self.done.wait(0.05 if self.fired else self.seconds):
                    self.fired = True
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(Timeout))

            self.timer = threading.Thread(target=ring, daemon=True)
            self.timer.start()
        return self

    def disarm(self):
        """Stops the clock (the trace's own clean-up must not be interrupted); idempotent."""
        if self.saved is not None:
            import signal
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.saved[0])
            if self.saved[1][0] > 0:
                signal.setitimer(signal.ITIMER_REAL, *self.saved[1])
            self.saved = None
        elif self.timer is not None:
            import ctypes
            import threading
            self.done.set()
            self.timer.join()
            self.timer = None
            if self.fired:  # an exception still pending for this thread is dropped
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)

    def __exit__(self, *a):
        self.disarm()
        return False


class _State:
    """Everything one trace records. One at a time (tracing is single-threaded)."""

    def __init__(self, path, cycle_model, hw):
        self.path = path                  # kernel file (absolute)
        self.hw = hw                      # the complete hardware description (the C++ one's keys)
        self.label = os.path.basename(path)
        self.root = os.path.dirname(path)  # files under it are the kernel's own code (launch sets the package root)
        self.root_pkg = False             # the kernel file is inside a package: sources name the package's files
        self.cm = dict(cycle_model)
        self.tensors = []                 # Tensor objects, declaration order
        self.names = set()
        self.loops = []                   # (name, trip, kind)
        self.body = []                    # top-level nodes
        self.stack = [self.body]          # bodies being filled
        self.loop_scope = []              # open loop ids
        self.unroll_all = False           # new namespace: ranges are Python ranges
        self.guards = []                  # conditions (lists of affine g >= 0) of the open symbolic ifs
        self.last_pending = None          # the pending result of the last instruction, if unused
        self.instr_count = 0
        self.decls = []                   # (tensor, line, col) for --rewrite
        self.spmd = []                    # grid loop ids (outermost first)
        self.uses_new_api = False
        self.uses_old_api = False
        self.splits = {}                  # loop id -> m: the loop is written as m*q + r (its index is taken % m or // m)
        self.running = False              # the kernel function runs (module code is done)
        self.pendings = []                # every call result, to store the unused ones at the end
        self.lines = None                 # the kernel file's source lines (read once)
        self.target_names = {}            # kernel line -> the name its statement assigns (or None)
        self.name_next = {}               # tensor name -> next suffix to try (unique names in O(1))
        self.stack_alloc = None           # @enable_stack_allocator kernels: the StackAllocator placing auto tensors
        self.lnc, self.core = 1, 0        # logical cores of the launch and the one being traced (--lnc)
        self.generic = {}                 # calls outside the API table traced generically -> first "file:line"
        self.speculating = 0              # open Python-range loops running once symbolically (loops._Speculative)
        self.memo = {}                    # call site and argument signature -> instruction template (calls.run)
        self.memo_sites = {}              # (call, line), or a declaration's line -> templates kept for that site
        self.line_sources = {}            # kernel line -> its "file:line" (declarations)
        self.decl_memo = {}               # declaration site and signature -> template (declarations._ndarray)


ST = None


# Per-code-object facts are keyed by id(code) with the code object kept in the entry (checked with
# `is`): hashing a code object hashes its contents, which costs more than the walk itself.
_IN_KERNEL = {}  # kernel path -> {id(code): (code, its instruction positions if it is that file's code, else None)}


def _site(depth=1):
    """(line, col) of the innermost frame executing the kernel file, from the caller's frame (or
    `depth` frames out: the caller's callers that are the tracer's own). Called for every recorded
    instruction, so the per-code-object facts are cached (a million-instruction trace)."""
    f = sys._getframe(depth)
    path = ST.path if ST else None
    known = _IN_KERNEL.get(path)
    if known is None:
        known = _IN_KERNEL[path] = {}
    while f is not None:
        code = f.f_code
        mine = known.get(id(code))
        if mine is None or mine[0] is not code:
            pos = None
            if os.path.abspath(code.co_filename) == path:
                try:
                    pos = list(code.co_positions())
                except Exception:
                    pos = []
            mine = known[id(code)] = (code, pos)
        pos = mine[1]
        if pos is not None:
            try:
                col = pos[f.f_lasti // 2][2] or 0
            except Exception:
                col = 0
            return f.f_lineno, col
        f = f.f_back
    return 0, 0


def _line(depth=1):
    """_site()'s line alone (the memo's key: no column needed)."""
    f = sys._getframe(depth)
    path = ST.path
    known = _IN_KERNEL.get(path)
    if known is not None:
        while f is not None:
            mine = known.get(id(f.f_code))
            if mine is None or mine[0] is not f.f_code:
                break  # a code object not seen yet: _site caches it
            if mine[1] is not None:
                return f.f_lineno
            f = f.f_back
    return _site(depth + 1)[0]


_IN_TREE = {}  # id(code) -> (code, root, "relative/path.py" or None): the file is part of the kernel's own code


def _source(skip_alloc=False):
    """"file:line" of the innermost frame running the kernel's own code: the kernel file or any
    file of its package (nki-library's helpers live in other modules of the package), named
    relative to the package root. Tensors and instructions carry it, so a report names the
    helper's line, not the entry call. skip_alloc (declarations): frames of allocation helpers
    (functions named *alloc*, SbufManager.alloc_stack & co.) give way to their caller."""
    root = ST.root
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        mine = _IN_TREE.get(id(code))
        if mine is None or mine[0] is not code or mine[1] != root:
            fn = os.path.abspath(code.co_filename)
            rel = os.path.relpath(fn, root) if fn.startswith(root + os.sep) else None
            if fn == ST.path:
                rel = ST.label
            mine = _IN_TREE[id(code)] = (code, root, rel)
        if mine[2] is not None and not (skip_alloc and "alloc" in code.co_name and f.f_back is not None):
            return f"{mine[2]}:{f.f_lineno}"
        f = f.f_back
    return f"{ST.label}:0"


def _where():
    line, _ = _site()
    return f"{ST.label}:{line}" if ST else "<kernel>"


def _fail(msg):
    raise TraceError(f"{_where()}: {msg}")


def _line_text(line):
    if ST.lines is None:
        try:
            with open(ST.path, encoding="utf-8") as f:
                ST.lines = f.read().splitlines()
        except Exception:
            ST.lines = []
    return ST.lines[line - 1] if 0 < line <= len(ST.lines) else ""


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool) or (np is not None and isinstance(x, np.integer))


_ASSIGN = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]")


def _target_name(line):
    """The name a statement on kernel line `line` assigns, cached per line (called per instruction)."""
    names = ST.target_names
    if line in names:
        return names[line]
    m = _ASSIGN.match(_line_text(line))
    names[line] = m.group(1) if m else None
    return names[line]


class _Unroll(BaseException):
    """Raised inside a speculative symbolic loop where only unrolling is exact (a BaseException,
    so that a kernel's own `except Exception` cannot swallow it)."""


def speculating():
    return ST is not None and ST.speculating > 0


def need_unroll(why):
    if speculating():
        raise _Unroll(why)
