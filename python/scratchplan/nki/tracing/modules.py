"""The stand-in modules: `neuronxcc.nki.language`/`isa`/`compiler`/`typing` (and the `nki`
namespace), each API call mapped to declarations, instructions and loops."""
from __future__ import annotations

import functools
import math
import types

from . import context as _ctx
from .context import _fail, _is_int
from .dtypes import _DTYPES, _VARIANTS, NkiDtype
from .symbolic import Sym, _ST_AR
from .tensors import _Alloc, _DS, _MGrid
from .instructions import _dtype_of, _shape_of
from .declarations import _HBM, _PSUM, _ParDim, _SBUF, _SHARED_HBM, _ndarray
from .loops import _range_of, _static_range
from . import calls as _calls
from .calls import _Module


class _Engine:
    def __init__(self, name):
        self._engine = name

    def __repr__(self):
        return f"<engine {self._engine}>"


_calls.BY_IDENTITY.add(_Engine)


def _build_modules(hw):
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
    # From the hardware description (the C++ one: launch.py completes what the kernel's caller gives).
    usable = int(hw["sbuf_partition_bytes"]) - int(hw["sbuf_reserved_bytes"])
    bank = int(hw["psum_bank_bytes"])
    nl.tile_size = types.SimpleNamespace(pmax=int(hw["partitions"]), psum_fmax=bank // 4,
                                         gemm_stationary_fmax=128, gemm_moving_fmax=512,
                                         bn_stats_fmax=512, psum_bank_fmax=bank // 4, psum_bank_fmax_bytes=bank,
                                         psum_num_banks=int(hw["psum_banks"]), total_available_sbuf_size=usable,
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

    # Every instruction call, generated from the API table (api_table.py).
    _calls.install(nl, nisa)
    nl.device_print = lambda *a, **kw: None  # a debug print: no instruction of the kernel's own
    for n in ("tensor", "vector", "scalar", "gpsimd", "dma", "unknown"):
        setattr(nisa, f"{n}_engine", _Engine(n))
    # New API: `nisa.dma_engine` is also the enum of DMA queues a transfer may name
    # (`dma_copy(..., dma_engine=dma_engine.gpsimd_dma)`): both are DMA-engine transfers here.
    nisa.dma_engine.dma = nisa.dma_engine
    nisa.dma_engine.gpsimd_dma = _Engine("dma")
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
