"""Tensors, views and pending results: what a kernel holds and indexes; an access turns a view
into the (block, partitions, bytes) rectangle the kernel model records."""
from __future__ import annotations

import math
import re
import types

from .context import np
from . import context as _ctx
from .context import TraceError, _fail, _is_int
from .dtypes import _DTYPES, _VARIANTS, NkiDtype, _dtype_name, _itemsize
from .costs import _finish_cost
from .symbolic import Pred, Sym, _ST_AR, _affine_text, bounds_under

# Python operators and assignments on tiles record instructions: the instruction layer
# (instructions.py, which builds on this module) fills these in when it is imported.
RECORD = types.SimpleNamespace(alu=None, write_into=None, accumulate_into=None)


class _Alloc:
    """A buffer= value: kind 'auto' (sbuf/psum), 'hbm', 'mod_alloc', 'func', 'address'."""

    def __init__(self, buffer, kind, **kw):
        self.buffer = buffer  # 'sbuf' | 'psum' | 'hbm'
        self.kind = kind
        self.kw = kw

    def __repr__(self):
        return f"<nki buffer {self.buffer}:{self.kind}>"

    def __eq__(self, other):
        # `tensor.buffer == nl.sbuf` (a tensor's .buffer is the buffer's name); otherwise identity
        if isinstance(other, str):
            return other == self.buffer
        return self is other

    def __hash__(self):
        return id(self)


def _dtype_object(dtype, canonical):
    """The stand-in dtype object a tensor reports: the one it was declared with (float8_e4m3 keeps
    its own name), else the canonical one."""
    if isinstance(dtype, NkiDtype):
        return dtype
    if isinstance(dtype, str) and dtype in _VARIANTS:
        return _VARIANTS[dtype]
    return _DTYPES[canonical][1]


class _Arithmetic:
    """Python operators on tiles (`a + b`, `-a`, ...) are the ALU instructions of nl.add & co."""

    def _op(self, other, name, rev=False):
        a, b = (other, self) if rev else (self, other)
        return RECORD.alu(name, a, b)

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
        return RECORD.alu("nl.broadcast_to", self, shape=tuple(int(s) for s in shape))


class Tensor(_Arithmetic):
    def __init__(self, name, shape, dtype, alloc, role="internal", implicit=False, source="", pdim_at=None):
        self.name = name
        self.shape = tuple(map(int, shape))
        self.dt = _dtype_name(dtype)  # canonical name; .dtype is the stand-in object kernels compare
        self._dto = _dtype_object(dtype, self.dt)
        self.scope = frozenset(_ctx.ST.loop_scope) if _ctx.ST is not None else frozenset()  # loops open at the declaration
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
    def dtype(self):
        """The stand-in dtype object (nl.bfloat16 & co.): compares, hashes and np.dtype()s like NKI's."""
        return self._dto

    @property
    def itemsize(self):
        return _itemsize(self.dt)

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
        if type(key) is tuple and len(key) <= len(self.shape):
            # Plain slices on every indexed dim (`t[:, 0:8]`, the common case): View.__getitem__'s
            # result without its general steps.
            dims = []
            for k, n in zip(key, self.shape):
                if type(k) is not slice:
                    break
                st, sp, step = k.start, k.stop, k.step
                if not ((st is None or type(st) is int) and (sp is None or type(sp) is int) and
                        (step is None or type(step) is int and step == 1)):
                    break
                st = 0 if st is None else st + n if st < 0 else st
                sp = n if sp is None else sp + n if sp < 0 else sp
                dims.append(_Dim(st, max(0, sp - st), 1))
            else:
                return View(self, dims + [None] * (len(self.shape) - len(key)))
        return self.view()[key]

    def __setitem__(self, key, value):
        self.view()._assign(key, value)

    def __iadd__(self, other):
        self.view()._accumulate(other)
        return self

    def reshape(self, shape):
        shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if math.prod(shape) != math.prod(self.shape):
            _fail(f"cannot reshape {self.shape} to {shape}")
        if self.buffer != "hbm":
            # on chip: the same memory seen with another shape; accesses through it touch the whole
            # tensor (conservative for lifetimes)
            return _APView(self, [None] * len(self.shape), None, (), shape)
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
        t = Tensor(self.name, shape, self._dto, self.alloc, self.role, source=self.source)
        t._alias = getattr(self, "_alias", self)
        return t

    def ap(self, pattern=None, offset=0, **kw):
        return self.view().ap(pattern, offset, **kw)

    def __getattr__(self, name):
        if name in ("_alias",):
            raise AttributeError(name)
        _fail(f"tensor attribute .{name} is outside the supported NKI subset")

    # Operators build pending instructions on the whole-tensor view.
    def _op(self, other, name, rev=False):
        return self.view()._op(other, name, rev)

    def __repr__(self):
        return f"<nki tensor {self.name} {self.shape} {self.dt} {self.buffer}>"


