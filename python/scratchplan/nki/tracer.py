"""Tracer of real NKI kernels: runs a kernel's Python source against stand-ins of the NKI modules
and records the kernel model of docs/nki.md (tensors, allocations, a loop nest of instructions).

Pure Python and standalone (no import of the scratchplan package), so the C++ CLI runs it as
``python3 tracer.py trace FILE[:FUNCTION] --input q=1x128x4096:bf16 ...``. The stand-ins are put
into ``sys.modules`` under both namespaces (``neuronxcc.nki.*`` and ``nki.*``) only while a trace
runs. Semantics follow the NKI API subset (docs/nki.md, "Tracing Python kernels"):

- ``affine_range`` / ``sequential_range`` / a plain ``range`` in a ``for`` statement of an old-API
  kernel run their body once with a symbolic affine index; ``static_range`` is unrolled. Under the
  new namespace (``import nki``) every range is a Python range (unrolled), as documented there.
- Tensors declared inside a loop body are therefore declared once. Branching on a symbolic index
  (``if i == 0``) is an error naming the line.
- ``x = call(...)`` creates an automatically allocated tensor; ``t[idx] = call(...)`` writes the
  call's result straight into ``t``; ``psum[...] += nc_matmul(...)`` accumulates.
- Anything outside the subset is a one-line ``file:line`` error (exit 2 from the CLI).
"""
from __future__ import annotations

import ast
import contextlib
import functools
import json
import math
import os
import re
import sys
import types

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy ships with every supported setup
    np = None

__all__ = ["TraceError", "trace", "trace_file", "rewrite", "parse_input", "stand_ins", "DEFAULT_CYCLE_MODEL"]

_THIS_FILE = os.path.abspath(__file__)
PARTITIONS = 128
MAX_INSTRUCTIONS = 2_000_000  # recorded (static) instructions; loops traced once do not count trips
TRACE_SECONDS = 120           # the command line gives up after this long (a kernel that never ends)

# Per-instruction cycle model; the C++ hardware description (src/nki/kernel.cpp,
# default_cycle_model) carries the same names and values, and a hardware file overrides them.
DEFAULT_CYCLE_MODEL = {
    "reference_clock_ghz": 1.4,  # timeline unit: cycles of this clock
    "tensor_clock_ghz": 2.8,
    "vector_clock_ghz": 1.12,
    "scalar_clock_ghz": 1.4,
    "gpsimd_clock_ghz": 1.4,
    "min_ii": 64,               # fixed cost of an ALU instruction (API.md: MIN_II ~ 64 cycles)
    "matmul_fp32_factor": 4,    # fp32 matmul inputs run 4x slower
    "gpsimd_fixed": 150,        # iota / affine_select start-up
    "dma_fixed": 2000,          # DMA latency in reference cycles (assumption)
    "dma_bytes_per_cycle": 32,  # per DMA queue, reference clock (assumption)
}


class TraceError(Exception):
    """A kernel the tracer cannot accept; the message is one line starting with ``file:line``."""


# ---------------------------------------------------------------------------------------------
# Where in the kernel source are we?

class _State:
    """Everything one trace records. One at a time (tracing is single-threaded)."""

    def __init__(self, path, cycle_model):
        self.path = path                  # kernel file (absolute)
        self.label = os.path.basename(path)
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
        self.pendings = []                # every call result, to store the unused ones at the end


_ST = None


