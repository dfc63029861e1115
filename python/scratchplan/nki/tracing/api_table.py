"""The NKI instruction API as data: one row per `nki.language` / `nki.isa` call that records an
instruction. `calls.py` generates the stand-in functions of `nl` and `nisa` from these rows;
nothing else defines an instruction call. A leaf module (no imports from the tracer).

Columns of a row:

- ``api``: the call as kernels spell it (``nl.exp``, ``nisa.nc_matmul``).
- ``sig``: its Python parameters, old-API order (the generated stand-in has exactly this
  signature, so a wrong keyword is Python's own TypeError at the kernel's line).
- ``reads``: parameters whose tiles the instruction reads, in order (a list of tiles is read
  element by element; a non-tile value, such as a scalar operand, is skipped). ``name!``: must be a
  tile (else ``name: expected a tile``).
- ``writes``: other parameters it writes besides its result (``reduce_res``, ``dst_scale``).
- ``out``: where the result goes. ``result``: returned as a new tile (old API); under the new
  namespace the call takes ``dst`` first or as ``dst=`` and writes it instead (API.md §10).
  ``dst``: the call always writes its ``dst`` parameter. ``dma``: a DMA that writes its ``dst``
  parameter, costed by its first operand read (``dma_dst``: by what it writes). ``none``: no
  result (a barrier, a register load).
- ``engine``: the engine, or ``engine=X``: the ``engine=`` keyword chooses, X by default;
  ``transpose``: the Tensor engine for tiles over 32 x 32, else Vector (API.md §9).
- ``cost``: the cycle formula (``COSTS`` below), from N = elements per partition of what the
  instruction writes (bytes per partition over the element size) and P = partitions;
  ``transpose``: ``transpose_pe`` on the Tensor engine, ``alu`` on Vector.
- ``shape``: the result's shape: ``largest`` operand (the first on ties), ``of:PARAM``, or a named
  rule of calls.py (``reduce``, ``matmul``, ...).
- ``dtype``: the result's dtype when ``dtype=`` is not given: ``first`` (first tile read),
  or a fixed dtype (``float32`` for TensorE results).
- ``buffer``: the result's buffer when it is a new tile (``sbuf`` or ``psum``).
- ``mask``: whether ``mask=`` guards the instruction (see instructions._guard). False: the call
  has no mask, or its mask is not honoured (recorded unmasked, i.e. conservatively).
- ``checks``: constraints the tracer enforces at the call (named rules of calls.py): ``a_tile``
  (some operand is a tile), ``free_axes`` (reductions keep the partition axis), ``matmul``
  (old-API tile limits: K equal, stationary free <= 128, moving free <= 512), ``on_true``
  (affine_select needs its tile). Engines reading HBM other than DMA are refused for every row.
- ``hidden``: when the call creates a tensor the kernel cannot allocate (so a direct-allocation
  kernel reports mixed_allocation; old API only): ``always``, ``no_transpose_x``, ``tensor_engine``,
  ``no_bias`` (without ``bias=`` in a kernel that allocates directly).
- ``instr``: the instruction recorded, when it is not the call itself (``activation_reduce`` is
  the ``activation`` instruction with its reduction).
"""
from __future__ import annotations

from collections import namedtuple

Row = namedtuple("Row", "api sig reads writes out engine cost shape dtype buffer mask checks hidden instr")


def _row(api, sig, reads="", writes="", out="result", engine="Vector", cost="alu", shape="largest", dtype="first",
         buffer="sbuf", mask=True, checks="", hidden="", instr=None):
    return Row(api, sig, tuple(reads.split()), tuple(writes.split()), out, engine, cost, shape, dtype, buffer, mask,
               tuple(checks.split()), hidden, instr or api)


