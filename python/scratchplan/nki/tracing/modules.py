"""The stand-in modules: `neuronxcc.nki.language`/`isa`/`compiler`/`typing` (and the `nki`
namespace), each API call mapped to declarations, instructions and loops."""
from __future__ import annotations

import functools
import math
import types

from . import context as _ctx
from .context import PARTITIONS, _fail, _is_int, _site
from .dtypes import _DTYPES, _VARIANTS, NkiDtype, _dtype_name
from .symbolic import Pred, Sym, _ST_AR
from .tensors import Tensor, View, _Alloc, _DS, _MGrid, _register, _unique
from .instructions import (_accumulate_into, _alu, _as_view, _dtype_of, _finish_cost, _guard, _is_tile,
                           _new_instr, _read, _result, _shape_of, _write_into)
from .declarations import _HBM, _PSUM, _ParDim, _SBUF, _SHARED_HBM, _ndarray
from .loops import _range_of, _static_range


class _Module(types.ModuleType):
    """A stand-in module: a name outside the API table is modelled generically (_Generic)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        g = _Generic(f"{self.__name__.replace('neuronxcc.', '')}.{name}")
        object.__setattr__(self, name, g)
        return g


_SHORT = {"nki.language": "nl", "nki.isa": "nisa", "nki.compiler": "ncc", "nki": "nki"}


class _Generic:
    """A name the API table does not list. As a value (an op= or activation function, an enum
    member such as nisa.dge_mode.hwdge) it is an opaque constant; called with an explicit
    destination (dst=, or the new API's first tile argument of an ISA call) it is traced
    conservatively: every tile argument read, dst written, the engine its engine= names (DMA for
    dma_* calls, else the Vector engine), cost by bytes, and listed once in the report as
    "modelled generically". Called on tiles without a destination its effect on memory cannot be
    known: refused with file:line."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Generic(f"{self._name}.{name}")

    def __repr__(self):
        return self._name

    def __eq__(self, other):
        return isinstance(other, _Generic) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __call__(self, *args, **kw):
        mod, _, short = self._name.rpartition(".")
        label = f"{_SHORT.get(mod, mod)}.{short}"
        dst = kw.pop("dst", None)
        if dst is None and mod.endswith("isa") and args and _is_tile(args[0]) and _ctx.ST is not None \
                and _ctx.ST.uses_new_api:
            dst, args = args[0], args[1:]
        tiles = [x for x in _flat(list(args) + list(kw.values())) if _is_tile(x)]
        if dst is None:
            if tiles:
                _fail(f"{label} is not in the tracer's API table and writes no explicit dst=, so its effect on "
                      "memory cannot be known")
            return _Generic(f"{self._name}(...)")
        d = _as_view(dst, f"{label} dst")
        # Only the DMA engine reaches HBM: a call whose dst is in HBM (nisa.core_barrier(hbm_tensor, cores))
        # runs there whatever engine= says for its on-chip part.
        dma = "dma" in short.lower() or getattr(kw.get("engine"), "_engine", None) == "dma" or d.tensor.buffer == "hbm"
        engine = "DMA" if dma else _kw_engine(kw, "Vector")
        ins, line = _new_instr(short, engine, "dma" if dma else "alu")
        if _ctx.ST.generic.setdefault(label, ins["source"]) is None:
            pass
        _guard(ins, kw.get("mask"))
        for t in tiles:
            _read(ins, t, "operand", allow_hbm=True)
        acc, p, b = d.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = d.tensor.itemsize
        _finish_cost(ins, p, b)
        d.tensor.written = True
        return None


def _flat(xs):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


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
    so that a direct-allocation kernel reports mixed_allocation at this line. The new API has no
    such tensors (every instruction names its dst; activation's bias defaults to a constant)."""
    if _ctx.ST.uses_new_api:
        return
    line, _ = _site()
    t = Tensor(_unique(f"hidden_{api}_{line}"), (PARTITIONS, 1), "float32", _Alloc("sbuf", "auto"), implicit=True,
               source=f"{_ctx.ST.label}:{line}")
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


def _masked(v, mask):
    """View `v` accessed only where `mask` holds (the DMA calls' mask= bounds both sides)."""
    return View(v.tensor, v.dims, mask if v.mask is None else v.mask & mask, v.dyn) if isinstance(mask, Pred) else v


def _split_dst(args, kw):
    """(dst or None, the other positional args): dst= anywhere, or first under the new namespace."""
    dst = kw.pop("dst", None)
    if dst is None and _ctx.ST is not None and _ctx.ST.uses_new_api and args and _is_tile(args[0]):
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
        if accumulate is None and f.__name__ == "nc_matmul" and not target.tensor.written:
            # Traced once over loops opened since dst's declaration: their first iteration writes, the rest add.
            since = []
            for lid in reversed(_ctx.ST.loop_scope):
                if lid in target.tensor.scope:
                    break
                since.append(lid)
            if since:
                _accumulate_into(target, r, first_over=since)
                target.tensor.written = True
                return None
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


def _build_modules(hw=None):
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
    for n, v in _VARIANTS.items():
        setattr(nl, n, v)
    for n in ("float4_e2m1fn_x4", "float8_e4m3fn_x4", "float8_e5m2_x4"):
        setattr(nl, n, _DTYPES[n][1])
    nl.bool = nl.bool_
    nl.fp32, nl.fp16, nl.bf16, nl.tf32 = (_DTYPES[n][1] for n in ("float32", "float16", "bfloat16", "tfloat32"))
    # Python-level types of the new API: config objects (dataclass subclasses), dtype and tensor
    # annotations (`dtype: nki.dtype = nl.bfloat16`, `x: nl.tensor`)
    nl.NKIObject = NKIObject
    nl.dtype = nki.dtype = NkiDtype
    nl.tensor = _AnyType()
    nl.range = lambda *a: range(*a)  # a plain Python loop (unrolled)
    nl.dynamic_range = _range_of("dynamic_range", "sequential")
    # buffers
    nl.sbuf, nl.psum, nl.hbm, nl.private_hbm, nl.shared_hbm = _SBUF, _PSUM, _HBM, _HBM, _SHARED_HBM
    nl.par_dim = lambda n: _ParDim(int(n))
    # From the hardware description (the CLI hands the tracer the C++ one); without one, trn1's.
    hw = hw if isinstance(hw, dict) else {}
    usable = int(hw.get("sbuf_partition_bytes", 196608)) - int(hw.get("sbuf_reserved_bytes", 16384))
    bank = int(hw.get("psum_bank_bytes", 2048))
    nl.tile_size = types.SimpleNamespace(pmax=int(hw.get("partitions", 128)), psum_fmax=bank // 4,
                                         gemm_stationary_fmax=128, gemm_moving_fmax=512,
                                         bn_stats_fmax=512, psum_bank_fmax=bank // 4, psum_bank_fmax_bytes=bank,
                                         psum_num_banks=int(hw.get("psum_banks", 8)), total_available_sbuf_size=usable,
                                         sbuf_fmax_bytes=usable)

    def ndarray(shape, dtype, *a, buffer=None, name="", address=None, **kw):
        if a:
            buffer = a[0]
        return _ndarray(shape, dtype, buffer, name, address, api="ndarray")

    # lazy_initialization=True defers the fill to the first write, so no fill instruction (and a
    # direct allocation is then legal: blockwise_mm's PSUM accumulator)
    def zeros(shape, dtype, *a, buffer=None, name="", lazy_initialization=False, **kw):
        return _ndarray(shape, dtype, a[0] if a else buffer, name, kw.get("address"),
                        fill=None if lazy_initialization else 0, api="zeros")

    def ones(shape, dtype, *a, buffer=None, name="", lazy_initialization=False, **kw):
        return _ndarray(shape, dtype, a[0] if a else buffer, name, kw.get("address"),
                        fill=None if lazy_initialization else 1, api="ones")

    def full(shape, fill_value, dtype, *a, buffer=None, name="", lazy_initialization=False, **kw):
        return _ndarray(shape, dtype, a[0] if a else buffer, name, kw.get("address"),
                        fill=None if lazy_initialization else fill_value, api="full")

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
        if axis < len(_ctx.ST.spmd):
            return Sym(0, {("L", _ctx.ST.spmd[axis]): 1})
        # A kernel launched on N logical cores (--lnc N, no grid) is traced once per core: axis 0 is the core.
        return _ctx.ST.core if axis == 0 and not _ctx.ST.spmd else 0

    def num_programs(axes=None):
        st = _ctx.ST
        if not st.spmd:
            return st.lnc if axes in (None, 0) else 1
        if axes is None:
            return math.prod(st.loops[l][1] for l in st.spmd)
        return st.loops[st.spmd[axes]][1] if axes < len(st.spmd) else 1

    nl.program_id = program_id
    nl.num_programs = num_programs
    nl.program_ndim = lambda: len(_ctx.ST.spmd) or (1 if _ctx.ST.lnc > 1 else 0)
    nl.nc = lambda n: n
    nl.spmd_dim = lambda *a: a[0] if a else 1

    # DMA
    def load(src, *, mask=None, dtype=None, **kw):
        ins, line = _new_instr("load", "DMA", "dma")
        _guard(ins, mask)
        v = _as_view(src, "load source")
        if mask is not None:
            v = View(v.tensor, v.dims, mask, v.dyn)
        _read(ins, v, allow_hbm=True)
        return _result(ins, line, "nl.load", v.shape, _dtype_name(dtype) if dtype else v.dt)

    def load_transpose2d(src, *, mask=None, dtype=None, **kw):
        ins, line = _new_instr("load_transpose2d", "DMA", "dma")
        _guard(ins, mask)
        v = _as_view(src, "load source")
        if mask is not None:
            v = View(v.tensor, v.dims, mask, v.dyn)
        _read(ins, v, allow_hbm=True)
        s = tuple(v.shape)
        return _result(ins, line, "nl.load_transpose2d", s[::-1] if len(s) == 2 else s, _dtype_name(dtype) if dtype else v.dt)

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
        _, p, b = _read(ins, _masked(_as_view(src, "dma_copy source"), mask), allow_hbm=True)
        d = _masked(_as_view(dst, "dma_copy destination"), mask)
        acc, _, _ = d.access(write=True)
        ins["writes"].append(acc)
        ins["_isz"] = 1
        _finish_cost(ins, p, b)

    nisa.dma_copy = dma_copy

    def dma_transpose(src, *, axes=None, mask=None, dtype=None, **kw):
        ins, line = _new_instr("dma_transpose", "DMA", "dma")
        _guard(ins, mask)
        v, _, _ = _read(ins, _masked(_as_view(src, "source"), mask), "source", allow_hbm=True)
        s = tuple(v.shape)
        out = tuple(s[a] for a in axes) if axes is not None else s[::-1]
        return _result(ins, line, "nisa.dma_transpose", out, _dtype_name(dtype) if dtype else v.dt)

    def atomic_rmw(dst, value, op=None, *, mask=None, **kw):
        # A read-modify-write of an HBM slice by DMA: reads the value tile and the destination.
        ins, line = _new_instr("atomic_rmw", "DMA", "dma")
        _guard(ins, mask)
        _, p, b = _read(ins, value)
        d = _masked(_as_view(dst, "atomic_rmw destination"), mask)
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
        new = _ctx.ST.uses_new_api
        if new:  # the new API's tiles may have several free dims: flattened (the compiler checks the limits)
            ss, ms = (ss[0], math.prod(ss[1:])), (ms[0], math.prod(ms[1:]))
        if len(ss) != 2 or len(ms) != 2:
            _fail(f"nc_matmul expects 2-D tiles, got {list(ss)} and {list(ms)}")
        if ss[0] != ms[0] and not new:
            _fail(f"nc_matmul contraction dims differ: stationary {list(ss)}, moving {list(ms)}")
        if not new and (ss[1] > 128 or ms[1] > 512):
            _fail(f"nc_matmul tile too large: stationary free {ss[1]} (max 128), moving free {ms[1]} (max 512)")
        ins["_stat_n"] = ss[1]
        ins["_fp32"] = s.dt == "float32"
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
        ins["_fp32"] = a.dt == "float32"
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
        return _result(ins, line, "nisa.nc_transpose", s[::-1], _dtype_name(dtype) if dtype else v.dt,
                       "psum" if eng == "Tensor" else "sbuf")

    nisa.nc_transpose = nc_transpose

    # Scalar engine
    def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, mask=None,
                   dtype=None, **kw):
        if bias is None and _direct():
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
        return _result(ins, line, "nisa.activation", v.shape, _dtype_name(dtype) if dtype else v.dt)

    nisa.activation = activation
    nisa.activation_reduce = lambda op, data, *, reduce_op=None, reduce_res=None, bias=None, scale=1.0, **kw: \
        activation(op, data, bias=bias, scale=scale, reduce_res=reduce_res, **kw)

    def _act_fn(name):
        def f(x, *a, dtype=None, mask=None, bias=None, **kw):
            if bias is None and _direct() and name == "exp":
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

    def iota(expr=None, dtype=None, *, mask=None, **kw):
        if expr is None and kw.get("pattern") is not None:
            # new API: iota(dst, pattern=[[step, count], ...], offset=, channel_multiplier=): dst's shape
            ins, line = _new_instr("iota", "GpSimd", "gpsimd")
            try:
                shape = (PARTITIONS,) + tuple(int(c) for _, c in kw["pattern"])
            except Exception:
                _fail(f"nisa.iota: pattern= expects [[step, count], ...], got {kw['pattern']!r}")
            return _result(ins, line, "nisa.iota", shape, _dtype_name(dtype) if dtype is not None else "int32")
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

    def affine_select(pred=None, on_true_tile=None, on_false_value=None, *, mask=None, dtype=None, **kw):
        # new API: the predicate is an affine pattern (pattern=, offset=, channel_multiplier=, cmp_op=)
        if on_true_tile is None:
            _fail("nisa.affine_select needs on_true_tile")
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
            a, b = (pos[0], pos[1]) if not _ctx.ST.uses_new_api else (pos[1], pos[0])
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
              "tensor_scalar_reduce", "scalar_tensor_tensor", "tensor_tensor_scan", "tensor_partition_reduce",
              "dma_transpose"):
        setattr(nisa, n, _writes_dst(getattr(nisa, n)))
    nisa.memset = _memset_dst(nisa.memset)
    for n in ("tensor", "vector", "scalar", "gpsimd", "dma", "unknown"):
        setattr(nisa, f"{n}_engine", _Engine(n))
    nisa.engine = types.SimpleNamespace(tensor=nisa.tensor_engine, vector=nisa.vector_engine,
                                        scalar=nisa.scalar_engine, gpsimd=nisa.gpsimd_engine, dma=nisa.dma_engine,
                                        unknown=nisa.unknown_engine)
    nisa.nc_version = types.SimpleNamespace(gen2="gen2", gen3="gen3", gen4="gen4")
    gen = "gen3" if str(hw.get("name", "")) in ("trn2", "neuroncore-v3") else "gen2"
    nisa.get_nc_version = lambda: getattr(nisa.nc_version, gen)
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

    for n in ("skip_middle_end_transformations", "force_auto_alloc"):
        setattr(ncc, n, _passthrough_decorator)

    def enable_stack_allocator(func=None, **kw):
        """Marks the kernel: its automatic tensors are placed by the stack allocator (stack.py)."""
        def mark(f):
            f.__sp_stack_allocator__ = True  # a _Kernel or a function (jit copies the mark)
            return f
        return mark if func is None else mark(func)

    ncc.enable_stack_allocator = enable_stack_allocator
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