def _site():
    """(line, col) of the innermost frame executing the kernel file."""
    f = sys._getframe(1)
    path = _ST.path if _ST else None
    while f is not None:
        if os.path.abspath(f.f_code.co_filename) == path:
            col = 0
            try:
                pos = list(f.f_code.co_positions())[f.f_lasti // 2]
                col = pos[2] if pos[2] is not None else 0
            except Exception:
                pass
            return f.f_lineno, col
        f = f.f_back
    return 0, 0


def _where():
    line, _ = _site()
    return f"{_ST.label}:{line}" if _ST else "<kernel>"


def _fail(msg):
    raise TraceError(f"{_where()}: {msg}")


def _line_text(line):
    try:
        with open(_ST.path, encoding="utf-8") as f:
            return f.read().splitlines()[line - 1]
    except Exception:
        return ""


# ---------------------------------------------------------------------------------------------
# dtypes

_DTYPES = {}  # canonical name -> (bytes, stand-in dtype object)
_NAME_OF = {}  # id(dtype object) or numpy dtype -> canonical name


def _mk_dtype(name, size, np_name=None):
    if np is not None:
        obj = np.dtype(np_name) if np_name else np.dtype(f"V{size}")
    else:
        obj = name
    _DTYPES[name] = (size, obj)
    if np_name:
        _NAME_OF[np.dtype(np_name)] = name
    _NAME_OF[id(obj)] = name
    return obj


for _n, _s, _npn in [("float32", 4, "float32"), ("float16", 2, "float16"), ("int8", 1, "int8"), ("uint8", 1, "uint8"),
                     ("int16", 2, "int16"), ("int32", 4, "int32"), ("uint32", 4, "uint32"), ("bfloat16", 2, None),
                     ("tfloat32", 4, None), ("float8", 1, None)]:
    _mk_dtype(_n, _s, _npn)
_DTYPES["bool_"] = (1, _DTYPES["uint8"][1])
_ALIASES = {"bf16": "bfloat16", "fp32": "float32", "f32": "float32", "fp16": "float16", "f16": "float16",
            "fp8": "float8", "float8_e4m3": "float8", "float8_e5m2": "float8", "float8_e4m3fn": "float8",
            "tf32": "tfloat32", "uint16": "int16", "int64": "int32", "float64": "float32", "bool": "uint8"}


def _dtype_name(dt, what="dtype"):
    if dt is None:
        return None
    if isinstance(dt, str):
        n = _ALIASES.get(dt, dt)
        if n in _DTYPES and n != "bool_":
            return n
        raise TraceError(f"{_where()}: unknown {what} {dt!r}")
    if id(dt) in _NAME_OF:
        return _NAME_OF[id(dt)]
    if np is not None:
        try:
            d = np.dtype(dt)
        except TypeError:
            d = None
        if d is not None:
            if d in _NAME_OF:
                return _NAME_OF[d]
            if d.name in _ALIASES:
                return _ALIASES[d.name]
            if d.itemsize in (1, 2, 4) and d.kind in "iufbV":
                return {1: "int8", 2: "bfloat16" if d.kind == "V" else "int16", 4: "float32"}[d.itemsize]
    raise TraceError(f"{_where()}: unknown {what} {dt!r}")


def _itemsize(name):
    return _DTYPES[name][0]


# ---------------------------------------------------------------------------------------------
# Symbolic affine values: loop indices, program ids, nl.arange vectors and expressions of them.

class Sym:
    """const + sum(coef * var). Variables: ('L', loop id) for loops and SPMD ids, ('A', arange id)
    for arange/mgrid axes (index vectors)."""

    __slots__ = ("c", "t")

    def __init__(self, c=0, t=None):
        self.c = c
        self.t = t or {}

    @staticmethod
    def of(x):
        if isinstance(x, Sym):
            return x
        if isinstance(x, bool):
            return Sym(int(x))
        if isinstance(x, int):
            return Sym(x)
        if np is not None and isinstance(x, np.integer):
            return Sym(int(x))
        return None

    def is_const(self):
        return not self.t

    def has_arange(self):
        return any(k[0] == "A" for k in self.t)

    def _bin(self, o, sign):
        o = Sym.of(o)
        if o is None:
            return NotImplemented
        t = dict(self.t)
        for k, v in o.t.items():
            t[k] = t.get(k, 0) + sign * v
            if t[k] == 0:
                del t[k]
        return _mk(self.c + sign * o.c, t)

    def __add__(self, o):
        return self._bin(o, 1)

    __radd__ = __add__

    def __sub__(self, o):
        return self._bin(o, -1)

    def __rsub__(self, o):
        o = Sym.of(o)
        return NotImplemented if o is None else o._bin(self, -1)

    def __neg__(self):
        return _mk(-self.c, {k: -v for k, v in self.t.items()})

    def __pos__(self):
        return self

    def __mul__(self, o):
        o = Sym.of(o)
        if o is None:
            return NotImplemented
        if not o.is_const() and not self.is_const():
            _fail("product of two symbolic indices is not affine")
        a, k = (self, o.c) if o.is_const() else (o, self.c)
        return _mk(a.c * k, {v: c * k for v, c in a.t.items() if c * k})

    __rmul__ = __mul__

    def _divmod_const(self, o, op):
        o = Sym.of(o)
        if o is None or not o.is_const() or o.c == 0:
            _fail(f"'{op}' of a symbolic index by a non-constant")
        if self.is_const():
            return Sym(self.c // o.c if op == "//" else self.c % o.c)
        # Exact when every coefficient (and the constant) divides: i*128 // 128 == i.
        if op == "//" and all(c % o.c == 0 for c in self.t.values()) and self.c % o.c == 0:
            return _mk(self.c // o.c, {k: c // o.c for k, c in self.t.items()})
        _fail(f"'{op}' of a symbolic index ({self}) is not affine")

    def __floordiv__(self, o):
        return self._divmod_const(o, "//")

    def __mod__(self, o):
        return self._divmod_const(o, "%")

    def __truediv__(self, o):
        _fail(f"'/' of a symbolic index ({self}) is not an integer index")

    def __rfloordiv__(self, o):
        _fail("division by a symbolic index is not affine")

    __rmod__ = __rtruediv__ = __rfloordiv__

    def __bool__(self):
        _fail(f"branch on a symbolic index ({self}): loop bodies are traced once, so its value is undefined")

    def __index__(self):
        _fail(f"symbolic index {self} used where Python needs an integer (a loop bound or a Python list index)")

    __int__ = __index__

    def __hash__(self):
        return hash((self.c, tuple(sorted(self.t.items()))))

    def _cmp(self, o, op):
        o = Sym.of(o)
        if o is None:
            return NotImplemented
        d = self - o  # compare d with 0
        if isinstance(d, int):
            return {"<": d < 0, "<=": d <= 0, ">": d > 0, ">=": d >= 0, "==": d == 0, "!=": d != 0}[op]
        return Pred.from_cmp(d, op)

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return self._cmp(o, ">")

    def __ge__(self, o):
        return self._cmp(o, ">=")

    def __eq__(self, o):
        return self._cmp(o, "==")

    def __ne__(self, o):
        return self._cmp(o, "!=")

    def __getitem__(self, key):  # nl.arange(n)[:, None]: place an arange on an axis
        if not isinstance(key, tuple):
            key = (key,)
        axes = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if len(axes) != 1 or any(k is not None and not isinstance(k, slice) for k in key):
            _fail("expected an index vector placed with [:, None] / [None, :]")
        ids = [k for k in self.t if k[0] == "A"]
        if not ids:
            _fail("only nl.arange vectors can be placed on an axis")
        for k in ids:
            _ST_AR[k[1]]["axis"] = axes[0]
            _ST_AR[k[1]]["ndim"] = len(key)
        return self

    def bounds(self, ranges=None):
        """[lo, hi] over loop trips and arange ranges."""
        lo = hi = self.c
        for k, c in self.t.items():
            a, b = _var_range(k)
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def lin(self):
        return tuple(sorted(self.t.items()))

    def loop_part(self):
        return Sym(self.c, {k: v for k, v in self.t.items() if k[0] == "L"})

    def __repr__(self):
        parts = []
        for k, c in sorted(self.t.items()):
            n = _var_name(k)
            parts.append(n if c == 1 else f"{c}*{n}")
        if self.c or not parts:
            parts.append(str(self.c))
        return " + ".join(parts).replace("+ -", "- ")

    __str__ = __repr__


def _mk(c, t):
    t = {k: v for k, v in t.items() if v}
    return Sym(c, t) if t else c


_ST_AR = []  # arange registry of the current trace: {"n": size, "start": s, "axis": a, "ndim": d}


def _var_range(k):
    if k[0] == "L":
        return 0, _ST.loops[k[1]][1] - 1
    a = _ST_AR[k[1]]
    return a["start"], a["start"] + a["n"] - 1


def _var_name(k):
    if k[0] == "L":
        return _ST.loops[k[1]][0]
    return f"arange{k[1]}"


def _affine_text(x):
    """Affine string over loop names for the kernel JSON."""
    s = Sym.of(x)
    if s.is_const():
        return s.c
    return repr(s)


class Pred:
    """A mask: a conjunction of affine constraints g >= 0."""

    __slots__ = ("cons",)

    def __init__(self, cons):
        self.cons = cons

    @staticmethod
    def from_cmp(d, op):
        d = Sym.of(d)
        if op == "<":
            return Pred([-d - 1])
        if op == "<=":
            return Pred([-d])
        if op == ">":
            return Pred([d - 1])
        if op == ">=":
            return Pred([d])
        if op == "==":
            return Pred([d, -d])
        _fail("'!=' is not an affine mask")

    def __and__(self, o):
        if not isinstance(o, Pred):
            _fail("a mask combines comparisons with &")
        return Pred(self.cons + o.cons)

    __rand__ = __and__

    def __bool__(self):
        _fail("branch on a symbolic index: loop bodies are traced once, so the comparison has no single value")

    def upper(self, x):
        """Best upper bound of affine x under the mask, or None."""
        best = None
        for g in self.cons:
            g = Sym.of(g)
            if g.t and {k: -v for k, v in g.t.items()} == x.t:
                b = x.c + g.c
                best = b if best is None else min(best, b)
        return best

    def lower(self, x):
        best = None
        for g in self.cons:
            g = Sym.of(g)
            if g.t and g.t == x.t:
                b = x.c - g.c
                best = b if best is None else max(best, b)
        return best


# ---------------------------------------------------------------------------------------------
# Tensors, views and pending results

class _Alloc:
    """A buffer= value: kind 'auto' (sbuf/psum), 'hbm', 'mod_alloc', 'func', 'address'."""

    def __init__(self, buffer, kind, **kw):
        self.buffer = buffer  # 'sbuf' | 'psum' | 'hbm'
        self.kind = kind
        self.kw = kw

    def __repr__(self):
        return f"<nki buffer {self.buffer}:{self.kind}>"


class _Arithmetic:
    """Python operators on tiles (`a + b`, `-a`, ...) are the ALU instructions of nl.add & co."""

    def _op(self, other, name, rev=False):
        a, b = (other, self) if rev else (self, other)
        return _alu(name, a, b)

    def __add__(self, o):
        return self._op(o, "add")

    def __radd__(self, o):
        return self._op(o, "add", True)

    def __sub__(self, o):
        return self._op(o, "subtract")

    def __rsub__(self, o):
        return self._op(o, "subtract", True)

    def __mul__(self, o):
        return self._op(o, "multiply")

    def __rmul__(self, o):
        return self._op(o, "multiply", True)

    def __truediv__(self, o):
        return self._op(o, "divide")

    def __rtruediv__(self, o):
        return self._op(o, "divide", True)

    def __neg__(self):
        return self._op(-1, "multiply")

    # Comparisons of tiles are nl.greater & co (a 0/1 tile, e.g. for nl.where). == and != keep
    # Python's identity meaning: tensors are compared and hashed as objects by the tracer itself.
    def __gt__(self, o):
        return self._op(o, "greater")

    def __ge__(self, o):
        return self._op(o, "greater_equal")

    def __lt__(self, o):
        return self._op(o, "less")

    def __le__(self, o):
        return self._op(o, "less_equal")

    def __pow__(self, o):
        return self._op(o, "power")

    def __rpow__(self, o):
        return self._op(o, "power", True)

    def __and__(self, o):
        return self._op(o, "logical_and")

    def __or__(self, o):
        return self._op(o, "logical_or")

    def broadcast_to(self, shape):
        """`tile.broadcast_to(shape)` (the mamba tutorial's `B_i.broadcast_to((128, n))`): nl.broadcast_to."""
        return _alu("nl.broadcast_to", self, shape=tuple(int(s) for s in shape))


class Tensor(_Arithmetic):
    def __init__(self, name, shape, dtype, alloc, role="internal", implicit=False, source="", pdim_at=None):
        self.name = name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.alloc = alloc
        self.buffer = alloc.buffer
        self.role = role
        self.implicit = implicit
        self.source = source
        if self.buffer == "hbm":
            self.nb = 0  # HBM: no block dims in the model
        else:
            self.nb = pdim_at if pdim_at is not None else 0
        self.written = False
        self.api = None  # implicit tensors: the call whose result this is

    # numpy-ish properties used by kernels
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return _itemsize(self.dtype)

    @property
    def blocks(self):
        return self.shape[: self.nb]

    @property
    def pdim(self):
        return self.shape[self.nb] if len(self.shape) > self.nb else 1

    @property
    def free(self):
        return self.shape[self.nb + 1:]

    def fbytes(self):
        return math.prod(self.free) * self.itemsize

    def view(self):
        return View(self, [None] * len(self.shape))

    # Tensor-level API ------------------------------------------------------------------------
    def __getitem__(self, key):
        return self.view()[key]

    def __setitem__(self, key, value):
        self.view()._assign(key, value)

    def __iadd__(self, other):
        self.view()._accumulate(other)
        return self

    def reshape(self, shape):
        if self.buffer != "hbm":
            _fail("reshape of an on-chip tensor is outside the supported subset")
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != math.prod(self.shape):
            _fail(f"cannot reshape {self.shape} to {shape}")
        return self._hbm_alias(shape)

    def broadcast_to(self, shape):
        """On an HBM tensor a view with the larger shape (loads read its rows again); on chip an
        instruction, as nl.broadcast_to."""
        if self.buffer != "hbm":
            return super().broadcast_to(shape)
        shape = tuple(int(s) for s in shape)
        if len(shape) < len(self.shape) or any(a not in (1, b) for a, b in zip(self.shape[::-1], shape[::-1])):
            _fail(f"cannot broadcast {list(self.shape)} to {list(shape)}")
        return self._hbm_alias(shape)

    def expand_dims(self, axis):
        shape = list(self.shape)
        axis = int(axis)
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 1)
        return self.reshape(shape)

    def _hbm_alias(self, shape):
        t = Tensor(self.name, shape, self.dtype, self.alloc, self.role, source=self.source)
        t._alias = getattr(self, "_alias", self)
        return t

    def __getattr__(self, name):
        if name in ("_alias",):
            raise AttributeError(name)
        _fail(f"tensor attribute .{name} is outside the supported NKI subset")

    # Operators build pending instructions on the whole-tensor view.
    def _op(self, other, name, rev=False):
        return self.view()._op(other, name, rev)

    def __repr__(self):
        return f"<nki tensor {self.name} {self.shape} {self.dtype} {self.buffer}>"


class _Dim:
    """How one tensor dim is indexed: a range [start, start + size) with step (start affine in
    loop variables), or an index vector (an affine expression with arange terms)."""

    __slots__ = ("start", "size", "step", "vec", "scalar")

    def __init__(self, start=0, size=1, step=1, vec=None, scalar=False):
        self.start, self.size, self.step, self.vec, self.scalar = start, size, step, vec, scalar


class View(_Arithmetic):
    """A tensor with some dims indexed. `dims[d]` is None (whole dim) or a _Dim."""

    def __init__(self, tensor, dims, mask=None):
        self.tensor = tensor
        self.dims = dims
        self.mask = mask

    # shape of the result (what an instruction reading this view sees)
    @property
    def shape(self):
        vec = [d for d in self.dims if d is not None and d.vec is not None]
        if vec:
            axes = {}
            for d in vec:
                for k in Sym.of(d.vec).t:
                    if k[0] == "A":
                        a = _ST_AR[k[1]]
                        axes[a.get("axis", 0)] = a["n"]
            return tuple(axes[a] for a in sorted(axes))
        out = []
        for i, d in enumerate(self.dims):
            if d is None:
                out.append(self.tensor.shape[i])
            elif not d.scalar:
                out.append(d.size)
        return tuple(out)

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def itemsize(self):
        return self.tensor.itemsize

    @property
    def ndim(self):
        return len(self.shape)

    def _open(self):
        return [i for i, d in enumerate(self.dims) if d is None or (not d.scalar and d.vec is None)]

    def __getitem__(self, key):
        t = self.tensor
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            i = key.index(Ellipsis)
            n_open = len(self._open())
            fill = n_open - (len(key) - 1)
            if fill < 0:
                _fail(f"too many indices for tensor {t.name} of shape {t.shape}")
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        open_dims = self._open()
        if len(key) > len(open_dims):
            _fail(f"too many indices ({len(key)}) for tensor {t.name} of shape {t.shape}")
        dims = list(self.dims)
        for d, k in zip(open_dims, key):
            dims[d] = self._index_dim(d, dims[d], k)
        vec = any(x is not None and x.vec is not None for x in dims)
        if vec and any(x is not None and x.vec is None and not x.scalar for x in dims):
            _fail(f"tensor {t.name} is indexed with nl.arange vectors and slices in one subscript; NKI does not mix "
                  "advanced and basic indexing (use vectors on every indexed dim, or slices)")
        return View(t, dims, self.mask)

    def _index_dim(self, d, cur, k):
        t = self.tensor
        size = t.shape[d] if cur is None else cur.size
        base = 0 if cur is None else cur.start
        step0 = 1 if cur is None else cur.step
        if isinstance(k, _DS):
            return _Dim(base + step0 * k.start, k.size, step0)
        if isinstance(k, slice):
            if k.step not in (None, 1) and not isinstance(k.step, int):
                _fail("slice step must be an integer")
            step = k.step or 1
            if step <= 0:
                _fail("slice step must be positive")
            st = 0 if k.start is None else k.start
            sp = size if k.stop is None else k.stop
            for b in (st, sp):
                if not (_is_int(b) or isinstance(b, Sym)):
                    _fail(f"slice bound {b!r} of tensor {t.name} is not an integer or an affine loop index")
            if isinstance(st, int) and st < 0:
                st += size
            if isinstance(sp, int) and sp < 0:
                sp += size
            n = sp - st
            n = Sym.of(n)
            if n is None or not n.is_const():
                _fail(f"slice {st}:{sp} of tensor {t.name} has a symbolic length")
            n = max(0, -(-n.c // step))
            return _Dim(base + step0 * st, n, step0 * step)
        if isinstance(k, (int, Sym)) or (np is not None and isinstance(k, np.integer)):
            s = Sym.of(k)
            if isinstance(s, Sym) and s.has_arange():
                return _Dim(vec=base + step0 * s, size=1)
            return _Dim(base + step0 * (s if not s.is_const() else s.c), 1, 1, scalar=True)
        if isinstance(k, _MGrid):
            _fail("index with the unpacked mgrid fields (ip, jf = nl.mgrid[...]) or .p / .x")
        _fail(f"unsupported index {k!r} for tensor {t.name}")

    # ---- accesses ----------------------------------------------------------------------------
    def access(self, write=False):
        """(json access, partitions touched, bytes per partition touched) with bounds checks."""
        t = self.tensor
        ranges = []  # per dim: (lo, hi) inclusive over every iteration
        for d, dim in enumerate(self.dims):
            n = t.shape[d]
            if dim is None:
                lo, hi = 0, n - 1
            elif dim.vec is not None:
                v = Sym.of(dim.vec)
                lo, hi = v.bounds()
                if self.mask is not None:
                    u, l2 = self.mask.upper(v), self.mask.lower(v)
                    if u is not None:
                        hi = min(hi, u)
                    if l2 is not None:
                        lo = max(lo, l2)
            else:
                s = Sym.of(dim.start)
                lo, hi = s.bounds()
                hi += (dim.size - 1) * dim.step
                if self.mask is not None and not s.is_const():
                    u = self.mask.upper(s)
                    if u is not None:
                        hi = min(hi, u + (dim.size - 1) * dim.step)
                if dim.size == 0:
                    hi = lo - 1
            if lo < 0 or hi >= n:
                what = "block" if d < t.nb else "partition" if d == t.nb else "free"
                _fail(f"index range [{lo}, {hi}] of {what} dim {d} is out of range for tensor {t.name} of shape "
                      f"{list(t.shape)}")
            ranges.append((lo, hi))
        acc = {"tensor": t.name}
        if t.buffer == "hbm":
            return acc, 0, 0
        block = []
        for d in range(t.nb):
            dim = self.dims[d]
            if dim is None or not dim.scalar:
                if t.shape[d] == 1 and (dim is None or dim.size == 1):
                    block.append(0 if dim is None else _affine_text(dim.start))
                    continue
                _fail(f"block dim {d} of tensor {t.name} must be indexed by one index (t[i] or t[i, ...])")
            block.append(_affine_text(dim.start))
        if t.nb:
            acc["block"] = block
        p_lo, p_hi = ranges[t.nb] if len(ranges) > t.nb else (0, 0)
        pdim = t.pdim
        if (p_lo, p_hi) != (0, pdim - 1):
            acc["partitions"] = [p_lo, p_hi + 1]
        # bytes: row-major offsets of the free dims
        isz = t.itemsize
        lo_off = hi_off = 0
        stride = 1
        for d in range(len(t.shape) - 1, t.nb, -1):
            lo, hi = ranges[d]
            lo_off += lo * stride
            hi_off += hi * stride
            stride *= t.shape[d]
        b0, b1 = lo_off * isz, (hi_off + 1) * isz
        if (b0, b1) != (0, t.fbytes()):
            acc["bytes"] = [b0, b1]
        return acc, p_hi - p_lo + 1, b1 - b0

    # ---- writes ------------------------------------------------------------------------------
    def _assign(self, key, value):
        target = self[key] if key is not None else self
        if isinstance(value, _Accumulated):
            return
        _write_into(target, value)

    def __setitem__(self, key, value):
        self._assign(key, value)

    def _accumulate(self, other):
        _accumulate_into(self, other)

    def __iadd__(self, other):
        self._accumulate(other)
        return _Accumulated(self)

    def __getattr__(self, name):
        _fail(f"view attribute .{name} is outside the supported NKI subset")


class _Accumulated:
    """What `view += x` returns, so that the following __setitem__ does nothing."""

    def __init__(self, view):
        self.view = view


class Pending(_Arithmetic):
    """The result of a call not yet stored anywhere: becomes a write into `t[...]` when assigned
    right away, else an automatically allocated tensor of its own."""

    def __init__(self, instr, shape, dtype, buffer, api, line):
        self.instr = instr
        self.shape = tuple(shape)
        self.dtype = dtype
        self.buffer = buffer
        self.api = api
        self.line = line
        self.tensor = None
        self.target = None

    @property
    def itemsize(self):
        return _itemsize(self.dtype)

    @property
    def ndim(self):
        return len(self.shape)

    def materialize(self):
        """The implicit tensor holding this result (created on first use)."""
        if self.tensor is None:
            if _ST.last_pending is self:
                _ST.last_pending = None
            name = _unique(self.target or f"{self.api.split('.')[-1]}_{self.line}")
            shape = self.shape if len(self.shape) >= 2 else tuple(self.shape) + (1,) * (2 - len(self.shape))
            if shape[0] > PARTITIONS:
                raise TraceError(f"{_ST.label}:{self.line}: the result of {self.api} has partition dim {shape[0]} > "
                                 f"{PARTITIONS}")
            t = Tensor(name, shape, self.dtype, _Alloc(self.buffer, "auto"), implicit=True,
                       source=f"{_ST.label}:{self.line}")
            t.api = self.api
            _register(t)
            self.tensor = t
            acc, p, b = t.view().access(write=True)
            self.instr["writes"].append(acc)
            _finish_cost(self.instr, p, b)
        return self.tensor.view()

    def __getitem__(self, key):
        return self.materialize()[key]

    def __iadd__(self, o):
        v = self.materialize()
        v._accumulate(o)
        return self

    def __getattr__(self, name):
        if name in ("tensor", "instr", "target"):
            raise AttributeError(name)
        _fail(f"attribute .{name} of a call result is outside the supported NKI subset")


class _DS:
    def __init__(self, start, size):
        self.start = start
        self.size = int(size)


class _MGrid:
    def __init__(self, vecs):
        self.vecs = vecs
        self.p = vecs[0]
        self.x = vecs[1] if len(vecs) > 1 else None

    def __iter__(self):
        return iter(self.vecs)


def _unique(name):
    name = re.sub(r"[^A-Za-z0-9_.@]", "_", name) or "t"
    n, i = name, 1
    while n in _ST.names:
        i += 1
        n = f"{name}_{i}"
    _ST.names.add(n)
    return n


def _register(t):
    _ST.tensors.append(t)


# ---------------------------------------------------------------------------------------------
# Instructions

_ENGINE_CLOCK = {"Tensor": "tensor_clock_ghz", "Vector": "vector_clock_ghz", "Scalar": "scalar_clock_ghz",
                 "GpSimd": "gpsimd_clock_ghz"}


def _new_instr(api, engine, cost_kind):
    line, _ = _site()
    ins = {"name": api.split(".")[-1], "engine": engine, "cost": 1, "reads": [], "writes": [],
           "source": f"{_ST.label}:{line}", "_cost": cost_kind}
    _ST.last_pending = None  # a result is stored "right away" only if no instruction came between
    for cons in _ST.guards:  # inside the branches of symbolic ifs
        for g in cons:
            ins.setdefault("when", []).append(_affine_text(g))
    _ST.stack[-1].append(ins)
    _ST.instr_count += 1
    if _ST.instr_count > MAX_INSTRUCTIONS:
        _fail(f"more than {MAX_INSTRUCTIONS:,} instructions recorded (static_range and new-API ranges unroll); "
              "too large to trace")
    return ins, line


def _guard(ins, mask):
    """mask= on loop indices: the instruction runs only in iterations where some element of the
    mask holds. Each constraint g >= 0 becomes `when` g's loop part + the most its index-vector
    part can add (exact when the mask is on loop indices only; for mixed masks the partial tile
    is recorded whole, see docs)."""
    if mask is None:
        return
    if isinstance(mask, (bool, int)):
        if not mask:
            ins.setdefault("when", []).append(-1)
        return
    if not isinstance(mask, Pred):
        _fail(f"mask= expects comparisons of affine expressions combined with &, got {type(mask).__name__}")
    for g in mask.cons:
        g = Sym.of(g)
        if g is None:
            continue
        loop = {k: v for k, v in g.t.items() if k[0] == "L"}
        best = g.c
        for k, c in g.t.items():
            if k[0] == "A":
                lo, hi = _var_range(k)
                best += max(c * lo, c * hi)
        w = _affine_text(_mk(best, loop))
        if isinstance(w, int) and w >= 0:
            continue  # always true
        ins.setdefault("when", []).append(w)


def _finish_cost(ins, partitions, nbytes):
    """Cycles of the reference clock for the instruction, from the size of what it writes (or
    reads, for DMA) and the documented per-engine estimates."""
    kind = ins.pop("_cost", None)
    if kind is None:
        return
    cm = _ST.cm
    eng = ins["engine"]
    isz = ins.pop("_isz", 2)
    n = max(1, nbytes // max(isz, 1))  # elements per partition
    if eng == "DMA":
        cyc = cm["dma_fixed"] + max(1, partitions) * max(1, nbytes) / max(cm["dma_bytes_per_cycle"], 1e-9)
        ins["cost"] = max(1, int(round(cyc)))
        return
    mii = cm["min_ii"]
    if kind == "matmul":
        stat = ins.pop("_stat_n", 128)
        cyc = max(min(64, stat), n) * (cm["matmul_fp32_factor"] if ins.pop("_fp32", False) else 1)
    elif kind == "transpose_pe":
        cyc = max(partitions, min(64, n))
    elif kind == "reduce":
        cyc = max(1, n // 2) if isz <= 2 else n
    elif kind == "gpsimd":
        cyc = cm["gpsimd_fixed"] + n
    elif kind == "bn_aggr":
        cyc = max(mii, 13 * n / 3)
    elif kind == "reciprocal":
        cyc = max(mii, 8 * n)
    elif kind == "scan":
        cyc = max(mii, 2 * n)
    elif kind == "memset":
        cyc = max(1, n // 2) if isz <= 2 else n
    elif kind == "tsr":
        cyc = max(mii, n) + mii
    else:
        cyc = max(mii, n)
    clock = cm.get(_ENGINE_CLOCK.get(eng, "scalar_clock_ghz"), 1.4)
    ins["cost"] = max(1, int(round(cyc * cm["reference_clock_ghz"] / max(clock, 1e-9))))
    for k in [k for k in ins if k.startswith("_")]:
        del ins[k]


def _as_view(x, what):
    if isinstance(x, View):
        return x
    if isinstance(x, Tensor):
        return x.view()
    if isinstance(x, Pending):
        return x.materialize()
    _fail(f"{what}: expected a tile, got {type(x).__name__}")


def _read(ins, x, what="operand", allow_hbm=False):
    v = _as_view(x, what)
    if v.tensor.buffer == "hbm" and not allow_hbm and ins["engine"] != "DMA":
        _fail(f"{ins['name']}: {what} {v.tensor.name} is in HBM; compute engines read SBUF/PSUM tiles (nl.load it)")
    acc, p, b = v.access()
    ins["reads"].append(acc)
    return v, p, b


def _is_tile(x):
    return isinstance(x, (View, Tensor, Pending))


def _result(ins, line, api, shape, dtype, buffer="sbuf"):
    p = Pending(ins, shape, dtype, buffer, api, line)
    p.target = _target_name(line)
    ins["_isz"] = _itemsize(dtype)
    _ST.last_pending = p
    _ST.pendings.append(p)
    return p


def _write_into(target, value):
    """t[...] = value: the pending instruction writes the tile directly when it is the last one
    recorded; anything else becomes a copy (constants: a memset)."""
    if isinstance(value, Pending) and value.tensor is None and _ST.last_pending is value:
        _ST.last_pending = None
        if target.tensor.buffer == "hbm" and value.instr["engine"] != "DMA":
            _fail(f"{value.api} writes HBM tensor {target.tensor.name}; compute engines write SBUF/PSUM tiles "
                  "(nl.store the result)")
        _check_write_fits(target, value)
        acc, p, b = target.access(write=True)
        value.instr["writes"].append(acc)
        value.instr.setdefault("_isz", target.itemsize)
        _finish_cost(value.instr, p, b)
        target.tensor.written = True
        return
    if isinstance(value, (int, float)) or (np is not None and isinstance(value, (np.integer, np.floating))):
        ins, line = _new_instr("memset", "Vector", "memset")
        acc, p, b = target.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = target.itemsize
        _finish_cost(ins, p, b)
        return
    if _is_tile(value):
        src = _as_view(value, "value")
        dma = src.tensor.buffer == "hbm" or target.tensor.buffer == "hbm"
        ins, line = _new_instr("load" if dma else "tensor_copy", "DMA" if dma else "Vector", "alu")
        _read(ins, src, allow_hbm=True)
        acc, p, b = target.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = target.itemsize
        _finish_cost(ins, p, b)
        return
    _fail(f"cannot assign a {type(value).__name__} to tensor {target.tensor.name}")


def _check_write_fits(target, value):
    ts = target.shape
    vs = value.shape
    if math.prod(ts) != math.prod(vs) and math.prod(vs) != 1 and tuple(ts)[: len(vs)] != tuple(vs)[: len(ts)]:
        # broadcasting of (P, 1) etc. is allowed; a plain size mismatch is not
        if not (len(ts) == len(vs) and all(a == b or b == 1 for a, b in zip(ts, vs))):
            _fail(f"{value.api} result of shape {list(vs)} does not fit {target.tensor.name}{list(ts)}")


def _accumulate_into(target, other):
    if isinstance(other, Pending) and other.tensor is None and _ST.last_pending is other and \
            target.tensor.buffer == "psum" and other.instr["engine"] == "Tensor":
        _ST.last_pending = None
        acc, p, b = target.access(write=True)
        acc["accumulate"] = True
        other.instr["writes"].append(acc)
        other.instr.setdefault("_isz", 4)
        _finish_cost(other.instr, p, b)
        return
    res = _alu("add", target, other)
    _write_into(target, res)


# ---------------------------------------------------------------------------------------------
# The API surface (API.md §2-§11)

def _shape_of(x):
    if isinstance(x, (View, Pending)):
        return tuple(x.shape)
    if isinstance(x, Tensor):
        return x.shape
    return None


def _dtype_of(x, default="float32"):
    if isinstance(x, (View, Pending, Tensor)):
        return x.dtype
    return default


def _alu(api, *operands, engine="Vector", kind="alu", dtype=None, shape=None, mask=None, out_psum=False):
    ins, line = _new_instr(api, engine, kind)
    _guard(ins, mask)
    shapes = []
    for o in operands:
        if _is_tile(o):
            v, _, _ = _read(ins, o)
            shapes.append(tuple(v.shape))
    if shape is None:
        if not shapes:
            _fail(f"{api}: expected at least one tile operand")
        shape = max(shapes, key=lambda s: math.prod(s))
    dt = _dtype_name(dtype) if dtype is not None else next((_dtype_of(o) for o in operands if _is_tile(o)), "float32")
    return _result(ins, line, api, shape, dt, "psum" if out_psum else "sbuf")


def _ndarray(shape, dtype, buffer=None, name="", address=None, fill=None, api="ndarray"):
    line, col = _site()
    dt = _dtype_name(dtype)
    shp, pdim_at = _parse_shape(shape)
    alloc = _buffer_of(buffer, address)
    if alloc.buffer != "hbm":
        if pdim_at is None:
            pdim_at = 0
        if len(shp) < pdim_at + 2:
            shp = tuple(shp) + (1,) * (pdim_at + 2 - len(shp))  # a (P,) tile is (P, 1)
        if shp[pdim_at] > PARTITIONS:
            _fail(f"partition dim {shp[pdim_at]} of {api} exceeds the {PARTITIONS} partitions")
        if fill is not None and alloc.kind != "auto":
            _fail(f"nl.{api} with a direct allocation is an error in NKI (declare with nl.ndarray, then assign)")
    if any(s <= 0 for s in shp):
        _fail(f"shape {list(shp)} has a non-positive dimension")
    nm = name or _target_name(line) or api
    t = Tensor(_unique(nm), shp, dt, alloc, role="internal",
               source=f"{_ST.label}:{line}", pdim_at=pdim_at)
    if alloc.buffer != "hbm" and alloc.kind == "func":
        t.table = _eval_alloc_func(alloc, t, line)
    _register(t)
    _ST.decls.append((t, line, col, api))
    if fill is not None:
        # A tensor with block dims is filled one block at a time: a loop per block dim around one
        # memset (the matmul tutorial zeroes its (M tiles, N tiles, P, F) result block this way).
        with _over_blocks(t, line) as idx:
            ins, _ = _new_instr(f"memset", "Vector", "memset")
            acc, p, b = (t[tuple(idx)] if idx else t.view()).access(write=True)
            ins["writes"].append(acc)
            ins["_isz"] = t.itemsize
            _finish_cost(ins, p, b)
    return t


@contextlib.contextmanager
def _over_blocks(t, line):
    """Opens one affine loop per block dim of `t` and yields their indices (none: no loop)."""
    opened, idx = 0, []
    try:
        for d in range(t.nb):
            lid = len(_ST.loops)
            name = _free_loop_name(f"{t.name}_block{d}")
            _ST.loops.append((name, t.shape[d], "affine"))
            node = {"loop": name, "trip": t.shape[d], "body": [], "source": f"{_ST.label}:{line}"}
            _ST.stack[-1].append(node)
            _ST.stack.append(node["body"])
            _ST.loop_scope.append(lid)
            opened += 1
            idx.append(Sym(0, {("L", lid): 1}))
        yield idx
    finally:
        for _ in range(opened):
            _ST.stack.pop()
            _ST.loop_scope.pop()


def _free_loop_name(base):
    """`base`, or `base_2`, ...: not the name of an open loop."""
    used = {_ST.loops[l][0] for l in _ST.loop_scope}
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


def _target_name(line):
    m = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]", _line_text(line))
    return m.group(1) if m else None


class _ParDim(int):
    pass


def _parse_shape(shape):
    if isinstance(shape, int) or (np is not None and isinstance(shape, np.integer)):
        shape = (shape,)
    out, at = [], None
    for i, s in enumerate(shape):
        if isinstance(s, _ParDim):
            if at is not None:
                _fail("two par_dim markers in one shape")
            at = i
        if isinstance(s, Sym):
            _fail("a tensor shape may not depend on a loop index")
        try:
            out.append(int(s))
        except TypeError:
            _fail(f"bad shape {shape!r}")
    return tuple(out), at


def _buffer_of(buffer, address):
    if address is not None:
        try:
            p, b = (int(address[0]), int(address[1]))
        except Exception:
            _fail("address= expects (partition_offset, byte_offset)")
        return _Alloc("sbuf" if buffer is None or getattr(buffer, "buffer", "sbuf") == "sbuf" else buffer.buffer,
                      "address", p=p, b=b)
    if buffer is None:
        return _Alloc("sbuf", "auto")
    if isinstance(buffer, _Alloc):
        return buffer
    if isinstance(buffer, str) and buffer in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm"):
        return {"sbuf": _SBUF, "psum": _PSUM, "hbm": _HBM, "shared_hbm": _SHARED_HBM, "private_hbm": _HBM}[buffer]
    _fail(f"unsupported buffer= value {buffer!r}")


_SBUF = _Alloc("sbuf", "auto")
_PSUM = _Alloc("psum", "auto")
_HBM = _Alloc("hbm", "private_hbm")
_SHARED_HBM = _Alloc("hbm", "shared_hbm")


def _blocks_iter(blocks):
    if not blocks:
        yield ()
        return
    idx = [0] * len(blocks)
    while True:
        yield tuple(idx)
        d = len(blocks) - 1
        while d >= 0:
            idx[d] += 1
            if idx[d] < blocks[d]:
                break
            idx[d] = 0
            d -= 1
        if d < 0:
            return


def _eval_alloc_func(alloc, t, line):
    """ncc.sbuf.alloc(func) / ncc.psum.alloc(func): func evaluated on every logical block."""
    func = alloc.kw["func"]
    psum = alloc.buffer == "psum"
    table = []
    pdim, fdim = t.pdim, t.fbytes()
    if math.prod(t.blocks) > 4_000_000:
        _fail(f"tensor {t.name} has more than 4,000,000 logical tiles")
    for idx in _blocks_iter(t.blocks):
        try:
            r = func(idx, pdim, fdim)
        except TraceError:
            raise
        except Exception as e:  # the allocation function's own bug, located
            tb = e.__traceback__
            ln = line
            while tb is not None:
                if os.path.abspath(tb.tb_frame.f_code.co_filename) == _ST.path:
                    ln = tb.tb_lineno
                tb = tb.tb_next
            raise TraceError(f"{_ST.label}:{ln}: allocation function of {t.name} failed on block {idx}: "
                             f"{type(e).__name__}: {e}") from None
        want = 3 if psum else 2
        if not isinstance(r, (tuple, list)) or len(r) != want or not all(_is_int(x) for x in r):
            raise TraceError(f"{_ST.label}:{line}: allocation function of {t.name} returned {r!r} for block {idx}; "
                             f"expected {'(bank, start_partition, byte_addr)' if psum else '(start_partition, byte_addr)'}"
                             " integers")
        if psum:
            bank, p, b = (int(x) for x in r)
            table.append([p, bank * 2048 + b])
        else:
            table.append([int(r[0]), int(r[1])])
    return table


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool) or (np is not None and isinstance(x, np.integer))


# ---- loops -------------------------------------------------------------------------------------

def _loop_args(args, api):
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) == 2:
        start, stop, step = args[0], args[1], 1
    elif len(args) == 3:
        start, stop, step = args
    else:
        _fail(f"{api} expects (stop) or (start, stop[, step])")
    for v in (start, stop, step):
        if isinstance(v, Sym):
            _fail(f"{api} bound depends on a loop index ({v}); loops are traced once, so the trip count must be a "
                  "constant")
        if not _is_int(v):
            _fail(f"{api} bound {v!r} is not an integer")
    start, stop, step = int(start), int(stop), int(step)
    if step == 0:
        _fail(f"{api} step is 0")
    trip = max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
    return start, step, trip


def _symbolic_loop(api, kind, args):
    start, step, trip = _loop_args(args, api)
    if trip == 0:
        return
    line, _ = _site()
    m = re.match(r"\s*for\s+([A-Za-z_]\w*)\s+in\b", _line_text(line))
    name = _free_loop_name(m.group(1) if m else f"i{len(_ST.loops)}")
    lid = len(_ST.loops)
    _ST.loops.append((name, trip, kind))
    node = {"loop": name, "trip": trip, "body": []}
    if kind != "affine":
        node["kind"] = kind
    node["source"] = f"{_ST.label}:{line}"
    _ST.stack[-1].append(node)
    _ST.stack.append(node["body"])
    _ST.loop_scope.append(lid)
    try:
        yield start + step * Sym(0, {("L", lid): 1})
    finally:
        _ST.stack.pop()
        _ST.loop_scope.pop()


def _range_of(api, kind):
    def f(*args, **kw):
        if _ST.unroll_all:
            start, step, trip = _loop_args(args, api)
            return range(start, start + step * trip, step)
        return _symbolic_loop(api, kind, args)
    f.__name__ = api
    return f


def _static_range(*args, **kw):
    start, step, trip = _loop_args(args, "static_range")
    return range(start, start + step * trip, step)


class _Branch:
    """An `if` of the kernel file. A plain value takes one branch, as Python would. An affine
    condition on loop indices (`if i == 0`, `if q_tile * 128 >= k_tile * 512`: the pipelined and
    causal attention kernels) traces both branches once, each instruction guarded (`when`) by the
    branch's condition, so it executes only in the iterations where that branch is taken. The else
    branch of a conjunction is affine only when one constraint can fail over the loops' ranges."""

    def __init__(self, test, exits=False):
        self.pred = test if isinstance(test, Pred) else None
        self.value = None if self.pred is not None else bool(test)  # a bare Sym fails here, naming the line
        if self.pred is not None and exits:
            _fail("return, break or continue inside a branch on a loop index: both branches are traced once, "
                  "so the path after it has no single meaning")

    def take(self, side):
        return True if self.pred is not None else self.value == side

    @contextlib.contextmanager
    def guard(self, side):
        if self.pred is None:
            yield
            return
        cons = []
        for g in self.pred.cons:
            g = Sym.of(g)
            if any(k[0] != "L" for k in g.t):
                _fail("an `if` on an index vector (nl.arange): use mask= for partial tiles")
            if _min_over_loops(g) < 0:  # can fail: it matters
                cons.append(g)
        if not side:
            if len(cons) > 1:
                _fail("the else branch of a compound symbolic condition is not affine; split the condition")
            cons = [-cons[0] - 1] if cons else [Sym.of(-1)]
        _ST.guards.append(cons)
        try:
            yield
        finally:
            _ST.guards.pop()


def _min_over_loops(g):
    best = g.c
    for k, c in g.t.items():
        lo, hi = _var_range(k)
        best += min(c * lo, c * hi)
    return best


def _sp_range(*args):
    """A plain `range` in a `for` statement of the kernel file: sequential_range in old-API
    kernels (API.md §6); a Python range otherwise or when its bounds are not plain ints."""
    if _ST is None or _ST.unroll_all or not _ST.uses_old_api:
        return range(*args)
    if any(isinstance(a, Sym) for a in args) or not all(_is_int(a) for a in args):
        return range(*args)  # range(i) with symbolic i fails in __index__ with the line
    return _symbolic_loop("range", "sequential", args)


def _walk_same_function(node):
    """ast.walk without descending into nested functions, lambdas and classes."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(c)


class _RangeRewriter(ast.NodeTransformer):
    """`for x in range(...)` -> `__sp_range__`; `if TEST: A else: B` -> both branches under
    `__sp_if__` (see _Branch): run as Python for a plain value, guarded for an affine condition."""

    def __init__(self):
        self.n_if = 0

    def visit_If(self, node):
        self.generic_visit(node)
        self.n_if += 1
        var = f"__sp_if_{self.n_if}"

        def branch(side, body):
            call = lambda meth: ast.Call(func=ast.Attribute(value=ast.Name(id=var, ctx=ast.Load()), attr=meth,
                                                            ctx=ast.Load()),
                                         args=[ast.Constant(value=side)], keywords=[])
            inner = ast.With(items=[ast.withitem(context_expr=call("guard"))], body=body)
            return ast.If(test=call("take"), body=[inner], orelse=[])

        exits = any(isinstance(n, (ast.Return, ast.Break, ast.Continue))
                    for stmt in node.body + node.orelse for n in _walk_same_function(stmt))
        out = [ast.Assign(targets=[ast.Name(id=var, ctx=ast.Store())],
                          value=ast.Call(func=ast.Name(id="__sp_if__", ctx=ast.Load()),
                                         args=[node.test, ast.Constant(value=exits)], keywords=[])),
               branch(True, node.body)]
        if node.orelse:
            out.append(branch(False, node.orelse))
        for x in out:
            ast.copy_location(x, node)
        return out

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it.func = ast.copy_location(ast.Name(id="__sp_range__", ctx=ast.Load()), it.func)
        return node


# ---- the modules ------------------------------------------------------------------------------

class _Module(types.ModuleType):
    """A stand-in module: unknown attributes are a one-line error naming the call site."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        _fail(f"{self.__name__.replace('neuronxcc.', '')}.{name} is outside the NKI subset the tracer supports")


def _kw_engine(kw, default):
    e = kw.get("engine")
    if e is None:
        return default
    m = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "dma": "DMA",
         "unknown": default}
    return m.get(getattr(e, "_engine", None), default)


class _Engine:
    def __init__(self, name):
        self._engine = name

    def __repr__(self):
        return f"<engine {self._engine}>"


def _hidden(api, why):
    """An API that creates a tensor the kernel cannot allocate: recorded as an automatic tensor
    so that a direct-allocation kernel reports mixed_allocation at this line."""
    line, _ = _site()
    t = Tensor(_unique(f"hidden_{api}_{line}"), (PARTITIONS, 1), "float32", _Alloc("sbuf", "auto"), implicit=True,
               source=f"{_ST.label}:{line}")
    t.api = f"the {why} tensor that {api} creates"
    _register(t)
    ins, _ = _new_instr(f"{api}.{why}", "Vector", "alu")
    acc, p, b = t.view().access(write=True)
    ins["writes"].append(acc)
    ins["_isz"] = 4
    _finish_cost(ins, p, b)
    ins2, _ = _new_instr(f"{api}.{why}", "Vector", "alu")
    ins2["reads"].append(dict(acc))
    ins2["_isz"] = 4
    _finish_cost(ins2, p, b)


def _split_dst(args, kw):
    """(dst or None, the other positional args): dst= anywhere, or first under the new namespace."""
    dst = kw.pop("dst", None)
    if dst is None and _ST is not None and _ST.uses_new_api and args and _is_tile(args[0]):
        dst, args = args[0], args[1:]
    return dst, args


def _writes_dst(f):
    """The new-API form of an ISA call: the result goes into dst. accumulate=True adds into it (PSUM
    accumulation, as `dst += ...` in the old API); None, the default of nc_matmul, overwrites the
    first write of dst and accumulates into it after that (ranges are unrolled in the new API)."""
    @functools.wraps(f)
    def call(*args, **kw):
        dst, args = _split_dst(args, kw)
        accumulate = kw.pop("accumulate", False if dst is None else None)
        r = f(*args, **kw)
        if dst is None:
            return r
        target = _as_view(dst, "dst")
        if accumulate or (accumulate is None and f.__name__ == "nc_matmul" and getattr(target.tensor, "written", False)):
            _accumulate_into(target, r)
        else:
            _write_into(target, r)
        target.tensor.written = True
        return None
    return call


def _memset_dst(f):
    """nisa.memset(dst, value) in the new API; memset(shape, value, dtype) returns a tile in the old."""
    @functools.wraps(f)
    def call(*args, **kw):
        dst, args = _split_dst(args, kw)
        if dst is None:
            return f(*args, **kw)
        value = args[0] if args else kw.get("value", 0)
        _write_into(_as_view(dst, "dst"), value)
        return None
    return call


def _build_modules():
    nl = _Module("neuronxcc.nki.language")
    nisa = _Module("neuronxcc.nki.isa")
    ncc = _Module("neuronxcc.nki.compiler")
    nt = _Module("neuronxcc.nki.typing")
    nki = _Module("neuronxcc.nki")
    consts = _Module("neuronxcc.nki.isa.constants")

    # dtypes
    for n in ("float32", "float16", "int8", "uint8", "int16", "int32", "uint32", "bfloat16", "tfloat32"):
        setattr(nl, n, _DTYPES[n][1])
    nl.bool_ = _DTYPES["uint8"][1]
    nl.float8_e4m3 = nl.float8_e5m2 = nl.float8_e4m3fn = _DTYPES["float8"][1]
    nl.uint16 = _DTYPES["int16"][1]
    # buffers
    nl.sbuf, nl.psum, nl.hbm, nl.private_hbm, nl.shared_hbm = _SBUF, _PSUM, _HBM, _HBM, _SHARED_HBM
    nl.par_dim = lambda n: _ParDim(int(n))
    nl.tile_size = types.SimpleNamespace(pmax=128, psum_fmax=512, gemm_stationary_fmax=128, gemm_moving_fmax=512,
                                         bn_stats_fmax=512, psum_bank_fmax=512, psum_bank_fmax_bytes=2048,
                                         psum_num_banks=8, total_available_sbuf_size=180224,
                                         sbuf_fmax_bytes=180224)

    def ndarray(shape, dtype, *a, buffer=None, name="", address=None, **kw):
        if a:
            buffer = a[0]
        return _ndarray(shape, dtype, buffer, name, address, api="ndarray")

    def zeros(shape, dtype, *a, buffer=None, name="", **kw):
        return _ndarray(shape, dtype, a[0] if a else buffer, name, kw.get("address"), fill=0, api="zeros")

    def ones(shape, dtype, *a, buffer=None, name="", **kw):
        return _ndarray(shape, dtype, a[0] if a else buffer, name, kw.get("address"), fill=1, api="ones")

    def full(shape, fill_value, dtype, *a, buffer=None, name="", **kw):
        return _ndarray(shape, dtype, a[0] if a else buffer, name, kw.get("address"), fill=fill_value, api="full")

    def zeros_like(a, dtype=None, *, buffer=None, name="", **kw):
        return _ndarray(_shape_of(a), dtype or _dtype_of(a), buffer, name, None, fill=0, api="zeros_like")

    def empty_like(a, dtype=None, *, buffer=None, name="", **kw):
        return _ndarray(_shape_of(a), dtype or _dtype_of(a), buffer, name, None, api="empty_like")

    nl.ndarray, nl.zeros, nl.ones, nl.full, nl.zeros_like, nl.empty_like = ndarray, zeros, ones, full, zeros_like, empty_like

    def shared_constant(constant, dtype=None):
        shape = getattr(constant, "shape", None) or (len(constant),)
        t = _ndarray(tuple(shape), dtype or nl.float32, _SHARED_HBM, "", None, api="shared_constant")
        t.role = "input"
        return t

    nl.shared_constant = shared_constant
    nl.shared_identity_matrix = lambda n, dtype=None: shared_constant(types.SimpleNamespace(shape=(n, n)),
                                                                       dtype or nl.uint8)

    # loops
    nl.affine_range = _range_of("affine_range", "affine")
    nl.sequential_range = _range_of("sequential_range", "sequential")
    nl.static_range = _static_range

    # indices
    def arange(*args):
        if len(args) == 1:
            start, stop = 0, args[0]
        elif len(args) == 2:
            start, stop = args
        else:
            _fail("nl.arange expects (stop) or (start, stop)")
        if not (_is_int(start) and _is_int(stop)) or stop <= start:
            _fail(f"nl.arange({start}, {stop}) needs constant bounds with start < stop")
        _ST_AR.append({"n": int(stop) - int(start), "start": int(start), "axis": 0, "ndim": 1})
        return Sym(0, {("A", len(_ST_AR) - 1): 1})

    nl.arange = arange

    class _MGridMaker:
        def __getitem__(self, key):
            if not isinstance(key, tuple):
                key = (key,)
            vecs = []
            for ax, k in enumerate(key):
                if not isinstance(k, slice) or k.step not in (None, 1):
                    _fail("nl.mgrid expects slices like nl.mgrid[0:128, 0:512]")
                s = arange(k.start or 0, k.stop)
                _ST_AR[-1]["axis"] = ax
                _ST_AR[-1]["ndim"] = len(key)
                vecs.append(s)
            return _MGrid(vecs)

    nl.mgrid = _MGridMaker()
    nl.ds = lambda start, size: _DS(start, size)

    # SPMD
    def program_id(axis=0):
        if axis < len(_ST.spmd):
            return Sym(0, {("L", _ST.spmd[axis]): 1})
        return 0

    nl.program_id = program_id
    nl.num_programs = lambda axes=None: (math.prod(_ST.loops[l][1] for l in _ST.spmd) if axes is None
                                         else _ST.loops[_ST.spmd[axes]][1] if axes < len(_ST.spmd) else 1)
    nl.program_ndim = lambda: len(_ST.spmd)
    nl.nc = lambda n: n
    nl.spmd_dim = lambda *a: a[0] if a else 1

    # DMA
    def load(src, *, mask=None, dtype=None, **kw):
        ins, line = _new_instr("load", "DMA", "dma")
        _guard(ins, mask)
        v = _as_view(src, "load source")
        if mask is not None:
            v = View(v.tensor, v.dims, mask)
        _read(ins, v, allow_hbm=True)
        return _result(ins, line, "nl.load", v.shape, _dtype_name(dtype) if dtype else v.dtype)

    def load_transpose2d(src, *, mask=None, dtype=None, **kw):
        ins, line = _new_instr("load_transpose2d", "DMA", "dma")
        _guard(ins, mask)
        v = _as_view(src, "load source")
        if mask is not None:
            v = View(v.tensor, v.dims, mask)
        _read(ins, v, allow_hbm=True)
        s = tuple(v.shape)
        return _result(ins, line, "nl.load_transpose2d", s[::-1] if len(s) == 2 else s, _dtype_name(dtype) if dtype else v.dtype)

    def store(dst, value, *, mask=None, **kw):
        ins, line = _new_instr("store", "DMA", "dma")
        _guard(ins, mask)
        _, p, b = _read(ins, value)
        d = _as_view(dst, "store destination")
        if mask is not None:
            d = View(d.tensor, d.dims, mask)
        acc, _, _ = d.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = 1
        _finish_cost(ins, p, b)

    nl.load, nl.store, nl.load_transpose2d = load, store, load_transpose2d

    def dma_copy(*args, dst=None, src=None, mask=None, **kw):
        if args:  # new API: dma_copy(dst, src)
            dst, src = (args + (None, None))[:2] if len(args) >= 2 else (args[0], src)
        if dst is None or src is None:
            _fail("nisa.dma_copy needs dst= and src=")
        ins, line = _new_instr("dma_copy", "DMA", "dma")
        _guard(ins, mask)
        _, p, b = _read(ins, src, allow_hbm=True)
        d = _as_view(dst, "dma_copy destination")
        acc, _, _ = d.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = 1
        _finish_cost(ins, p, b)

    nisa.dma_copy = dma_copy

    def dma_transpose(src, *, axes=None, mask=None, dtype=None, **kw):
        ins, line = _new_instr("dma_transpose", "DMA", "dma")
        _guard(ins, mask)
        v, _, _ = _read(ins, src, "source", allow_hbm=True)
        s = tuple(v.shape)
        out = tuple(s[a] for a in axes) if axes is not None else s[::-1]
        return _result(ins, line, "nisa.dma_transpose", out, _dtype_name(dtype) if dtype else v.dtype)

    def atomic_rmw(dst, value, op=None, *, mask=None, **kw):
        # A read-modify-write of an HBM slice by DMA: reads the value tile and the destination.
        ins, line = _new_instr("atomic_rmw", "DMA", "dma")
        _guard(ins, mask)
        _, p, b = _read(ins, value)
        d = _as_view(dst, "atomic_rmw destination")
        _read(ins, d, allow_hbm=True)
        acc, _, _ = d.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = 1
        _finish_cost(ins, p, b)

    nisa.dma_transpose, nl.atomic_rmw = dma_transpose, atomic_rmw

    # Tensor engine
    def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
                  mask=None, **kw):
        ins, line = _new_instr("nc_matmul", "Tensor", "matmul")
        _guard(ins, mask)
        s, _, _ = _read(ins, stationary, "stationary")
        m, _, _ = _read(ins, moving, "moving")
        ss, ms = tuple(s.shape), tuple(m.shape)
        if len(ss) != 2 or len(ms) != 2:
            _fail(f"nc_matmul expects 2-D tiles, got {list(ss)} and {list(ms)}")
        if ss[0] != ms[0]:
            _fail(f"nc_matmul contraction dims differ: stationary {list(ss)}, moving {list(ms)}")
        if ss[1] > 128 or ms[1] > 512:
            _fail(f"nc_matmul tile too large: stationary free {ss[1]} (max 128), moving free {ms[1]} (max 512)")
        ins["_stat_n"] = ss[1]
        ins["_fp32"] = s.dtype == "float32"
        return _result(ins, line, "nisa.nc_matmul", (ss[1], ms[1]), "float32", "psum")

    nisa.nc_matmul = nc_matmul

    def matmul(x, y, *, transpose_x=False, mask=None, **kw):
        if not transpose_x:
            _hidden("matmul", "transpose")
        ins, line = _new_instr("matmul", "Tensor", "matmul")
        a, _, _ = _read(ins, x, "x")
        b, _, _ = _read(ins, y, "y")
        sa, sb = tuple(a.shape), tuple(b.shape)
        m = sa[1] if transpose_x else sa[0]
        ins["_stat_n"] = m
        ins["_fp32"] = a.dtype == "float32"
        return _result(ins, line, "nl.matmul", (m, sb[1]), "float32", "psum")

    nl.matmul = matmul

    def nc_transpose(data, *, mask=None, dtype=None, engine=None, **kw):
        v = _as_view(data, "data")
        s = tuple(v.shape)
        eng = _kw_engine({"engine": engine}, "Tensor" if max(s) > 32 else "Vector")
        if eng == "Tensor":
            _hidden("nc_transpose", "identity")
        ins, line = _new_instr("nc_transpose", eng, "transpose_pe" if eng == "Tensor" else "alu")
        _read(ins, v)
        return _result(ins, line, "nisa.nc_transpose", s[::-1], _dtype_name(dtype) if dtype else v.dtype,
                       "psum" if eng == "Tensor" else "sbuf")

    nisa.nc_transpose = nc_transpose

    # Scalar engine
    def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, mask=None,
                   dtype=None, **kw):
        if bias is None and _ST.direct():
            _hidden("activation", "bias")
        ins, line = _new_instr("activation", "Scalar", "alu")
        _guard(ins, mask)
        v, _, _ = _read(ins, data, "data")
        for o in (bias, scale):
            if _is_tile(o):
                _read(ins, o, "bias/scale")
        if reduce_res is not None:
            rr = _as_view(reduce_res, "reduce_res")
            acc, _, _ = rr.access(write=True)
            ins["writes"].append(acc)
        return _result(ins, line, "nisa.activation", v.shape, _dtype_name(dtype) if dtype else v.dtype)

    nisa.activation = activation
    nisa.activation_reduce = lambda op, data, *, reduce_op=None, reduce_res=None, bias=None, scale=1.0, **kw: \
        activation(op, data, bias=bias, scale=scale, reduce_res=reduce_res, **kw)

    def _act_fn(name):
        def f(x, *a, dtype=None, mask=None, bias=None, **kw):
            if bias is None and _ST.direct() and name == "exp":
                _hidden(name, "bias")
            ops = [x] + [o for o in a if _is_tile(o)]
            if _is_tile(bias):
                ops.append(bias)
            return _alu(f"nl.{name}", *ops, engine="Scalar", dtype=dtype, mask=mask)
        f.__name__ = name
        return f

    for n in ("exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_dx", "silu", "silu_dx", "erf",
              "erf_dx", "mish", "softplus", "sqrt", "rsqrt", "square", "sin", "cos", "arctan", "abs", "sign",
              "reciprocal", "negative", "ceil", "floor", "trunc"):
        setattr(nl, n, _act_fn(n))
    nl.copy = lambda x, dtype=None, mask=None, **kw: _alu("nl.copy", x, dtype=dtype, mask=mask)

    def _bin_fn(name):
        def f(x, y=None, *a, dtype=None, mask=None, **kw):
            ops = [o for o in (x, y) if o is not None]
            if not any(_is_tile(o) for o in ops):
                _fail(f"nl.{name}: expected a tile operand")
            return _alu(f"nl.{name}", *ops, dtype=dtype, mask=mask)
        f.__name__ = name
        return f

    for n in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "greater",
              "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
              "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "fmod", "mod", "invert", "logical_not",
              "where"):
        setattr(nl, n, _bin_fn(n))

    def _reduce_fn(name):
        def f(x, axis=None, *a, dtype=None, keepdims=False, mask=None, **kw):
            v = _as_view(x, "x")
            shape = list(v.shape)
            axes = axis if isinstance(axis, (tuple, list)) else (axis,) if axis is not None else tuple(range(1, len(shape)))
            if 0 in [a % max(len(shape), 1) for a in axes]:
                _fail(f"nl.{name} reduces free axes only, not the partition axis")
            out = [1 if i in axes else s for i, s in enumerate(shape)] if keepdims else \
                [s for i, s in enumerate(shape) if i not in axes]
            if len(out) < 2:
                out = out + [1] * (2 - len(out))
            return _alu(f"nl.{name}", x, dtype=dtype, shape=tuple(out), kind="reduce", mask=mask)
        f.__name__ = name
        return f

    for n in ("sum", "max", "min", "mean", "prod", "all", "var"):
        setattr(nl, n, _reduce_fn(n))

    def softmax(x, axis=-1, dtype=None, **kw):
        _hidden("softmax", "composite")
        return _alu("nl.softmax", x, dtype=dtype)

    def rms_norm(x, w=None, axis=-1, n=None, epsilon=1e-6, dtype=None, **kw):
        _hidden("rms_norm", "composite")
        return _alu("nl.rms_norm", *[o for o in (x, w) if _is_tile(o)], dtype=dtype, shape=_shape_of(x))

    def transpose(x, dtype=None, **kw):
        _hidden("transpose", "identity")
        v = _as_view(x, "x")
        return _alu("nl.transpose", x, engine="Tensor", kind="transpose_pe", dtype=dtype,
                    shape=tuple(v.shape)[::-1], out_psum=True)

    def broadcast_to(x, shape, **kw):
        return _alu("nl.broadcast_to", x, shape=tuple(shape))

    nl.softmax, nl.rms_norm, nl.transpose, nl.broadcast_to = softmax, rms_norm, transpose, broadcast_to

    def loop_reduce(x, op=None, loop_indices=(), *, dtype=None, mask=None, **kw):
        # Reduces x over iterations of the given loops into one tile (the loop body runs once here:
        # one instruction reading x and writing the result each iteration).
        return _alu("nl.loop_reduce", x, dtype=dtype, mask=mask)

    def rand(shape, dtype=None, **kw):
        ins, line = _new_instr("rand", "GpSimd", "gpsimd")
        return _result(ins, line, "nl.rand", tuple(shape), _dtype_name(dtype) if dtype is not None else "float32")

    nl.loop_reduce, nl.rand = loop_reduce, rand
    nl.device_print = lambda *a, **kw: None  # a debug print: no instruction of the kernel's own

    # Vector / GpSimd ISA
    def tensor_tensor(data1, data2, op=None, *, dtype=None, mask=None, engine=None, **kw):
        return _alu("nisa.tensor_tensor", data1, data2, engine=_kw_engine({"engine": engine}, "Vector"), dtype=dtype,
                    mask=mask)

    def tensor_scalar(data, op0=None, operand0=None, reverse0=False, op1=None, operand1=None, reverse1=False, *,
                      dtype=None, mask=None, engine=None, **kw):
        return _alu("nisa.tensor_scalar", data, operand0, operand1, engine=_kw_engine({"engine": engine}, "Vector"),
                    dtype=dtype, shape=_shape_of(data), mask=mask)

    def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kw):
        v = _as_view(data, "data")
        shape = list(v.shape)
        axes = axis if isinstance(axis, (tuple, list)) else (axis,)
        out = [1 if i in axes else s for i, s in enumerate(shape)] if keepdims else \
            [s for i, s in enumerate(shape) if i not in axes]
        if len(out) < 2:
            out += [1] * (2 - len(out))
        return _alu("nisa.tensor_reduce", data, dtype=dtype, shape=tuple(out), kind="reduce")

    def tensor_copy(src, *, mask=None, dtype=None, engine=None, **kw):
        return _alu("nisa.tensor_copy", src, engine=_kw_engine({"engine": engine}, "Vector"), dtype=dtype, mask=mask)

    def memset(shape, value, dtype, *, mask=None, engine=None, **kw):
        ins, line = _new_instr("memset", _kw_engine({"engine": engine}, "Vector"), "memset")
        return _result(ins, line, "nisa.memset", tuple(shape), _dtype_name(dtype))

    def iota(expr, dtype, *, mask=None, **kw):
        ins, line = _new_instr("iota", "GpSimd", "gpsimd")
        shape = None
        s = Sym.of(expr) if not isinstance(expr, _MGrid) else None
        if isinstance(s, Sym):
            axes = {}
            for k in s.t:
                if k[0] == "A":
                    axes[_ST_AR[k[1]]["axis"]] = _ST_AR[k[1]]["n"]
            # An axis no arange spans has size 1: arange(n)[None, :] is one partition of n elements.
            shape = tuple(axes.get(a, 1) for a in range(max(axes) + 1)) if axes else None
        if not shape:
            _fail("nisa.iota expects an expression of nl.arange vectors")
        if len(shape) < 2:
            shape = shape + (1,)
        return _result(ins, line, "nisa.iota", shape, _dtype_name(dtype))

    def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kw):
        return _alu("nisa.affine_select", on_true_tile, engine="GpSimd", kind="gpsimd", dtype=dtype)

    def bn_stats(data, *, mask=None, dtype=None, **kw):
        v = _as_view(data, "data")
        return _alu("nisa.bn_stats", data, dtype=dtype, shape=(v.shape[0], 6))

    def bn_aggr(data, *, mask=None, dtype=None, **kw):
        v = _as_view(data, "data")
        return _alu("nisa.bn_aggr", data, dtype=dtype, shape=(v.shape[0], 2), kind="bn_aggr")

    def reciprocal(data, *, mask=None, dtype=None, **kw):
        return _alu("nisa.reciprocal", data, dtype=dtype, kind="reciprocal")

    def tensor_scalar_reduce(*, data, op0=None, operand0=None, reduce_op=None, reduce_res=None, dtype=None, **kw):
        p = _alu("nisa.tensor_scalar_reduce", data, operand0, dtype=dtype, kind="tsr", shape=_shape_of(data))
        if reduce_res is not None:
            acc, _, _ = _as_view(reduce_res, "reduce_res").access(write=True)
            p.instr["writes"].append(acc)
        return p

    def scalar_tensor_tensor(*, data, op0=None, operand0=None, op1=None, operand1=None, dtype=None, **kw):
        return _alu("nisa.scalar_tensor_tensor", data, operand0, operand1, dtype=dtype, shape=_shape_of(data))

    def tensor_tensor_scan(data0, data1, initial, op0=None, op1=None, *, dtype=None, **kw):
        return _alu("nisa.tensor_tensor_scan", data0, data1, initial, dtype=dtype, kind="scan", shape=_shape_of(data0))

    def dropout(data, prob, *, mask=None, dtype=None, **kw):
        return _alu("nisa.dropout", data, prob, dtype=dtype, mask=mask, shape=_shape_of(data))

    def nc_stream_shuffle(*args, src=None, dst=None, shuffle_mask=None, dtype=None, mask=None, **kw):
        # Old API (src, dst, shuffle_mask); the new API puts dst first, as for every instruction.
        pos = list(args) + [None] * 2
        if pos[0] is not None:
            a, b = (pos[0], pos[1]) if not _ST.uses_new_api else (pos[1], pos[0])
            src, dst = src if src is not None else a, dst if dst is not None else b
        if src is None or dst is None:
            _fail("nisa.nc_stream_shuffle needs src and dst")
        r = _alu("nisa.nc_stream_shuffle", src, dtype=dtype, mask=mask)
        _write_into(_as_view(dst, "dst"), r)

    def range_select(*, on_true_tile, bound0=None, bound1=None, reduce_res=None, mask=None, dtype=None, **kw):
        # Keeps the elements whose free index lies within [bound0, bound1] (per-partition bounds).
        p = _alu("nisa.range_select", on_true_tile, bound0, bound1, dtype=dtype, mask=mask, shape=_shape_of(on_true_tile))
        if reduce_res is not None:
            acc, _, _ = _as_view(reduce_res, "reduce_res").access(write=True)
            p.instr["writes"].append(acc)
        return p

    def select_reduce(*, dst, predicate, on_true, on_false=None, reduce_res=None, mask=None, dtype=None, **kw):
        r = _alu("nisa.select_reduce", predicate, on_true, on_false, dtype=dtype, mask=mask, shape=_shape_of(dst))
        if reduce_res is not None:
            acc, _, _ = _as_view(reduce_res, "reduce_res").access(write=True)
            r.instr["writes"].append(acc)
        _write_into(_as_view(dst, "dst"), r)

    def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None, **kw):
        # Gathers elements of each partition's data by runtime indices (GpSimd): reads all of both.
        idx = _as_view(index, "index")
        shape = tuple(idx.shape[:-1]) + (idx.shape[-1] * int(num_elem_per_idx),)
        return _alu("nisa.local_gather", src_buffer, index, engine="GpSimd", kind="gpsimd", mask=mask,
                    dtype=_dtype_of(src_buffer), shape=shape)

    def copy_dynamic(api):
        def f(*, dst, src, mask=None, dtype=None, **kw):
            # The runtime offset is unknown when tracing: the whole source and destination views.
            r = _alu(api, src, dtype=dtype, mask=mask, shape=_shape_of(dst))
            _write_into(_as_view(dst, "dst"), r)
        return f

    nisa.range_select, nisa.select_reduce, nisa.local_gather = range_select, select_reduce, local_gather
    nisa.tensor_copy_dynamic_src = copy_dynamic("nisa.tensor_copy_dynamic_src")
    nisa.tensor_copy_dynamic_dst = copy_dynamic("nisa.tensor_copy_dynamic_dst")

    def tensor_copy_predicated(*, src, dst, predicate, mask=None, dtype=None, reverse_pred=False, **kw):
        # Writes src where predicate holds: reads the predicate and the destination's old values too.
        r = _alu("nisa.tensor_copy_predicated", src, predicate, dst, dtype=dtype, mask=mask, shape=_shape_of(dst))
        _write_into(_as_view(dst, "dst"), r)

    nisa.dropout, nisa.nc_stream_shuffle, nisa.tensor_copy_predicated = dropout, nc_stream_shuffle, tensor_copy_predicated

    def tensor_partition_reduce(op, data, *, dtype=None, **kw):
        v = _as_view(data, "data")
        return _alu("nisa.tensor_partition_reduce", data, engine="GpSimd", kind="gpsimd", dtype=dtype,
                    shape=(1,) + tuple(v.shape[1:]))

    for n, f in (("tensor_tensor", tensor_tensor), ("tensor_scalar", tensor_scalar), ("tensor_reduce", tensor_reduce),
                 ("tensor_copy", tensor_copy), ("memset", memset), ("iota", iota), ("affine_select", affine_select),
                 ("bn_stats", bn_stats), ("bn_aggr", bn_aggr), ("reciprocal", reciprocal),
                 ("tensor_scalar_reduce", tensor_scalar_reduce), ("scalar_tensor_tensor", scalar_tensor_tensor),
                 ("tensor_tensor_scan", tensor_tensor_scan), ("tensor_partition_reduce", tensor_partition_reduce),
                 ("activation", activation)):
        setattr(nisa, n, f)
    # New API (API.md §10): every instruction takes dst first (or dst=), writes it and returns nothing.
    for n in ("nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_tensor", "tensor_scalar",
              "tensor_reduce", "tensor_copy", "iota", "affine_select", "bn_stats", "bn_aggr", "reciprocal",
              "tensor_scalar_reduce", "scalar_tensor_tensor", "tensor_tensor_scan", "tensor_partition_reduce"):
        setattr(nisa, n, _writes_dst(getattr(nisa, n)))
    nisa.memset = _memset_dst(nisa.memset)
    for n in ("tensor", "vector", "scalar", "gpsimd", "dma", "unknown"):
        setattr(nisa, f"{n}_engine", _Engine(n))
    nisa.engine = types.SimpleNamespace(tensor=nisa.tensor_engine, vector=nisa.vector_engine,
                                        scalar=nisa.scalar_engine, gpsimd=nisa.gpsimd_engine, dma=nisa.dma_engine,
                                        unknown=nisa.unknown_engine)
    nisa.nc_version = types.SimpleNamespace(gen2="gen2", gen3="gen3")
    nisa.get_nc_version = lambda: "gen2"
    nisa.reduce_cmd = types.SimpleNamespace(idle=0, reset=1, reduce=2, reset_reduce=3)
    nisa.oob_mode = types.SimpleNamespace(error=0, skip=1)
    nisa.constants = consts
    consts.oob_mode = nisa.oob_mode
    # ALU op names used as op= values: numpy ufuncs are accepted as they are; nl.* functions too.

    # compiler (allocation)
    class _SbufNS:
        buffer = "sbuf"

        def auto_alloc(self):
            return _SBUF

        def alloc(self, func):
            if not callable(func):
                _fail("ncc.sbuf.alloc expects a callable (idx, pdim_size, fdim_size) -> (start_partition, byte_addr)")
            return _Alloc("sbuf", "func", func=func)

        def mod_alloc(self, *, base_addr=None, base_partition=0, num_par_tiles=(), num_free_tiles=(), byte_addr=None,
                      **kw):
            if kw:
                _fail(f"ncc.sbuf.mod_alloc: unknown argument {sorted(kw)[0]!r}")
            if base_addr is None:
                base_addr = byte_addr if byte_addr is not None else 0
            return _Alloc("sbuf", "mod_alloc", base_addr=_int_arg(base_addr, "base_addr"),
                          base_partition=_int_arg(base_partition, "base_partition"),
                          num_par_tiles=_tuple_arg(num_par_tiles, "num_par_tiles"),
                          num_free_tiles=_tuple_arg(num_free_tiles, "num_free_tiles"))

    class _PsumNS:
        buffer = "psum"

        def auto_alloc(self):
            return _PSUM

        def alloc(self, func):
            if not callable(func):
                _fail("ncc.psum.alloc expects a callable (idx, pdim_size, fdim_size) -> (bank, start_partition, byte_addr)")
            return _Alloc("psum", "func", func=func)

        def mod_alloc(self, *, base_bank=0, base_addr=0, base_partition=0, num_bank_tiles=(), num_par_tiles=(),
                      num_free_tiles=(), **kw):
            if kw:
                _fail(f"ncc.psum.mod_alloc: unknown argument {sorted(kw)[0]!r}")
            return _Alloc("psum", "mod_alloc", base_bank=_int_arg(base_bank, "base_bank"),
                          base_addr=_int_arg(base_addr, "base_addr"),
                          base_partition=_int_arg(base_partition, "base_partition"),
                          num_bank_tiles=_tuple_arg(num_bank_tiles, "num_bank_tiles"),
                          num_par_tiles=_tuple_arg(num_par_tiles, "num_par_tiles"),
                          num_free_tiles=_tuple_arg(num_free_tiles, "num_free_tiles"))

    ncc.sbuf = _SbufNS()
    ncc.psum = _PsumNS()

    def _passthrough_decorator(func=None, **kw):
        if func is None:
            return lambda f: f
        return func

    for n in ("skip_middle_end_transformations", "enable_stack_allocator", "force_auto_alloc"):
        setattr(ncc, n, _passthrough_decorator)
    ncc.multi_buffer = lambda factor=2: None
    ncc.no_reorder = lambda: None
    ncc.allocation_scope = lambda: _NullCtx()

    # nki root
    def jit(func=None, mode="auto", **kw):
        if isinstance(func, str):  # @nki.jit("trace")
            func, mode = None, func
        if func is None:
            return lambda f: _Kernel(f, mode == "trace")
        return _Kernel(func, mode == "trace")

    nki.jit = jit
    nki.trace = jit
    nki.baremetal = jit
    nki.benchmark = lambda kernel=None, **kw: (lambda f: _Kernel(f)) if kernel is None else _Kernel(kernel)
    nki.profile = nki.benchmark
    nki.simulate_kernel = lambda kernel, *a, **kw: _fail("nki.simulate_kernel runs a kernel; trace it instead")
    nki.language, nki.isa, nki.compiler, nki.typing = nl, nisa, ncc, nt
    nt.tensor = _AnyType()
    nt.mutable_tensor = _AnyType()
    return {"": nki, "language": nl, "isa": nisa, "compiler": ncc, "typing": nt, "isa.constants": consts}