# Cycle formulas (API.md §9): N elements per partition written, P partitions, isz bytes per element,
# cm the cycle model of the hardware description. ALU engines' cycles are of their own clock.
COSTS = {
    "alu": ("max(min_ii, N)", lambda n, p, isz, cm, stat: max(cm["min_ii"], n)),
    "matmul": ("max(min(64, N_stationary), N), x matmul_fp32_factor for fp32 inputs",
               lambda n, p, isz, cm, stat: max(min(64, stat[0]), n) * (cm["matmul_fp32_factor"] if stat[1] else 1)),
    "transpose_pe": ("max(P, min(64, N))", lambda n, p, isz, cm, stat: max(p, min(64, n))),
    "reduce": ("N/2 for elements of at most 2 bytes, else N",
               lambda n, p, isz, cm, stat: max(1, n // 2) if isz <= 2 else n),
    "memset": ("N/2 for elements of at most 2 bytes, else N",
               lambda n, p, isz, cm, stat: max(1, n // 2) if isz <= 2 else n),
    "gpsimd": ("gpsimd_fixed + N", lambda n, p, isz, cm, stat: cm["gpsimd_fixed"] + n),
    "bn_aggr": ("max(min_ii, 13 N / 3)", lambda n, p, isz, cm, stat: max(cm["min_ii"], 13 * n / 3)),
    "reciprocal": ("max(min_ii, 8 N)", lambda n, p, isz, cm, stat: max(cm["min_ii"], 8 * n)),
    "scan": ("max(min_ii, 2 N)", lambda n, p, isz, cm, stat: max(cm["min_ii"], 2 * n)),
    "tsr": ("max(min_ii, N) + min_ii", lambda n, p, isz, cm, stat: max(cm["min_ii"], n) + cm["min_ii"]),
    "barrier": ("dma_fixed", lambda n, p, b, cm, stat: cm["dma_fixed"]),
    # The same from the bytes written to dst (calls whose first operand may be an HBM view, which
    # records no size).
    "dma_dst": ("dma_fixed + P x bytes of dst / dma_bytes_per_cycle",
                lambda n, p, b, cm, stat: cm["dma_fixed"] + max(1, p) * max(1, b) / max(cm["dma_bytes_per_cycle"], 1e-9)),
    # DMA: reference-clock cycles from the bytes moved (what the first operand read holds).
    "dma": ("dma_fixed + P x bytes / dma_bytes_per_cycle",
            lambda n, p, b, cm, stat: cm["dma_fixed"] + max(1, p) * max(1, b) / max(cm["dma_bytes_per_cycle"], 1e-9)),
}

_ACT = "x, *a, dtype=None, mask=None, bias=None, **kw"
_BIN = "x, y=None, *a, dtype=None, mask=None, **kw"
_RED = "x, axis=None, *a, dtype=None, keepdims=False, mask=None, **kw"

ROWS = (
    # DMA (nl.load/store and the ISA's DMA calls); mask= bounds source and destination.
    _row("nl.load", "src, *, mask=None, dtype=None, **kw", reads="src!", engine="DMA", cost="dma", shape="read:src"),
    _row("nl.load_transpose2d", "src, *, mask=None, dtype=None, **kw", reads="src!", engine="DMA", cost="dma",
         shape="transpose2d"),
    _row("nl.store", "dst, value, *, mask=None, **kw", reads="value!", out="dma", engine="DMA", cost="dma"),
    _row("nisa.dma_copy", "*args, dst=None, src=None, mask=None, **kw", reads="src!", out="dma", engine="DMA",
         cost="dma"),
    _row("nisa.dma_transpose", "src, *, axes=None, mask=None, dtype=None, **kw", reads="src!", engine="DMA",
         cost="dma", shape="axes"),
    _row("nl.atomic_rmw", "dst, value, op=None, *, mask=None, **kw", reads="value! dst!", out="dma", engine="DMA",
         cost="dma"),
    # Tensor engine
    _row("nisa.nc_matmul", "stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False, "
         "is_transpose=False, mask=None, **kw", reads="stationary! moving!", engine="Tensor", cost="matmul",
         shape="matmul", dtype="float32", buffer="psum", checks="matmul"),
    _row("nl.matmul", "x, y, *, transpose_x=False, mask=None, **kw", reads="x! y!", engine="Tensor", cost="matmul",
         shape="matmul_x", dtype="float32", buffer="psum", mask=False, hidden="no_transpose_x"),
    _row("nisa.nc_transpose", "data, *, mask=None, dtype=None, engine=None, **kw", reads="data!", engine="transpose",
         cost="transpose", shape="transpose", buffer="engine", mask=False, hidden="tensor_engine"),
    # Scalar engine
    _row("nisa.activation", "op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=None, "
         "mask=None, dtype=None, **kw", reads="data! bias scale", writes="reduce_res", engine="Scalar",
         shape="read:data", hidden="no_bias"),
    _row("nisa.activation_reduce", "op, data, *, reduce_op=None, reduce_res=None, bias=None, scale=1.0, mask=None, "
         "dtype=None, **kw", reads="data! bias scale", writes="reduce_res", engine="Scalar", shape="read:data",
         hidden="no_bias", instr="nisa.activation"),
    # Vector / GpSimd ISA
    _row("nisa.tensor_tensor", "data1, data2, op=None, *, dtype=None, mask=None, engine=None, **kw",
         reads="data1 data2", engine="engine=Vector"),
    _row("nisa.tensor_scalar", "data, op0=None, operand0=None, reverse0=False, op1=None, operand1=None, "
         "reverse1=False, *, dtype=None, mask=None, engine=None, **kw", reads="data operand0 operand1",
         engine="engine=Vector", shape="of:data"),
    _row("nisa.tensor_reduce", "op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kw",
         reads="data!", cost="reduce", shape="reduce", mask=False),
    _row("nisa.tensor_copy", "src, *, mask=None, dtype=None, engine=None, **kw", reads="src", engine="engine=Vector"),
    _row("nisa.memset", "shape, value, dtype, *, mask=None, engine=None, **kw", engine="engine=Vector",
         cost="memset", shape="of:shape", mask=False),
    _row("nisa.iota", "expr=None, dtype=None, *, mask=None, **kw", engine="GpSimd", cost="gpsimd", shape="iota",
         dtype="iota", mask=False),
    _row("nisa.affine_select", "pred=None, on_true_tile=None, on_false_value=None, *, mask=None, dtype=None, **kw",
         reads="on_true_tile", engine="GpSimd", cost="gpsimd", mask=False, checks="on_true"),
    _row("nisa.bn_stats", "data, *, mask=None, dtype=None, **kw", reads="data!", shape="partition:6", mask=False),
    _row("nisa.bn_aggr", "data, *, mask=None, dtype=None, **kw", reads="data!", cost="bn_aggr", shape="partition:2",
         mask=False),
    _row("nisa.reciprocal", "data, *, mask=None, dtype=None, **kw", reads="data", cost="reciprocal", mask=False),
    _row("nisa.tensor_scalar_reduce", "*, data, op0=None, operand0=None, reduce_op=None, reduce_res=None, dtype=None, "
         "**kw", reads="data operand0", writes="reduce_res", cost="tsr", shape="of:data", mask=False),
    _row("nisa.scalar_tensor_tensor", "*, data, op0=None, operand0=None, op1=None, operand1=None, dtype=None, **kw",
         reads="data operand0 operand1", shape="of:data", mask=False),
    _row("nisa.tensor_tensor_scan", "data0, data1, initial, op0=None, op1=None, *, dtype=None, **kw",
         reads="data0 data1 initial", cost="scan", shape="of:data0", mask=False),
    _row("nisa.tensor_partition_reduce", "op, data, *, dtype=None, **kw", reads="data!", engine="GpSimd",
         cost="gpsimd", shape="partition_reduce", mask=False),
    _row("nisa.dropout", "data, prob, *, mask=None, dtype=None, **kw", reads="data prob", shape="of:data"),
    _row("nisa.nc_stream_shuffle", "*args, src=None, dst=None, shuffle_mask=None, dtype=None, mask=None, **kw",
         reads="src!", out="dst", shape="largest"),
    _row("nisa.range_select", "*, on_true_tile, bound0=None, bound1=None, reduce_res=None, mask=None, dtype=None, **kw",
         reads="on_true_tile bound0 bound1", writes="reduce_res", shape="of:on_true_tile"),
    _row("nisa.select_reduce", "*, dst, predicate, on_true, on_false=None, reduce_res=None, mask=None, dtype=None, "
         "**kw", reads="predicate on_true on_false", writes="reduce_res", out="dst", shape="of:dst"),
    _row("nisa.local_gather", "src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None, **kw",
         reads="src_buffer index", engine="GpSimd", cost="gpsimd", shape="gather"),
    _row("nisa.tensor_copy_dynamic_src", "*, dst, src, mask=None, dtype=None, **kw", reads="src", out="dst",
         shape="of:dst"),
    _row("nisa.tensor_copy_dynamic_dst", "*, dst, src, mask=None, dtype=None, **kw", reads="src", out="dst",
         shape="of:dst"),
    _row("nisa.tensor_copy_predicated", "*, src, dst, predicate, mask=None, dtype=None, reverse_pred=False, **kw",
         reads="src predicate dst", out="dst", shape="of:dst"),
    # New-API ISA calls nki-library uses beyond API.md (NKI 0.3). Each takes dst first or as dst=. An
    # engine API.md does not document is Vector, as for calls modelled generically; engine= is honoured.
    _row("nisa.nc_matmul_mx", "stationary, moving, stationary_scale=None, moving_scale=None, *, mask=None, **kw",
         reads="stationary! moving! stationary_scale moving_scale", engine="Tensor", cost="matmul", shape="matmul",
         dtype="float32", buffer="psum"),
    _row("nisa.quantize_mx", "dst, src, dst_scale, **kw", reads="src!", writes="dst_scale", out="dst",
         engine="engine=Vector", shape="of:dst", mask=False),
    _row("nisa.dma_compute", "dst, srcs, reduce_op=None, scales=None, **kw", reads="srcs scales", out="dma",
         engine="DMA", cost="dma_dst"),
    # Exchanges tiles between logical cores: this core's src is sent, its dst received.
    _row("nisa.sendrecv", "dst=None, src=None, send_to_rank=None, recv_from_rank=None, pipe_id=None, **kw",
         reads="src!", out="dma", engine="DMA", cost="dma_dst"),
    # Synchronises the cores on `data` (an HBM tensor): read, not written; a DMA round trip.
    _row("nisa.core_barrier", "data, cores=None, **kw", reads="data!", out="none", engine="DMA", cost="barrier",
         mask=False),
    _row("nisa.max8", "dst, src, **kw", reads="src!", out="dst", engine="engine=Vector", shape="of:dst", mask=False),
    _row("nisa.nc_find_index8", "dst, data, vals, **kw", reads="data! vals!", out="dst", engine="engine=Vector",
         shape="of:dst", mask=False),
    _row("nisa.nc_match_replace8", "dst, data, vals, imm=None, dst_idx=None, **kw", reads="data! vals!",
         writes="dst_idx", out="dst", engine="engine=Vector", shape="of:dst", mask=False),
    _row("nisa.nc_n_gather", "dst, data, indices, **kw", reads="data! indices!", out="dst", engine="engine=Vector",
         shape="of:dst", mask=False),
    _row("nisa.nonzero_with_count", "dst, src, index_offset=0, padding_val=0, **kw", reads="src!", out="dst",
         engine="engine=Vector", shape="of:dst", mask=False),
    # Loads a (1, 1) SBUF value into a register (dynamic loop bounds): reads the tile.
    _row("nisa.register_load", "reg, src, **kw", reads="src!", out="none", engine="engine=Vector", mask=False),
    # nl.* compute (old API; the compiler lowers them to the ISA calls above)
    _row("nl.copy", "x, dtype=None, mask=None, **kw", reads="x"),
    _row("nl.softmax", "x, axis=-1, dtype=None, **kw", reads="x", mask=False, hidden="always"),
    _row("nl.rms_norm", "x, w=None, axis=-1, n=None, epsilon=1e-6, dtype=None, **kw", reads="x w", shape="of:x",
         mask=False, hidden="always"),
    _row("nl.transpose", "x, dtype=None, **kw", reads="x", engine="Tensor", cost="transpose_pe", shape="transpose",
         buffer="psum", mask=False, hidden="always"),
    _row("nl.broadcast_to", "x, shape, **kw", reads="x", shape="of:shape", mask=False),
    # Reduces x over iterations of loops into one tile: one instruction per iteration.
    _row("nl.loop_reduce", "x, op=None, loop_indices=(), *, dtype=None, mask=None, **kw", reads="x"),
    _row("nl.rand", "shape, dtype=None, **kw", engine="GpSimd", cost="gpsimd", shape="of:shape", dtype="float32",
         mask=False),
)

# Activation functions (nisa.activation's op table; as functions they run on the Scalar engine).
# exp is documented to lower to nisa.activation, which needs an explicit bias under direct allocation.
ACTIVATIONS = ("exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_apprx_sigmoid",
               "gelu_apprx_sigmoid_dx", "gelu_dx", "silu", "silu_dx", "erf",
               "erf_dx", "mish", "softplus", "sqrt", "rsqrt", "square", "sin", "cos", "arctan", "abs", "sign",
               "reciprocal", "negative", "ceil", "floor", "trunc")
# Element-wise ALU ops of two operands (Vector engine).
BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "greater",
          "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "fmod", "mod", "invert", "logical_not", "where")
REDUCTIONS = ("sum", "max", "min", "mean", "prod", "all", "var")

ROWS += tuple(_row(f"nl.{n}", _ACT, reads="x a bias", engine="Scalar", hidden="no_bias" if n == "exp" else "")
              for n in ACTIVATIONS)
ROWS += tuple(_row(f"nl.{n}", _BIN, reads="x y", checks="a_tile") for n in BINARY)
ROWS += tuple(_row(f"nl.{n}", _RED, reads="x!", cost="reduce", shape="reduce", checks="free_axes")
              for n in REDUCTIONS)

# ISA calls whose new-API form writes `dst` (given first or as dst=) instead of returning a tile.
NEW_API_DST = ("nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_tensor", "tensor_scalar",
               "tensor_reduce", "tensor_copy", "iota", "affine_select", "bn_stats", "bn_aggr", "reciprocal",
               "tensor_scalar_reduce", "scalar_tensor_tensor", "tensor_tensor_scan", "tensor_partition_reduce",
               "dma_transpose", "memset", "nc_matmul_mx", "range_select", "local_gather", "dropout")