class NKIObject:
    """nl.NKIObject: the base of the new API's config objects (`@dataclass class C(nl.NKIObject)`),
    plain Python values at trace time; one class for every trace, so isinstance() holds across files.
    NKI does not run a config's constructor as CPython does: a field the call leaves out is None
    (nki-library constructs MLPTKGConstantsDimensionSizes without `remainderIFused`) and a plain
    class attribute is a field (SectionParams), so before @dataclass reads the class each
    annotated field without a default gets None and each public class attribute an annotation."""

    __slots__ = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        ann = cls.__dict__.get("__annotations__")
        if ann is None:
            ann = {}
            cls.__annotations__ = ann
        for name in list(ann):
            if name not in cls.__dict__:
                setattr(cls, name, None)
        # A plain class attribute (`section_idx = None`) is a field too (SectionParams(section_idx=...)).
        for name, v in list(cls.__dict__.items()):
            if not name.startswith("_") and name not in ann and not callable(v) and \
                    not isinstance(v, (staticmethod, classmethod, property)):
                ann[name] = "object"


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
    """Whether the kernel so far allocates some SBUF/PSUM tensor directly."""
    return any(t.alloc.kind not in ("auto", "shared_hbm", "private_hbm", "input") and t.buffer != "hbm"
               for t in _ctx.ST.tensors)