class _AnyType:
    def __getitem__(self, k):
        return self

    def __call__(self, *a, **k):
        return self


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _Kernel:
    """What @nki.jit returns: the function, callable, with kernel[grid] giving an SPMD launch."""

    def __init__(self, func, sub=False):
        self.func = func
        self.grid = ()
        self.sub = sub  # @nki.jit(mode="trace"): a sub-kernel another kernel calls
        functools.update_wrapper(self, func)

    def __getitem__(self, grid):
        k = _Kernel(self.func, self.sub)
        k.grid = tuple(int(g) for g in (grid if isinstance(grid, tuple) else (grid,)))
        return k

    def __call__(self, *a, **kw):
        return self.func(*a, **kw)


def _int_arg(v, name):
    if not _is_int(v):
        _fail(f"{name} must be an integer, got {v!r}")
    return int(v)


def _tuple_arg(v, name):
    if _is_int(v):
        v = (v,)
    try:
        out = [int(x) for x in v]
    except Exception:
        _fail(f"{name} must be a tuple of integers, got {v!r}")
    if any(x < 1 for x in out):
        _fail(f"{name} entries must be positive, got {v!r}")
    return out


def _direct():
    return any(t.alloc.kind not in ("auto", "shared_hbm", "private_hbm", "input") and t.buffer != "hbm"
               for t in _ST.tensors)