class _Dim:
    """How one tensor dim is indexed: a range [start, start + size) with step (start affine in
    loop variables), or an index vector (an affine expression with arange terms)."""

    __slots__ = ("start", "size", "step", "vec", "scalar", "keep")

    def __init__(self, start=0, size=1, step=1, vec=None, scalar=False, keep=False):
        self.start, self.size, self.step, self.vec, self.scalar = start, size, step, vec, scalar
        self.keep = keep  # a scalar index on a free dim: gone from the shape, but open to further indexing


class View(_Arithmetic):
    """A tensor with some dims indexed. `dims[d]` is None (whole dim) or a _Dim."""

    def ap(self, pattern=None, offset=0, indirect_dim=None, scalar_offset=None, vector_offset=None, **kw):
        """`.ap(pattern=[[stride, count], ...], offset=)`: an explicit access pattern (partition
        pair first). Its shape is the counts; the memory it touches is modelled as the whole view
        it is taken of (strides and offsets are not followed: conservative for lifetimes; a
        run-time offset tile is read as an index)."""
        if pattern is None:
            pattern = kw.pop("ap", None)
        try:
            shape = tuple(int(c) for _, c in pattern)
        except Exception:
            _fail(f".ap(pattern=...) expects [[stride, count], ...], got {pattern!r}")
        dyn = tuple(self.dyn) + tuple(x for x in (scalar_offset, vector_offset) if _is_tile(x))
        return _APView(self.tensor, self.dims, self.mask, dyn, shape)

    def __init__(self, tensor, dims, mask=None, dyn=()):
        self.tensor = tensor
        self.dims = dims
        self.mask = mask
        self.dyn = dyn  # tiles used as indices (indirect DMA): read by every instruction reading this view

    # shape of the result (what an instruction reading this view sees)
    @property
    def shape(self):
        out = []
        tshape = self.tensor.shape
        for i, d in enumerate(self.dims):  # the common case first: no index vectors
            if d is None:
                out.append(tshape[i])
            elif d.vec is not None:
                break
            elif not d.scalar:
                out.append(d.size)
        else:
            return tuple(out)
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
    def dt(self):
        return self.tensor.dt

    @property
    def itemsize(self):
        return self.tensor.itemsize

    @property
    def ndim(self):
        return len(self.shape)

    def _open(self):
        return [i for i, d in enumerate(self.dims) if d is None or d.keep or (not d.scalar and d.vec is None)]

    def __getitem__(self, key):
        t = self.tensor
        if isinstance(key, Pred):  # `tile[idx < n]`: the mask written as a subscript (blockwise_mm's matmul operand)
            return View(t, self.dims, key if self.mask is None else self.mask & key, self.dyn)
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
        dyn = list(self.dyn)
        for d, k in zip(open_dims, key):
            if isinstance(k, (View, Tensor, Pending)):
                dims[d] = self._dynamic_dim(d, k, len(key))
                dyn.append(k)
                continue
            dims[d] = self._index_dim(d, dims[d], k)
        vec = any(x is not None and x.vec is not None for x in dims)
        if vec and any(x is not None and x.vec is None and not x.scalar for x in dims):
            _fail(f"tensor {t.name} is indexed with nl.arange vectors and slices in one subscript; NKI does not mix "
                  "advanced and basic indexing (use vectors on every indexed dim, or slices)")
        return View(t, dims, self.mask, tuple(dyn))

    def _dynamic_dim(self, d, k, ndim):
        """`x[idx_tile, f]` into HBM (indirect DMA): row values known only at run time. Recorded
        as an index vector over the index tile's partitions (its position in the result), whose
        values are taken as in range: HBM addresses are not allocated, the tile is only read."""
        t = self.tensor
        if t.buffer != "hbm":
            _fail(f"tensor {t.name} is indexed by a tile; only HBM tensors take run-time indices (indirect DMA)")
        shape = _as_view(k, "index").shape
        rows = shape[0] if shape else 1
        if rows == 1:  # one run-time value (`w[expert[0, 0], ...]`): a scalar index, recorded as 0
            return _Dim(0, 1, 1, scalar=True)
        if rows > t.shape[d]:
            _fail(f"index tile of {rows} rows into dim {d} of {t.name} of size {t.shape[d]}")
        _ST_AR.append({"n": rows, "start": 0, "axis": 0, "ndim": ndim})
        return _Dim(vec=Sym(0, {("A", len(_ST_AR) - 1): 1}), size=1)

    def _index_dim(self, d, cur, k):
        t = self.tensor
        size = t.shape[d] if cur is None else cur.size
        base = 0 if cur is None else cur.start
        step0 = 1 if cur is None else cur.step
        if isinstance(k, _DS):
            return _Dim(base + step0 * k.start, k.size, step0)
        if type(k) is slice:
            st, sp, step = k.start, k.stop, k.step
            if (st is None or type(st) is int) and (sp is None or type(sp) is int) and \
                    (step is None or type(step) is int and step == 1):  # a plain slice: the general case below, short
                st = 0 if st is None else st + size if st < 0 else st
                sp = size if sp is None else sp + size if sp < 0 else sp
                return _Dim(base + step0 * st, max(0, sp - st), step0)
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
            # An integer on an on-chip free dim drops it from the shape (`t[.., b_i, 0:n]` is a matmul
            # operand) but kernels may still index it, as 0, through the view: `l[:, i]` passed to a
            # helper that reads `l[:, 0]` (reference_attention's flash_fwd).
            keep = t.buffer != "hbm" and d > t.nb
            return _Dim(base + step0 * (s if not s.is_const() else s.c), 1, 1, scalar=True, keep=keep)
        if isinstance(k, _MGrid):
            _fail("index with the unpacked mgrid fields (ip, jf = nl.mgrid[...]) or .p / .x")
        _fail(f"unsupported index {k!r} for tensor {t.name}")

    # ---- accesses ----------------------------------------------------------------------------
    def access(self, write=False, extra=()):
        """(json access, partitions touched, bytes per partition touched) with bounds checks;
        `extra`: the loop-index constraints of the instruction's own mask=."""
        t = self.tensor
        if self.mask is None:
            # Constant indices (the whole tensor, literal slices): the same record every time, cached
            # per tensor (the whole tensor whatever the guards; slices outside guards and mask=).
            dims = self.dims
            key = None if not any(dims) else tuple(
                None if d is None else (d.start, d.size, d.step, d.scalar)
                if d.vec is None and type(d.start) is int else False for d in dims)
            if key is None or (False not in key and not (extra or _ctx.ST.guards)):
                cache = t.__dict__.get("_acc")
                if cache is None or cache[0] is not t.shape:
                    cache = t._acc = (t.shape, {})
                hit = cache[1].get(key)
                if hit is None:
                    hit = cache[1][key] = self._access(write, ())
                acc = dict(hit[0])
                if "block" in acc:
                    acc["block"] = list(acc["block"])
                return acc, hit[1], hit[2]
        return self._access(write, extra)

    def _access(self, write, extra):
        t = self.tensor
        # The access happens only where its mask and the enclosing branch conditions hold, so
        # its range is taken over those iterations (an access the mask switches off is legal).
        cons = [g for c in _ctx.ST.guards for g in c] + (list(self.mask.cons) if isinstance(self.mask, Pred) else [])
        cons += extra
        ranges = []  # per dim: (lo, hi) inclusive over every iteration
        for d, dim in enumerate(self.dims):
            n = t.shape[d]
            if dim is None:
                lo, hi = 0, n - 1
            elif dim.vec is not None:
                v = Sym.of(dim.vec)
                r = bounds_under(v, cons) if cons else v.bounds()
                lo, hi = r if r is not None else (0, n - 1)
                if self.mask is not None:
                    u, l2 = self.mask.upper(v), self.mask.lower(v)
                    if u is not None:
                        hi = min(hi, u)
                    if l2 is not None:
                        lo = max(lo, l2)
            else:
                s = Sym.of(dim.start)
                r = bounds_under(s, cons) if cons else s.bounds()
                lo, hi = r if r is not None else (0, n - dim.size * dim.step)
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
        RECORD.write_into(target, value)

    def __setitem__(self, key, value):
        self._assign(key, value)

    def _accumulate(self, other):
        RECORD.accumulate_into(self, other)

    def __iadd__(self, other):
        self._accumulate(other)
        return _Accumulated(self)

    @property
    def buffer(self):
        """The buffer of the tensor viewed (`view.buffer == nl.sbuf`)."""
        return self.tensor.buffer

    @property
    def name(self):
        return self.tensor.name

    def reshape(self, shape):
        """The viewed memory with another shape; accesses through it touch the whole view."""
        shape = tuple(int(x) for x in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if math.prod(shape) != math.prod(self.shape):
            _fail(f"cannot reshape {list(self.shape)} to {list(shape)}")
        return _APView(self.tensor, self.dims, self.mask, self.dyn, shape)

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
        self.dt = _dtype_name(dtype)
        self.buffer = buffer
        self.api = api
        self.line = line
        self.tensor = None
        self.target = None
        self.depth = len(_ctx.ST.stack_alloc.frames) if _ctx.ST.stack_alloc is not None else None

    @property
    def dtype(self):
        """The stand-in dtype object (nl.bfloat16 & co.): compares, hashes and np.dtype()s like NKI's."""
        return self._dto

    @property
    def itemsize(self):
        return _itemsize(self.dt)

    @property
    def ndim(self):
        return len(self.shape)

    def materialize(self):
        """The implicit tensor holding this result (created on first use)."""
        if self.tensor is None:
            if _ctx.ST.last_pending is self:
                _ctx.ST.last_pending = None
            name = _unique(self.target or f"{self.api.split('.')[-1]}_{self.line}")
            shape = self.shape if len(self.shape) >= 2 else tuple(self.shape) + (1,) * (2 - len(self.shape))
            if shape[0] > _ctx.ST.hw["partitions"]:
                raise TraceError(f"{_ctx.ST.label}:{self.line}: the result of {self.api} has partition dim {shape[0]} > "
                                 f"{_ctx.ST.hw['partitions']}")
            t = Tensor(name, shape, self.dt, _Alloc(self.buffer, "auto"), implicit=True,
                       source=f"{_ctx.ST.label}:{self.line}")
            t.api = self.api
            _register(t, self.depth)
            self.tensor = t
            acc, p, b = t.view().access(write=True)
            self.instr["writes"].append(acc)
            _finish_cost(self.instr, p, b)
        return self.tensor.view()

    def __getitem__(self, key):
        return self.materialize()[key]

    def __setitem__(self, key, value):
        # `out = f(...)` then `out[...] = g(out)`: the result becomes a tensor written again
        self.materialize()[key] = value

    def __iadd__(self, o):
        v = self.materialize()
        v._accumulate(o)
        return self

    def __getattr__(self, name):
        if name in ("tensor", "instr", "target", "depth"):
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
    if not (name.isidentifier() and name.isascii()):  # identifiers need no cleaning (the common case)
        name = re.sub(r"[^A-Za-z0-9_.@]", "_", name) or "t"
    return _unique_ident(name)


def _unique_ident(name):
    """_unique() of a name that needs no cleaning."""
    st = _ctx.ST
    n, i = name, st.name_next.get(name, 1)
    if i > 1:
        n = f"{name}_{i}"
    names = st.names
    while n in names:
        i += 1
        n = f"{name}_{i}"
    st.name_next[name] = i + 1  # the suffixes up to i are taken
    names.add(n)
    return n


def _register(t, depth=None):
    """Records tensor `t`; under the stack allocator an automatic one is placed, in the frame at
    `depth` (a call's result belongs to the scope of the call, not of its first use)."""
    _ctx.ST.tensors.append(t)
    if _ctx.ST.stack_alloc is not None and t.buffer != "hbm" and t.alloc.kind == "auto":
        _ctx.ST.stack_alloc.place(t, depth)


_TILE = (View, Tensor, Pending)
_NONE = object()


def _is_tile(x):
    return isinstance(x, _TILE)


def _as_view(x, what):
    if isinstance(x, View):
        return x
    if isinstance(x, Tensor):
        return x.view()
    if isinstance(x, Pending):
        return x.materialize()
    _fail(f"{what}: expected a tile, got {type(x).__name__}")


class _APView(View):
    """A view through an explicit access pattern: the pattern's shape over the view's memory."""

    def __init__(self, tensor, dims, mask, dyn, shape):
        super().__init__(tensor, dims, mask, dyn)
        self._ap_shape = shape

    @property
    def shape(self):
        return self._ap_shape

    def __getitem__(self, key):
        return self  # indexing a pattern view: the same memory (conservative)