_State.direct = lambda self: _direct()


# ---------------------------------------------------------------------------------------------
# Driving a trace

_MODULE_NAMES = ["neuronxcc", "neuronxcc.nki", "neuronxcc.nki.language", "neuronxcc.nki.isa",
                 "neuronxcc.nki.compiler", "neuronxcc.nki.typing", "neuronxcc.nki.isa.constants",
                 "nki", "nki.language", "nki.isa", "nki.compiler", "nki.typing", "nki.isa.constants"]


class _Installed:
    """Stand-ins in sys.modules for the duration of a trace; whatever was there is restored."""

    def __init__(self, mods, kernel_module=None):
        self.mods = mods
        self.kernel_module = kernel_module
        self.saved = {}

    def __enter__(self):
        root_old = _Module("neuronxcc")
        root_old.nki = self.mods[""]
        table = {"neuronxcc": root_old}
        if self.kernel_module is not None:  # @dataclass looks its class's module up in sys.modules
            table[self.kernel_module.__name__] = self.kernel_module
        for ns in ("neuronxcc.nki", "nki"):
            for k, m in self.mods.items():
                table[ns + ("." + k if k else "")] = _NsProxy(m, ns) if ns == "nki" else m
        for name, m in table.items():
            self.saved[name] = sys.modules.get(name)
            sys.modules[name] = m
        return self

    def __exit__(self, *a):
        for name, m in self.saved.items():
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m
        return False


class _NsProxy(types.ModuleType):
    """The new namespace (`import nki`): same stand-ins; importing it switches ranges to Python
    ranges (NKI 0.2+ semantics)."""

    def __init__(self, mod, ns):
        super().__init__(mod.__name__.replace("neuronxcc.nki", "nki"))
        object.__setattr__(self, "_mod", mod)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if _ST is not None:
            _ST.uses_new_api = True
            _ST.unroll_all = True
        v = getattr(self._mod, name)
        if isinstance(v, _Module):
            return _NsProxy(v, "nki")
        return v


class _OldMarker:
    pass


def stand_ins():
    """Context manager with the stand-in NKI modules installed, so that a file of kernels can be
    imported (``with stand_ins(): import my_kernels``) and ``trace(my_kernels.add[2, 2], ...)``
    called on its objects; each trace re-reads the kernel's file."""
    return _Installed(_build_modules())


def parse_input(text):
    """'q=1x128x4096:bf16' -> ('q', (1, 128, 4096), 'bfloat16')."""
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*([0-9]+(?:x[0-9]+)*)\s*(?::\s*([A-Za-z0-9_]+))?\s*", text)
    if not m:
        raise TraceError(f"--input {text!r}: expected NAME=D0xD1x...:DTYPE (e.g. q=1x128x4096:bf16)")
    shape = tuple(int(x) for x in m.group(2).split("x"))
    if any(s <= 0 for s in shape):
        raise TraceError(f"--input {text!r}: dimensions must be positive")
    dt = m.group(3) or "float32"
    n = _ALIASES.get(dt, dt)
    if n not in _DTYPES or n == "bool_":
        raise TraceError(f"--input {text!r}: unknown dtype {dt!r}")
    return m.group(1), shape, n


def _load_source(path):
    try:
        with open(path, encoding="utf-8") as f:
            src = f.read()
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror}") from None
    try:
        tree = ast.parse(src, filename=path)
    except SyntaxError as e:
        raise TraceError(f"{os.path.basename(path)}:{e.lineno}: syntax error: {e.msg}") from None
    tree = _RangeRewriter().visit(tree)
    ast.fix_missing_locations(tree)
    try:
        return src, compile(tree, path, "exec")
    except SyntaxError as e:  # what the parser lets through and the compiler does not ('return' outside a function)
        msg = f"{os.path.basename(path)}:{e.lineno}: syntax error: {e.msg}"
    raise TraceError(msg)


def _input_spec(x, name):
    """An input: (shape, dtype) tuple, 'AxB:dtype' text, or anything with .shape/.dtype."""
    if isinstance(x, str):
        _, shape, dt = parse_input(f"{name}={x}")
        return shape, dt
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], (tuple, list)):
        return tuple(int(s) for s in x[0]), _dtype_name(x[1], "input dtype")
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        dt = x.dtype
        name_ = str(dt).replace("torch.", "")
        return tuple(int(s) for s in x.shape), _dtype_name(_ALIASES.get(name_, name_), "input dtype")
    return None


def trace(kernel, *inputs, grid=None, hardware=None, cycle_model=None, name=None, **kwargs):
    """Traces ``kernel`` (a function defined in a file, a @nki.jit object, or ``"file.py[:func]"``)
    on HBM inputs given as shapes and dtypes (``((1, 128, 4096), "bf16")``, ``"1x128x4096:bf16"``
    or objects with ``.shape``/``.dtype``); other arguments are passed through as Python values.
    Returns the kernel model (a dict in the JSON format of docs/nki.md). ``grid`` (or
    ``kernel[g]``) launches SPMD instances, traced as one symbolic instance inside a loop per grid
    dim. ``hardware`` (a dict or a path) sets the hardware and its cycle model."""
    path, fname = None, None
    if isinstance(kernel, (str, os.PathLike)):
        s = os.fspath(kernel)
        m = re.fullmatch(r"(.*?\.py)(?::([A-Za-z_]\w*))?", s)
        if not m:
            raise TraceError(f"{s}: expected FILE.py or FILE.py:FUNCTION")
        path, fname = m.group(1), m.group(2)
    else:
        if isinstance(kernel, _Kernel) or hasattr(kernel, "func") and hasattr(kernel, "grid"):
            if grid is None and kernel.grid:
                grid = kernel.grid
            kernel = kernel.func
        func = getattr(kernel, "__wrapped__", kernel)
        code = getattr(func, "__code__", None)
        if code is None:
            raise TraceError(f"<kernel>: expected a kernel function or FILE.py[:FUNCTION], got {type(kernel).__name__}")
        path, fname = code.co_filename, func.__name__
    return _trace_path(os.path.abspath(path), fname, inputs, kwargs, grid, hardware, cycle_model, name)


def _hardware_doc(hardware):
    if hardware is None:
        return None
    if isinstance(hardware, (str, os.PathLike)):
        try:
            with open(hardware, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise TraceError(f"{hardware}: cannot read the hardware file: {e}") from None
    return dict(hardware)


def _trace_path(path, fname, inputs, kwargs, grid, hardware, cycle_model, name):
    global _ST
    hw = _hardware_doc(hardware)
    cm = dict(DEFAULT_CYCLE_MODEL)
    if isinstance(hw, dict) and isinstance(hw.get("cycle_model"), dict):
        cm.update(hw["cycle_model"])
    if cycle_model:
        for k in cycle_model:
            if k not in DEFAULT_CYCLE_MODEL:
                raise TraceError(f"cycle_model: unknown entry {k!r} (known: {', '.join(DEFAULT_CYCLE_MODEL)})")
        cm.update(cycle_model)
    if _ST is not None:
        raise TraceError("trace() is not re-entrant")
    label = os.path.basename(path)
    src, code = _load_source(path)
    mods = _build_modules()
    st = _State(path, cm)
    _ST = st
    _ST_AR.clear()
    try:
        kmod = types.ModuleType("__sp_kernel__")
        with _Installed(mods, kmod):
            g = kmod.__dict__
            g.update({"__file__": path, "__sp_range__": _sp_range, "__sp_if__": _Branch,
                      "__builtins__": __builtins__})
            try:
                exec(code, g)
            except TraceError:
                raise
            except Exception as e:
                raise TraceError(_located(e, label, path, "while loading the kernel file")) from None
            cands = {k: v for k, v in g.items() if isinstance(v, _Kernel)}
            if any(not v.sub for v in cands.values()):  # sub-kernels (mode="trace") are not entry points
                cands = {k: v for k, v in cands.items() if not v.sub}
            if fname is None:
                if len(cands) != 1:
                    raise TraceError(f"{label}: {'no' if not cands else 'several'} @nki.jit kernels "
                                     f"({', '.join(sorted(cands)) or 'none'}); name one as {label}:FUNCTION")
                fname = next(iter(cands))
            obj = g.get(fname)
            if obj is None:
                raise TraceError(f"{label}: no function {fname!r} in the file")
            kgrid = ()
            if isinstance(obj, _Kernel):
                kgrid = obj.grid
                obj = obj.func
            if not callable(obj):
                raise TraceError(f"{label}: {fname!r} is not a function")
            if grid is not None:
                kgrid = tuple(int(x) for x in (grid if isinstance(grid, (tuple, list)) else (grid,)))
            if any(x <= 0 for x in kgrid):
                raise TraceError(f"{label}: grid dims must be positive, got {list(kgrid)}")
            st.uses_old_api = not st.uses_new_api
            if _imports_new_namespace(src):
                st.unroll_all = True
                st.uses_new_api = True
                st.uses_old_api = False
            # kernel arguments
            import inspect
            sig = inspect.signature(obj)
            params = sig.parameters
            if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
                for n in kwargs:
                    if n not in params:
                        raise TraceError(f"{label}: {fname} has no parameter {n!r} (parameters: "
                                         f"{', '.join(params) or 'none'})")
            try:
                bound = sig.bind(*inputs, **kwargs)
            except TypeError as e:
                raise TraceError(f"{label}: arguments do not match {fname}{inspect.signature(obj)}: {e}") from None
            args = {}
            for pname, val in bound.arguments.items():
                spec = _input_spec(val, pname)
                if spec is not None:
                    shape, dt = spec
                    t = Tensor(_unique(pname), shape, dt, _Alloc("hbm", "input"), role="input",
                               source=f"{label}:{obj.__code__.co_firstlineno}")
                    _register(t)
                    args[pname] = t
                else:
                    args[pname] = val
            # SPMD: one symbolic instance inside a loop per grid dim
            outer = []
            for gi, gd in enumerate(kgrid):
                lid = len(st.loops)
                st.loops.append((f"pid{gi}", gd, "spmd"))
                node = {"loop": f"pid{gi}", "trip": gd, "kind": "spmd", "body": []}
                st.stack[-1].append(node)
                st.stack.append(node["body"])
                st.loop_scope.append(lid)
                st.spmd.append(lid)
                outer.append(node)
            try:
                ret = obj(**args)
            except TraceError:
                raise
            except RecursionError:
                raise TraceError(f"{label}: recursion too deep while tracing") from None
            except Exception as e:
                raise TraceError(_located(e, label, path, f"while tracing {fname}")) from None
            # A result never stored anywhere still executes and needs a tile of its own.
            for p in st.pendings:
                if p.tensor is None and "_cost" in p.instr:
                    p.materialize()
            for t in _returned_tensors(ret):
                if t.buffer == "hbm" and t.role != "input":
                    t.role = "output"
    finally:
        _ST = None
    return _to_json(st, hw, name or f"{label}:{fname}")


def _imports_new_namespace(src):
    return bool(re.search(r"^\s*(import\s+nki\b|from\s+nki\b)", src, re.M))


def _returned_tensors(ret):
    if isinstance(ret, Tensor):
        return [ret]
    if isinstance(ret, (tuple, list)):
        return [t for r in ret for t in _returned_tensors(r)]
    return []


def _located(e, label, path, what):
    tb = e.__traceback__
    line = None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"{label}:{line or 0}: {type(e).__name__}{': ' + msg if msg else ''} ({what})"


def _strip(body):
    out = []
    for n in body:
        if "loop" in n:
            n = dict(n)
            n.pop("source", None)
            n["body"] = _strip(n["body"])
            out.append(n)
        else:
            if "_cost" in n:
                # a result nobody stored (e.g. nl.load(x) as a statement): it still executes
                _finish_cost(n, 1, 1)
            out.append({k: v for k, v in n.items() if not k.startswith("_")})
    return out


def _to_json(st, hw, label):
    global _ST
    _ST = st
    try:
        body = _strip(st.body)
    finally:
        _ST = None
    tensors = []
    for t in st.tensors:
        j = {"name": t.name, "buffer": t.buffer}
        if t.buffer == "hbm":
            j["role"] = "input" if t.role == "input" else "output" if t.role == "output" else "internal"
            j["blocks"] = []
            j["partitions"] = t.shape[0] if t.shape else 1
            j["free"] = list(t.shape[1:])
        else:
            j["blocks"] = list(t.blocks)
            j["partitions"] = t.pdim
            j["free"] = list(t.free)
        j["dtype"] = t.dtype
        j["source"] = t.source
        if t.buffer != "hbm":
            a = t.alloc
            if a.kind == "auto":
                j["alloc"] = {"kind": "auto"}
            elif a.kind == "mod_alloc":
                j["alloc"] = {"kind": "mod_alloc", **a.kw}
                if a.buffer == "psum" and not j["alloc"].get("num_free_tiles"):
                    j["alloc"].pop("num_free_tiles", None)  # PSUM rotates banks; the model has no such key
            elif a.kind == "func":
                j["alloc"] = {"kind": "table", "tiles": t.table}
            elif a.kind == "address":
                n = max(1, math.prod(t.blocks))
                j["alloc"] = {"kind": "table", "tiles": [[a.kw["p"], a.kw["b"]]] * n}
        tensors.append(j)
    k = {"format": "scratchplan-nki-kernel", "version": 1, "comment": f"traced from {label}"}
    if hw is not None:
        k["hardware"] = hw
    k["tensors"] = tensors
    k["body"] = body
    return k


def trace_file(spec, inputs, grid=None, hardware=None):
    """The CLI's form: ``spec`` is FILE.py[:FUNCTION], ``inputs`` are 'name=AxB:dtype' strings
    bound to the kernel's parameters by name."""
    kw = {}
    for text in inputs:
        n, shape, dt = parse_input(text)
        if n in kw:
            raise TraceError(f"--input {text!r}: {n} given twice")
        kw[n] = (shape, dt)
    return trace(spec, grid=grid, hardware=hardware, **kw)


# ---------------------------------------------------------------------------------------------
# --rewrite: the kernel source with each declaration's buffer= set to the planned allocation

_DECL_APIS = {"ndarray", "zeros", "ones", "full", "zeros_like", "empty_like"}


def rewrite(spec, inputs, planned, grid=None, hardware=None):
    """Source text of the kernel file with the buffer= of every SBUF/PSUM declaration replaced by
    the planned allocation in ``planned`` (the kernel JSON of ``nki plan -o``). Only those
    argument texts change; everything else is byte-identical."""
    global _ST
    m = re.fullmatch(r"(.*?\.py)(?::([A-Za-z_]\w*))?", spec)
    if not m:
        raise TraceError(f"{spec}: expected FILE.py or FILE.py:FUNCTION")
    path = os.path.abspath(m.group(1))
    label = os.path.basename(path)
    # Trace again to learn where each tensor was declared.
    decls = []
    orig_to_json = globals()["_to_json"]

    def capture(st, hw, lbl):
        decls.extend(st.decls)
        decls.append(("__tensors__", st.tensors))
        return orig_to_json(st, hw, lbl)

    globals()["_to_json"] = capture
    try:
        trace_file(spec, inputs, grid=grid, hardware=hardware)
    finally:
        globals()["_to_json"] = orig_to_json
    tensors = decls.pop()[1]
    with open(path, encoding="utf-8") as f:
        if _imports_new_namespace(f.read()):
            raise TraceError(f"{label}: --rewrite writes the old API's ncc.sbuf/ncc.psum allocations; this kernel uses "
                             "the new nki namespace (address=), which it does not rewrite")
    sites = {}
    for t, line, col, api in decls:
        if t.buffer != "hbm" and sites.setdefault((line, col), t) is not t:
            raise TraceError(f"{label}:{line}: one declaration makes several tensors ({sites[(line, col)].name}, "
                             f"{t.name}: unrolled loop or helper), so one buffer= cannot hold their planned allocations")
    plan = {t["name"]: t for t in planned.get("tensors", [])}
    for t in tensors:
        if t.buffer != "hbm" and t.implicit:
            raise TraceError(f"{t.source}: tensor {t.name} is the result of {t.api} without a declaration, so "
                             "--rewrite cannot give it an allocation; declare it with nl.ndarray and assign the "
                             "call's result into it")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    tree = ast.parse(src, filename=path)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    lines = src.splitlines(keepends=True)
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln.encode("utf-8")))
    raw = src.encode("utf-8")

    def pos(line, col):
        return offs[line - 1] + col

    ncc_expr = _compiler_expr(src)
    edits = []
    for t, line, col, api in decls:
        if t.buffer == "hbm":
            continue
        p = plan.get(t.name)
        if p is None or "alloc" not in p:
            raise TraceError(f"{t.source}: the plan has no allocation for tensor {t.name}")
        cands = [c for c in calls if c.lineno == line and _call_name(c) in _DECL_APIS]
        exact = [c for c in cands if _func_end_col(c) >= col >= c.col_offset]
        node = (exact or cands or [None])[0]
        if node is None:
            raise TraceError(f"{t.source}: cannot find the declaration of {t.name} to rewrite")
        text = _alloc_text(t, p["alloc"], ncc_expr)
        kwb = next((k for k in node.keywords if k.arg == "buffer"), None)
        if kwb is not None:
            edits.append((pos(kwb.value.lineno, kwb.value.col_offset), pos(kwb.value.end_lineno, kwb.value.end_col_offset),
                          text))
        else:
            # buffer given positionally (ndarray(shape, dtype, buffer)) or not at all
            if api == "ndarray" and len(node.args) >= 3:
                a = node.args[2]
                edits.append((pos(a.lineno, a.col_offset), pos(a.end_lineno, a.end_col_offset), text))
            else:
                end = pos(node.end_lineno, node.end_col_offset) - 1  # the closing ')'
                j = end - 1
                while j > 0 and raw[j:j + 1] in (b" ", b"\n", b"\t", b"\r"):
                    j -= 1
                sep = " " if raw[j:j + 1] in (b",", b"(") else ", "
                edits.append((end, end, f"{sep}buffer={text}"))
    out = raw
    for a, b, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out = out[:a] + text.encode("utf-8") + out[b:]
    return out.decode("utf-8")


def _call_name(c):
    f = c.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _func_end_col(c):
    return c.func.end_col_offset if c.func.end_lineno == c.lineno else 10 ** 9


def _compiler_expr(src):
    """How the kernel file reaches the compiler module (ncc, nki.compiler, ...)."""
    m = re.search(r"^\s*import\s+neuronxcc\.nki\.compiler\s+as\s+(\w+)", src, re.M)
    if m:
        return m.group(1)
    m = re.search(r"^\s*from\s+neuronxcc\.nki\s+import\s+compiler\s+as\s+(\w+)", src, re.M)
    if m:
        return m.group(1)
    m = re.search(r"^\s*from\s+neuronxcc\s+import\s+nki\s+as\s+(\w+)\s*$", src, re.M) or \
        re.search(r"^\s*import\s+neuronxcc\.nki\s+as\s+(\w+)\s*$", src, re.M)
    if m:
        return m.group(1) + ".compiler"
    if re.search(r"^\s*from\s+neuronxcc\s+import\s+nki\s*$", src, re.M):
        return "nki.compiler"
    return "__import__('neuronxcc.nki.compiler').nki.compiler"


def _alloc_text(t, alloc, ncc):
    kind = alloc.get("kind")
    psum = t.buffer == "psum"

    def tup(v):
        v = list(v or [])
        return "()" if not v else "(" + ", ".join(str(x) for x in v) + ("," if len(v) == 1 else "") + ")"

    if kind == "mod_alloc":
        # Fields the plan leaves at their defaults are not written; kept allocations keep all.
        extra = "".join(f", {k}={tup(alloc.get(k))}" for k in ("num_par_tiles",) + (("num_free_tiles",) if psum else ())
                        if alloc.get(k))
        if psum:
            extra += "".join(f", {k}={alloc[k]}" for k in ("base_addr", "base_partition") if alloc.get(k))
            return (f"{ncc}.psum.mod_alloc(base_bank={alloc.get('base_bank', 0)}, "
                    f"num_bank_tiles={tup(alloc.get('num_bank_tiles'))}{extra})")
        return (f"{ncc}.sbuf.mod_alloc(base_addr={alloc.get('base_addr', 0)}, "
                f"base_partition={alloc.get('base_partition', 0)}, num_free_tiles={tup(alloc.get('num_free_tiles'))}"
                f"{extra})")
    if kind == "table":
        tiles = alloc["tiles"]
        strides, s = [], 1
        for b in reversed(t.blocks):
            strides.append(s)
            s *= b
        strides.reverse()
        lin = " + ".join(f"idx[{d}] * {st}" for d, st in enumerate(strides)) or "0"
        if psum:
            tab = tuple((p, b // 2048, b % 2048) for p, b in tiles)
            return (f"{ncc}.psum.alloc(lambda idx, pdim_size, fdim_size, _t={tab!r}: "
                    f"(_t[{lin}][1], _t[{lin}][0], _t[{lin}][2]))")
        tab = tuple((p, b) for p, b in tiles)
        return f"{ncc}.sbuf.alloc(lambda idx, pdim_size, fdim_size, _t={tab!r}: _t[{lin}])"
    raise TraceError(f"{t.source}: cannot express a {kind!r} allocation for {t.name}")


# ---------------------------------------------------------------------------------------------
# Command line (used by the C++ CLI): one JSON document on stdout, or one error line and exit 2.

def _main(argv):
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message):
            raise TraceError(f"tracer: {message}")

    ap = _Parser(prog="tracer.py")
    ap.add_argument("verb", choices=["trace", "rewrite"])
    ap.add_argument("kernel")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--grid", default=None)
    ap.add_argument("--hardware", default=None)
    ap.add_argument("--planned", default=None)
    import signal

    def _timeout(signum, frame):
        line = frame.f_lineno if frame and os.path.abspath(frame.f_code.co_filename) == (_ST.path if _ST else "") else 0
        raise TraceError(f"{_ST.label if _ST else 'tracer'}:{line}: tracing took longer than {TRACE_SECONDS} s "
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
            k = trace_file(a.kernel, a.input, grid=grid, hardware=a.hardware)
            sys.stdout.write(json.dumps(k, separators=(",", ":")) + "\n")
        else:
            with open(a.planned, encoding="utf-8") as f:
                planned = json.load(f)
            sys.stdout.write(rewrite(a.kernel, a.input, planned, grid=grid, hardware=a.hardware))
        return 0
    except TraceError as e:
        sys.stderr.write(str(e).splitlines()[0] + "\n")
        return 2
    except Exception as e:  # a bug of the tracer itself: one line, exit 1 (internal error)
        sys.stderr.write(f"tracer internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}\n")
        return 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
