"""Op converters of the PyTorch front end: one function per ATen op family, registered by target
(``_registry``). Adding an op is one function here (docs/torch.md lists the rules).

A converter gets the driver ``cx`` (``_convert.Converter``: operands, the building blocks and the
program writer), the FX node and its op name. Compute converters bind the node's value and return
True, or return False when no exact form exists (the node becomes an opaque op with the default
reason); view converters return the node's value.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional

import torch

from . import _registry
from . import _views as V
from ._fx import TM, arg, meta, uses_output
from ._registry import opaque_reason, register
from ._views import Val

_UNARY = {"relu", "relu_", "gelu", "silu", "silu_", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "neg", "abs",
          "erf", "reciprocal", "hardswish", "hardswish_", "hardsigmoid", "hardsigmoid_", "hardtanh", "hardtanh_",
          "clamp", "clamp_", "clamp_min", "clamp_max", "leaky_relu", "elu", "sin", "cos", "pow", "mish", "softplus",
          "log1p", "expm1", "square", "threshold", "gelu_", "relu6", "sign", "floor", "ceil", "round", "trunc",
          "logical_not", "bitwise_not", "isnan", "_to_copy", "to", "clone", "contiguous", "copy", "fill", "zero",
          "zeros_like", "ones_like", "full_like", "masked_fill", "dropout", "native_dropout", "rsub", "pow_"}
_BINARY = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "maximum", "minimum", "where", "eq", "ne",
           "lt", "le", "gt", "ge", "logical_and", "logical_or", "bitwise_and", "bitwise_or", "remainder", "fmod",
           "atan2", "masked_fill_", "lerp", "addcmul", "addcdiv"}
_REDUCE = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min", "max": "max", "min": "min", "prod": "prod",
           "any": "any", "all": "all", "logsumexp": "logsumexp", "var": "var", "std": "std", "argmax": "argmax",
           "argmin": "argmin", "norm": "norm", "linalg_vector_norm": "norm"}

# Ops that stay opaque, with why no indexing map can describe them.
# Gathers and scatters of values copy elements chosen by an index tensor and do no arithmetic:
# data movement like cat, so not compute ops (they stay opaque ops with their true traffic).
opaque_reason("advanced indexing: the rows read depend on an index tensor (data-dependent gather)", "index",
              moves_data=True)
opaque_reason("index_select: the rows read depend on an index tensor (data-dependent gather)", "index_select",
              moves_data=True)
opaque_reason("gather: the elements read depend on an index tensor", "gather", moves_data=True)
opaque_reason("embedding: a data-dependent gather of rows (opaque gather)", "embedding", moves_data=True)
opaque_reason("scatter: the elements written depend on an index tensor", "scatter", "scatter_", moves_data=True)
opaque_reason("scatter_add: the elements written depend on an index tensor", "scatter_add", "scatter_add_")
opaque_reason("scatter_reduce: the elements written depend on an index tensor", "scatter_reduce", "scatter_reduce_")
opaque_reason("masked_scatter: the elements written depend on a mask", "masked_scatter", "masked_scatter_")
opaque_reason("index_put: the elements written depend on an index tensor", "index_put")
opaque_reason("index_put_: the elements written depend on an index tensor", "index_put_")
opaque_reason("copy_ into a view: a partial update of a tensor another op wrote (one writer per tensor)", "copy_")
opaque_reason("sort: data-dependent permutation", "sort")
opaque_reason("topk: data-dependent selection", "topk")
opaque_reason("nonzero: data-dependent output size", "nonzero")
opaque_reason("nearest upsampling by a fractional factor reads floor(h / scale): not affine",
              "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d")
opaque_reason("upsample_bilinear2d: each output mixes 4 inputs at (h + 0.5) / scale - 0.5 with fractional "
              "weights (not affine); the op reads its input and writes its output", "upsample_bilinear2d")
opaque_reason("upsample_bicubic2d: each output mixes 16 inputs with fractional weights (not affine)",
              "upsample_bicubic2d")
opaque_reason("upsample_trilinear3d: each output mixes 8 inputs with fractional weights (not affine)",
              "upsample_trilinear3d")
opaque_reason("upsample_linear1d: each output mixes 2 inputs with fractional weights (not affine)",
              "upsample_linear1d")
opaque_reason("grid sampling: data-dependent reads", "grid_sampler_2d")
opaque_reason("cumsum: a prefix scan (each output reads a growing window)", "cumsum")
opaque_reason("reflection / replication padding reads mirrored indices (a negative coefficient, which maps do not "
              "have): a copy with its true traffic", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d",
              "replication_pad1d", "replication_pad2d", "replication_pad3d", moves_data=True)


# ---------------------------------------------------------------- creation

@register("zeros", "ones", "full", "empty", "arange", "scalar_tensor", "empty_like", "new_zeros", "new_ones",
          "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
          "new_full", "new_empty", "rand", "randn", "tensor", "linspace", "logspace", "eye", "randint", "randperm",
          "empty_strided", "rand_like", "randn_like", "randint_like", kind="create")
def create(cx, node, name) -> None:
    cx.bind(node, cx.const_input(node.name, meta(node)))
    cx.set_row("folded", "creates a tensor without reading one: a graph input (constant) of the program",
               compute=False)


# ---------------------------------------------------------------- views (no op: the consumers' maps)

@register("view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", kind="view")
def reshape(cx, node, name):
    cx.row.reason = "reshape: splits are affine sums in the consumers' maps; merges are written by the producer"
    return cx.view_reshape(cx.tensor(node.args[0]), list(meta(node).shape), node)


@register("flatten", "unflatten", kind="view")
def flatten(cx, node, name):
    return cx.view_reshape(cx.tensor(node.args[0]), list(meta(node).shape), node)


@register("expand", "expand_as", kind="view")
def expand(cx, node, name):
    cx.row.reason = "expand: the broadcast dims read index 0 (the var drops out of the map)"
    return cx.view_expand(cx.tensor(node.args[0]), list(meta(node).shape))


@register("permute", kind="view")
def permute(cx, node, name):
    cx.row.reason = "permute: the consumers' maps permute their results"
    return cx.view_permute(cx.tensor(node.args[0]), list(node.args[1]))


@register("transpose", "t", "numpy_T", kind="view")
def transpose(cx, node, name):
    x = cx.tensor(node.args[0])
    r = len(x.shape)
    if name == "transpose":
        a, b = node.args[1] % max(r, 1), node.args[2] % max(r, 1)
    else:
        a, b = 0, max(r - 1, 0)
    perm = list(range(r))
    perm[a], perm[b] = perm[b], perm[a]
    cx.row.reason = "transpose: the consumers' maps swap two results"
    return cx.view_permute(x, perm)


@register("unsqueeze", kind="view")
def unsqueeze(cx, node, name):
    x = cx.tensor(node.args[0])
    cx.row.reason = "unsqueeze: a size-1 dim indexed by 0"
    return cx.view_insert(x, node.args[1] % (len(x.shape) + 1))


@register("squeeze", kind="view")
def squeeze(cx, node, name):
    x = cx.tensor(node.args[0])
    r = len(x.shape)
    dims = [i for i, s in enumerate(x.shape) if s == 1]
    if len(node.args) > 1:
        d = node.args[1]
        ds = [d] if isinstance(d, int) else list(d)
        dims = [q % r for q in ds if x.shape[q % r] == 1]
    cx.row.reason = "squeeze: size-1 dims drop out of the maps"
    return cx.view_drop(x, {d: 0 for d in dims}, [s for i, s in enumerate(x.shape) if i not in dims])


@register("slice", kind="view")
def slice_(cx, node, name):
    x = cx.tensor(node.args[0])
    dim = arg(node, 1, "dim", 0)
    start = arg(node, 2, "start", None)
    end = arg(node, 3, "end", None)
    step = arg(node, 4, "step", 1)
    start = 0 if start is None else start
    end = x.shape[dim % len(x.shape)] if end is None else min(end, 2 ** 62)
    cx.row.reason = f"slice: offset {start}, step {step} in the consumers' maps"
    return cx.view_slice(x, dim, start, end, step)


@register("select", kind="view")
def select(cx, node, name):
    x = cx.tensor(node.args[0])
    dim, idx = node.args[1] % len(x.shape), node.args[2]
    idx = idx + x.shape[dim] if idx < 0 else idx
    cx.row.reason = f"select: the constant {idx} in the consumers' maps"
    return cx.view_drop(x, {dim: idx}, [s for i, s in enumerate(x.shape) if i != dim])


@register("split", "split_with_sizes", "chunk", "unbind", kind="view")
def split(cx, node, name):
    x = cx.tensor(node.args[0])
    dim = arg(node, 2 if name != "unbind" else 1, "dim", 0) % len(x.shape)
    outs = []
    start = 0
    for m in meta(node):
        size = m.shape[dim] if name != "unbind" else 1
        if name == "unbind":
            outs.append(cx.view_drop(x, {dim: start}, [s for i, s in enumerate(x.shape) if i != dim]))
        else:
            outs.append(cx.view_slice(x, dim, start, start + size, 1))
        start += size
    cx.row.reason = f"{name}: one slice (offset in the consumers' maps) per piece"
    return outs


@register("alias", "detach", "lift_fresh", "lift_fresh_copy", kind="view")
def alias(cx, node, name):
    cx.row.reason = f"{name}: the same tensor"
    return cx.tensor(node.args[0])


# ---------------------------------------------------------------- compute

@register("addmm", "mm", "bmm", "baddbmm", "matmul", "linear")
def matmul(cx, node, name) -> bool:
    m = meta(node)
    dt = cx.dtype_of(m.dtype)
    bias = None
    if name in ("addmm", "baddbmm"):
        bias, a, b = (cx.val(x) for x in node.args[:3])
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return False
    elif name == "linear":
        a, w = cx.tensor(node.args[0]), cx.tensor(node.args[1])
        b = cx.view_permute(w, [1, 0])
        bias = cx.val(arg(node, 2, "bias"))
    else:
        a, b = cx.tensor(node.args[0]), cx.tensor(node.args[1])
    if len(a.shape) < 2 or len(b.shape) < 2:
        return False
    out_shape = list(m.shape)
    r = len(out_shape)
    # Vars: output dims of size > 1 (batch.., M, N) then K.
    var_of: Dict[int, int] = {}
    for od in range(r):
        if out_shape[od] > 1:
            var_of[od] = len(var_of)
    k = len(var_of)
    am: List[Optional[int]] = [None] * len(a.shape)
    bm: List[Optional[int]] = [None] * len(b.shape)
    for i in range(len(a.shape) - 2):
        am[i] = var_of.get(r - len(a.shape) + i) if a.shape[i] > 1 else None
    for i in range(len(b.shape) - 2):
        bm[i] = var_of.get(r - len(b.shape) + i) if b.shape[i] > 1 else None
    am[-2], am[-1] = (var_of.get(r - 2) if a.shape[-2] > 1 else None), k
    bm[-2], bm[-1] = k, (var_of.get(r - 1) if b.shape[-1] > 1 else None)
    mmname = node.name + ("_mm" if isinstance(bias, Val) else "")
    out = Val.whole(cx.new_pt(mmname, out_shape, dt))
    om = [var_of.get(od) for od in range(r)]
    ranges = [out_shape[od] for od in sorted(var_of)] + [a.shape[-1]]
    if a.shape[-1] == 1:
        cx.pointwise("mul", [a, b], out_shape, dt, name=mmname, out=out)
    else:
        cx.emit("matmul", "matmul", [(a, am), (b, bm)], [(out, om)], ["parallel"] * k + ["reduction"],
                  name=mmname, ranges=ranges)
    # A weight read only here as a transposed B ([N, K] read as (k, n)) is laid out sticked on
    # N, the layout matmul needs (weights are laid out once when loaded, as torch-spyre does).
    w = b.pt
    if (w.graph_input and w.reads == 1 and len(w.shape) == 2 and len(b.shape) == 2 and b.off == [0, 0]
            and b.terms == [{1: 1}, {0: 1}] and w.dim_order is None):
        w.dim_order = [1, 0]
    if isinstance(bias, Val):
        out = cx.pointwise("add", [out, bias], out_shape, dt, name=node.name)
    cx.bind(node, out)
    why = {"addmm": "matmul + bias add", "baddbmm": "batched matmul + add", "linear": "matmul (B = W^T) + bias",
           "bmm": "batched matmul", "mm": "matmul", "matmul": "matmul"}[name]
    cx.set_row("mapped", why + "; transposed operands are maps, not copies")
    return True


def _zero_insert(cx, node, x, w, stride, padding, dilation, nd):
    """A transposed convolution is a stride-1 convolution, with the filter flipped, of its input
    spread out: z[h * stride + P] = x[h], zero elsewhere, P = dilation * (k - 1) - padding.
    Returns (z, flipped filter), or None after emitting an opaque op when that form does not fit.
    The flip reads index k - 1 - r (a negative coefficient, which maps do not have), so the filter
    is flipped once when the model is loaded, like the other computations on weights only."""
    k = w.shape[2:]
    P = [dilation[i] * (k[i] - 1) - padding[i] for i in range(nd)]
    if any(p < 0 for p in P) or not (w.pt.weight or w.pt.const):
        cx.do_opaque(node, "convolution (transposed): padding beyond the kernel or a filter computed in forward "
                     "has no exact form here")
        return None
    out_shape = meta(node).shape
    r = len(x.shape)
    zshape = list(x.shape[:2]) + [out_shape[2 + i] + dilation[i] * (k[i] - 1) for i in range(nd)]
    z = cx.new_pt(node.name + "_spread", zshape, x.pt.dtype)
    var_of = {}
    for d in range(r):
        if x.shape[d] > 1 or zshape[d] > 1:  # a written dim of size > 1 needs a var (as in pad)
            var_of[d] = len(var_of)
    xe = [{var_of[d]: 1} if d in var_of else {} for d in range(r)]
    ze = [{var_of[d]: 1 if d < 2 else stride[d - 2]} if d in var_of else {} for d in range(r)]
    outv = Val(z, x.shape, [{j: 1} for j in range(r)], [0, 0] + P)
    cx.emit_exprs("pointwise", "pad", [(x, xe)], [(outv, ze)], ["parallel"] * len(var_of),
                  [x.shape[d] for d in sorted(var_of)], name=node.name + "_spread")
    wf = cx.new_pt(w.pt.name + "_flipped", w.shape, w.pt.dtype, graph_input=True)
    wf.weight = w.pt.weight
    wf.const = w.pt.const
    return Val.whole(z), Val.whole(wf)


@register("convolution", "_convolution")
def convolution(cx, node, name) -> bool:
    x, w = cx.tensor(node.args[0]), cx.tensor(node.args[1])
    bias = cx.val(node.args[2])
    stride, padding, dilation, transposed, output_padding, groups = node.args[3:9]
    m = meta(node)
    nd = len(x.shape) - 2
    if nd not in (1, 2, 3):
        return False
    if transposed:
        zw = _zero_insert(cx, node, x, w, stride, padding, dilation, nd)
        if zw is None:
            return True
        (x, w), tstride, stride, padding = zw, list(stride), [1] * nd, [0] * nd
    if any(p > 0 for p in padding):
        pad = []
        for p in reversed(list(padding)):
            pad += [p, p]
        x = cx.pad(x, pad, 0, node.name + "_pad")
    out_shape = list(m.shape)
    N, O = out_shape[0], out_shape[1]
    C = x.shape[1]
    G = groups
    Cg, Og = C // G, O // G
    # Vars: n, [g], [k], spatial outs, [c], kernel spatial.
    iters, ranges = [], []

    def var(kind: str, ext: int) -> Optional[int]:
        if ext == 1:
            return None
        iters.append(kind)
        ranges.append(ext)
        return len(iters) - 1
    vn = var("parallel", N)
    vg = var("parallel", G)
    vk = var("parallel", Og)
    vh = [var("parallel", out_shape[2 + i]) for i in range(nd)]
    vc = var("reduction", Cg)
    vr = [var("reduction", w.shape[2 + i]) for i in range(nd)]

    def e(*terms):
        return {v: c for v, c in terms if v is not None}
    # Maps as explicit expressions over the base program tensors (views composed by hand).
    xin = [e((vn, 1)), e((vg, Cg), (vc, 1))] + [e((vh[i], stride[i]), (vr[i], dilation[i])) for i in range(nd)]
    if transposed:  # the filter is [C, O / G, k...]
        win = [e((vg, Cg), (vc, 1)), e((vk, 1))] + [e((vr[i], 1)) for i in range(nd)]
    else:
        win = [e((vg, Og), (vk, 1)), e((vc, 1))] + [e((vr[i], 1)) for i in range(nd)]
    yout = [e((vn, 1)), e((vg, Og), (vk, 1))] + [e((vh[i], 1)) for i in range(nd)]
    y = Val.whole(cx.new_pt(node.name + ("_conv" if isinstance(bias, Val) else ""), out_shape, cx.dtype_of(m.dtype)))
    ops = []
    for v, exprs in ((x, xin), (w, win), (y, yout)):
        ops.append((v, exprs))
    cx.emit_exprs("reduction" if "reduction" in iters else "pointwise", f"conv{nd}d", ops[:2], ops[2:], iters, ranges,
                    name=node.name + ("_conv" if isinstance(bias, Val) else ""))
    # A filter read only here (a graph input) is sticked on its input channels when they
    # outnumber its kernel width: the default layout sticks a 3x3 filter on its width, 3 elements
    # padded to a 64-element stick (21 times its bytes). Sticked on C it is a contraction operand
    # the convolution reads like a matmul's A on K (docs/layout.md); weights are laid out once
    # when loaded, as for nn.Linear above.
    wp = w.pt
    if (not transposed and wp.graph_input and wp.reads == 1 and w.is_identity() and wp.dim_order is None and len(wp.shape) == nd + 2
            and wp.shape[-1] > 1 and wp.shape[1] > wp.shape[-1]):
        wp.dim_order = [0] + list(range(2, nd + 2)) + [1]
    if isinstance(bias, Val):
        shape = [1] * len(out_shape)
        shape[1] = O
        y = cx.pointwise("add", [y, cx.view_reshape(bias, shape, node)], out_shape, y.pt.dtype, name=node.name)
    cx.bind(node, y)
    if transposed:
        cx.set_row("mapped", f"transposed conv{nd}d (stride {tstride}, groups {G}): a copy writes the input at "
                   f"h * {tstride[0]} + {dilation[0] * (w.shape[2] - 1) - node.args[4][0]} of a zero tensor, then a "
                   "stride-1 convolution with the filter flipped once when loaded (exact affine-sum maps)"
                   + (", bias add" if isinstance(bias, Val) else ""))
        return True
    cx.set_row("mapped", f"conv{nd}d (stride {list(stride)}, groups {G}): exact affine-sum maps"
                 + (", explicit pad op" if any(p > 0 for p in padding) else "") + (", bias add" if isinstance(bias, Val) else ""))
    return True


@register("_softmax", "softmax", "_log_softmax", "log_softmax")
def softmax(cx, node, name) -> bool:
    x = cx.tensor(node.args[0])
    dim = node.args[1] % len(x.shape)
    dt = cx.out_dtype(node)
    mx = cx.reduce("max", x, [dim], True, dt, name=node.name + "_max")
    e = cx.pointwise("sub_exp", [x, mx], x.shape, dt, name=node.name + "_exp")
    s = cx.reduce("sum", e, [dim], True, dt, name=node.name + "_sum")
    log = "log" in name
    out = cx.pointwise("log_div" if log else "div", [e, s] if not log else [x, mx, s], x.shape, dt, name=node.name)
    cx.bind(node, out)
    cx.set_row("mapped", "softmax: max, sub+exp, sum, div over the dim (4 ops)")
    return True


@register("native_layer_norm", "layer_norm")
def layer_norm(cx, node, name) -> bool:
    x = cx.tensor(node.args[0])
    shape = node.args[1]
    w, b = cx.val(arg(node, 2, "weight")), cx.val(arg(node, 3, "bias"))
    dt = cx.out_dtype(node)
    dims = list(range(len(x.shape) - len(shape), len(x.shape)))
    mean, xc, rstd = cx.normalize(x, dims, dt, node.name)
    ins = [xc, rstd] + [v for v in (w, b) if isinstance(v, Val)]
    y = cx.pointwise("mul_affine", ins, x.shape, dt, name=node.name)
    cx.bind(node, [y, mean, rstd] if name == "native_layer_norm" else y)
    cx.set_row("mapped", "layer norm: mean, centre, mean of squares, rsqrt, scale+shift (5 ops)")
    return True


@register("native_group_norm")
def group_norm(cx, node, name) -> bool:
    # Layer norm over each group: x viewed as [N, G, C / G, *spatial], normalized over all
    # but the first two dims, the per-channel weight and bias viewed as [1, G, C / G, 1...].
    x = cx.tensor(node.args[0])
    w, b = cx.val(node.args[1]), cx.val(node.args[2])
    G = int(node.args[6])
    N, C, rest = x.shape[0], x.shape[1], list(x.shape[2:])
    if G < 1 or C % G:
        return False
    gshape = [N, G, C // G] + rest
    xg = cx.view_reshape(x, gshape, node)
    dims = list(range(2, len(gshape)))
    dt = cx.out_dtype(node)
    mean, xc, rstd = cx.normalize(xg, dims, dt, node.name)
    cshape = [1, G, C // G] + [1] * len(rest)
    ins = [xc, rstd] + [cx.view_reshape(v, cshape, node) for v in (w, b) if isinstance(v, Val)]
    y = cx.pointwise("mul_affine", ins, gshape, dt, name=node.name)
    cx.bind(node, [cx.view_reshape(y, list(x.shape), node), cx.view_reshape(mean, [N, G], node),
                     cx.view_reshape(rstd, [N, G], node)])
    cx.set_row("mapped", "group norm: layer norm over [N, G, C/G, ...] (5 ops; the outputs are views)")
    return True


@register("glu")
def glu(cx, node, name) -> bool:
    m = meta(node)
    x = cx.tensor(node.args[0])
    dim = arg(node, 1, "dim", -1) % len(x.shape)
    half = x.shape[dim] // 2
    a, g = cx.view_slice(x, dim, 0, half, 1), cx.view_slice(x, dim, half, 2 * half, 1)
    cx.bind(node, cx.pointwise("mul_sigmoid", [a, g], list(m.shape), cx.out_dtype(node), name=node.name))
    cx.set_row("mapped", "glu: a * sigmoid(b) over the two halves (views)")
    return True


@register("prelu")
def prelu(cx, node, name) -> bool:
    x, w = cx.tensor(node.args[0]), cx.tensor(node.args[1])
    if len(w.shape) == 1 and w.shape[0] > 1 and len(x.shape) >= 2:
        shape = [1] * len(x.shape)
        shape[1] = w.shape[0]
        w = cx.view_reshape(w, shape, node)
    cx.bind(node, cx.pointwise("prelu", [x, w], x.shape, cx.out_dtype(node), name=node.name))
    cx.set_row("mapped", "prelu: one pointwise op, the slope per channel")
    return True


def _batch_statistics_norm(cx, node, x) -> bool:
    """Batch norm with the statistics of its input (training=True): what InstanceNorm runs, on x
    viewed as [1, N * C, ...], so the statistics are per (n, c). A layer norm per channel over
    every other dim, the same 5 ops as group norm. Running statistics that are buffers would be
    updated in place: opaque (eval-mode tracing only meets them in BatchNorm without running stats)."""
    if any(isinstance(v, Val) and v.pt.weight for v in (cx.val(arg(node, 3, "running_mean")),
                                                         cx.val(arg(node, 4, "running_var")))):
        return False
    w, b = cx.val(arg(node, 1, "weight")), cx.val(arg(node, 2, "bias"))
    dims = [0] + list(range(2, len(x.shape)))
    dt = cx.out_dtype(node)
    mean, xc, rstd = cx.normalize(x, dims, dt, node.name)
    shape = [1] * len(x.shape)
    shape[1] = x.shape[1]
    ins = [xc, rstd] + [cx.view_reshape(v, shape, node) for v in (w, b) if isinstance(v, Val)]
    y = cx.pointwise("mul_affine", ins, x.shape, dt, name=node.name)
    m = meta(node)
    if isinstance(m, (list, tuple)):
        stats = [cx.view_reshape(s, list(mm.shape), node) if isinstance(mm, TM) else None
                 for s, mm in zip((mean, rstd), list(m)[1:3])]
        cx.bind(node, ([y] + stats + [None] * len(m))[:len(m)])
    else:
        cx.bind(node, y)
    cx.set_row("mapped", "batch norm with batch statistics (instance norm: per (n, c) of [1, N*C, ...]): mean, "
               "centre, mean of squares, rsqrt, scale+shift (5 ops)")
    return True


@register("native_batch_norm", "_native_batch_norm_legit_no_training", "batch_norm", "_native_batch_norm_legit")
def batch_norm(cx, node, name) -> bool:
    m = meta(node)
    x = cx.tensor(node.args[0])
    training = arg(node, 5, "training", False)
    if training and name != "_native_batch_norm_legit_no_training":
        return _batch_statistics_norm(cx, node, x)
    ins = [x]
    shape = [1] * len(x.shape)
    shape[1] = x.shape[1]
    for a in node.args[1:5]:
        v = cx.val(a)
        if isinstance(v, Val):
            ins.append(cx.view_reshape(v, shape, node) if len(v.shape) == 1 else v)
    dt = cx.out_dtype(node)
    y = cx.pointwise("batch_norm", ins, x.shape, dt, name=node.name)
    outs = [y]
    if isinstance(m, (list, tuple)):
        for k, mm in enumerate(list(m)[1:]):
            pt = cx.new_pt(f"{node.name}_{k + 1}", list(mm.shape), cx.dtype_of(mm.dtype), graph_input=True)
            outs.append(Val.whole(pt))
    cx.bind(node, outs if isinstance(m, (list, tuple)) else y)
    cx.set_row("mapped", "batch norm (inference): one pointwise op with per-channel statistics")
    return True


@register("mean", "sum", "amax", "amin", "var", "std", "prod", "any", "all", "logsumexp", "norm",
          "linalg_vector_norm", "max", "min", "argmax", "argmin")
def reduction(cx, node, name) -> bool:
    m = meta(node)
    if name in ("max", "min") and len(node.args) > 1 and isinstance(node.args[1], torch.fx.Node):
        return elementwise(cx, node, "maximum" if name == "max" else "minimum")  # the binary overloads
    if not (isinstance(m, TM) or (name in ("max", "min") and isinstance(m, (list, tuple)))):
        return False
    x = cx.tensor(node.args[0])
    r = len(x.shape)
    if name in ("norm", "linalg_vector_norm"):
        dims = arg(node, 2, "dim", None)
        keep = arg(node, 3, "keepdim", False)
    elif name in ("var", "std"):
        dims = arg(node, 1, "dim", None)
        keep = node.kwargs.get("keepdim", arg(node, 3, "keepdim", False))
    else:
        dims = arg(node, 1, "dim", None)
        keep = arg(node, 2, "keepdim", False)
    if dims is None:
        dims = list(range(r))
    dims = [dims] if isinstance(dims, int) else list(dims)
    mv = m[0] if isinstance(m, (list, tuple)) else m
    out = cx.reduce(_REDUCE.get(name, name), x, dims, bool(keep), cx.dtype_of(mv.dtype), name=node.name)
    if isinstance(m, (list, tuple)) and uses_output(node, 1):
        idx = cx.fresh(node.name + "_indices", m[1])
        cx.opaque("argmax_indices", [x], [idx], name=node.name + "_indices")
        cx.bind(node, [out, idx])
        cx.set_row("mapped", "reduction; its indices output is an opaque op (data-dependent)")
    else:
        cx.bind(node, [out, None] if isinstance(m, (list, tuple)) else out)
        cx.set_row("mapped", f"reduction ({_REDUCE.get(name, name)}) over dims {sorted(d % r for d in dims)}")
    return True


@register("as_strided", "as_strided_")
def as_strided(cx, node, name) -> bool:
    # Only the restride of a whole contiguous tensor to its own shape (meta kernels emit it
    # after adaptive pooling) is a no-op; any other stride pattern is opaque.
    x = cx.tensor(node.args[0])
    size, stride = list(node.args[1]), list(node.args[2])
    off = arg(node, 3, "storage_offset", 0) or 0
    contiguous = [math.prod(size[i + 1:]) for i in range(len(size))]
    if x.is_identity() and size == x.shape and off == 0 and all(
            a == b or n == 1 for a, b, n in zip(stride, contiguous, size)):
        cx.bind(node, x)
        cx.set_row("folded", f"{name} to the tensor's own shape and contiguous strides: the same tensor",
                     compute=False)
        return True
    # A tensor with one dim of size > 1 (a padded signal) restrided into overlapping frames
    # (torch.stft's framing, x.unfold): base index off + sum(stride * i), an affine view.
    big = [j for j, n in enumerate(x.pt.shape) if n > 1]
    whole = math.prod(x.shape) == math.prod(x.pt.shape) and not any(x.off) and (
        not big or any(x.terms[big[0]] == {i: 1} and x.shape[i] == x.pt.shape[big[0]] for i in range(len(x.shape))))
    if name == "as_strided" and whole and len(big) <= 1 and all(st >= 0 for st in stride) and \
            off + sum(st * (n - 1) for st, n in zip(stride, size)) < math.prod(x.pt.shape):
        terms = [{} for _ in x.pt.shape]
        offs = [0] * len(x.pt.shape)
        if big:
            terms[big[0]] = {i: st for i, (st, n) in enumerate(zip(stride, size)) if st and n > 1}
            offs[big[0]] = off
        cx.bind(node, Val(x.pt, size, terms, offs))
        cx.set_row("folded", f"{name} of a 1-D signal into frames: the view reads off + sum(stride * i)",
                   compute=False)
        return True
    return False


@register("embedding")
def embedding(cx, node, name) -> bool:
    cx.do_opaque(node, _registry.reason(name), payload="gather", compute=False)
    return True


@register("cat", "stack")
def cat(cx, node, name) -> bool:
    m = meta(node)
    # Pieces without elements (an empty right context) add nothing: dropped.
    tensors = [t for t in (cx.tensor(a) for a in node.args[0]) if 0 not in t.shape]
    dim = arg(node, 1, "dim", 0)
    if len(tensors) == 1 and name == "cat":
        cx.bind(node, cx.copy(tensors[0], "copy", name=node.name))
        cx.set_row("folded", "concat of one piece with elements (the others have none): a copy op", compute=False)
        return True
    out = cx.fresh(node.name, m)
    cx.opaque("concat", tensors, [out])
    cx.bind(node, out)
    cx.set_row("folded", f"{'concat' if name == 'cat' else 'stack'} along dim {dim}: a copy op (opaque kind: one op writes each output once, "
                           "and its pieces come from different inputs)", compute=False)
    return True


@register("constant_pad_nd")
def constant_pad_nd(cx, node, name) -> bool:
    x = cx.tensor(node.args[0])
    pad = list(node.args[1])
    value = arg(node, 2, "value", 0)
    out = cx.pad(x, pad, value, node.name)
    cx.bind(node, out)
    cx.set_row("folded", "pad: a copy op writing the input at an offset (pointwise, offset output map)",
                 compute=False)
    return True


@register("roll")
def roll(cx, node, name) -> bool:
    """roll(x, s, d): out = cat(x[n - s:], x[:n - s]) along d, per rolled dim: slices (views)
    written one after the other, a copy op like cat. Not one affine map: out[i] reads
    x[(i - s) mod n]; and one op must write each output, so the pieces are one opaque copy."""
    x = cx.tensor(node.args[0])
    shifts, dims = arg(node, 1, "shifts", []), arg(node, 2, "dims", [])
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims or len(dims) != len(shifts):
        return False  # a roll of the flattened tensor: its pieces are not slices of x
    out = cx.fresh(node.name, meta(node))
    cx.opaque("roll", [x], [out])
    cx.bind(node, out)
    cuts = ", ".join(f"dim {d % len(x.shape)} at {x.shape[d] - s % x.shape[d]}" for s, d in zip(shifts, dims))
    cx.set_row("folded", f"roll: slices of the input ({cuts}) written in rolled order, a copy op like cat (opaque "
               "kind: the pieces need different maps)", compute=False)
    return True


def _add_into_view(cx, node, base: str, tgt: Val, v: Val) -> bool:
    """x[s] += v where x is read again as a whole (MViT v2's relative position bias added to a
    block of the attention scores): v is written into zeros at the view (a pad op, rest zero),
    then x + that is one whole pointwise op, exact. Later readers of x read the new tensor. Only
    for views that index every dim of x of size > 1 with a var (slices; a select would write a
    constant index of a larger dim, which outputs may not)."""
    pt = tgt.pt
    for j, terms in enumerate(tgt.terms):
        if pt.shape[j] > 1 and not any(tgt.shape[i] > 1 for i in terms):
            return False
    used = {i for terms in tgt.terms for i in terms}
    if pt.graph_input or any(s > 1 and i not in used for i, s in enumerate(tgt.shape)):
        return False  # an input (never written) or an expanded view (several elements to one)
    at = Val(cx.new_pt(node.name + "_at_view", pt.shape, pt.dtype), tgt.shape, tgt.terms, tgt.off)
    cx.pointwise("pad", [v], tgt.shape, pt.dtype, name=node.name + "_at_view", out=at)
    out = cx.pointwise(base, [Val.whole(pt), Val.whole(at.pt)], pt.shape, pt.dtype, name=node.name)
    cx.rebind(pt, out.pt)
    cx.bind(node, Val(out.pt, tgt.shape, tgt.terms, tgt.off))
    cx.set_row("mapped", f"in-place {base} on a view read again: the operand written into zeros at the view (pad), "
               f"then a whole {base} (exact)")
    return True


@register(*_UNARY, *_BINARY, *(n + "_" for n in _UNARY | _BINARY))
def elementwise(cx, node, name) -> bool:
    m = meta(node)
    if not isinstance(m, TM):
        return False
    ins = [cx.val(a) for a in node.args if isinstance(cx.val(a), Val)]
    ins += [cx.val(a) for a in node.kwargs.values() if isinstance(cx.val(a), Val)]
    base = name.rstrip("_")
    inplace = name.endswith("_") and node.args and isinstance(cx.val(node.args[0]), Val)
    if name in ("clone", "contiguous", "_to_copy", "to", "copy"):
        x = ins[0]
        dt = cx.dtype_of(m.dtype)
        if x.is_identity() and dt == x.pt.dtype and not cx.has_inplace:
            cx.bind(node, x)
            cx.set_row("folded", f"{name} of a whole tensor moves no bytes in a planned program: the same tensor",
                         compute=False)
            return True
        out = cx.copy(x, "copy" if dt == x.pt.dtype else "cast", name=node.name, dtype=dt)
        cx.bind(node, out)
        cx.set_row("folded", f"{name}: a copy op materializes the view (pointwise, view maps on the input)",
                     compute=False)
        return True
    if base in ("zeros_like", "ones_like", "full_like", "fill", "zero", "empty_like"):
        pt = cx.new_pt(node.name, list(m.shape), cx.dtype_of(m.dtype), graph_input=True)
        pt.const = True
        cx.bind(node, Val.whole(pt))
        cx.set_row("folded", "creates a constant tensor: a graph input of the program", compute=False)
        return True
    if inplace and all(v.pt.const for v in ins):
        # Constant folding of an update of a constant (swin's attention mask: slices of a
        # zeros tensor set to region numbers): it stays a constant, with no op.
        cx.bind(node, ins[0])
        cx.set_row("folded", "updates a constant with constants: still a constant", compute=False)
        return True
    if not ins:  # (ops on constants and weights were folded by fold_constant already)
        pt = cx.new_pt(node.name, list(m.shape), cx.dtype_of(m.dtype), graph_input=True)
        pt.const = True
        cx.bind(node, Val.whole(pt))
        cx.set_row("folded", "computes on constants only: a graph input of the program", compute=False)
        return True
    if name == "copy_" and len(ins) == 2 and ins[0].pt is ins[1].pt and V.same_view(ins[0], ins[1]):
        # x[s] += v in Python is add_ on the view, then x[s] = that view: a copy onto itself.
        cx.bind(node, ins[0])
        cx.set_row("folded", "copy_ of a view onto itself (x[s] += v writes back x[s]): no bytes move", compute=False)
        return True
    partial = False  # in place on a view that no later reader sees through another view
    if inplace:
        tgt = ins[0]
        if not tgt.is_identity():
            if not cx.view_update_is_private(node, tgt):
                if base in ("add", "sub") and len(ins) == 2 and _add_into_view(cx, node, base, tgt, ins[1]):
                    return True
                # copy_ into a view (pad_sequence writes each sequence into a padded tensor) moves
                # data and does no arithmetic: like cat, not a compute op.
                cx.do_opaque(node, "in-place op on a view (partial update of a tensor)", compute=base != "copy")
                return True
            partial = True
    if name == "copy_":
        ins = [cx.tensor(node.args[1])]  # x.copy_(src) overwrites x: it does not read x
    out = cx.pointwise(base, ins, list(m.shape), cx.dtype_of(m.dtype), name=node.name)
    if partial:
        # Later readers of this very view read the new tensor; the others are disjoint or dead.
        # (tgt is the view written, also for copy_, whose ins now hold only the source.)
        for n in cx.viewers(tgt.pt):
            v = cx.env.get(n)
            if isinstance(v, Val) and v.pt is tgt.pt and V.same_view(v, tgt):
                cx.env[n] = Val.whole(out.pt)
                cx.node_pts.setdefault(id(out.pt), []).append(n)
    elif inplace:
        # The op writes a new program tensor; later readers of the mutated tensor read it.
        cx.rebind(ins[0].pt, out.pt)
    cx.bind(node, out)
    cx.set_row("mapped", f"pointwise {base}" + (" (in place: writes a new tensor)" if inplace else ""))
    return True


def _parallel_vars(iters: List[str], ranges: List[int]):
    """var(extent): a new parallel iteration variable of that extent (None for extent 1, which
    needs no variable), appended to iters/ranges of a copy map."""
    def var(ext: int) -> Optional[int]:
        if ext == 1:
            return None
        iters.append("parallel")
        ranges.append(ext)
        return len(iters) - 1
    return var


def _affine_terms(*terms):
    """{variable: coefficient} of an affine index, skipping the variables of extent 1."""
    return {v: c for v, c in terms if v is not None}


@register("index_put", "index_put_")
def index_put(cx, node, name) -> bool:
    """``x[mask] = v`` with one boolean mask over x's leading dims and a single value (wav2vec2
    zeroes the frames past each length so): ``where(mask, v, x)``, one pointwise op. Other index
    puts write elements chosen by an index tensor: opaque."""
    x, idx, vals = cx.val(node.args[0]), node.args[1], cx.val(node.args[2])
    if arg(node, 3, "accumulate", False) or not isinstance(x, Val) or len(idx) != 1 or idx[0] is None:
        return False
    mask, mm = cx.val(idx[0]), meta(idx[0])
    if not isinstance(mask, Val) or mm.dtype != torch.bool or list(mask.shape) != x.shape[:len(mask.shape)]:
        return False
    if not isinstance(vals, Val) or math.prod(vals.shape) != 1 or (name.endswith("_") and not x.is_identity()):
        return False
    while len(mask.shape) < len(x.shape):  # the mask covers the leading dims: trailing size-1 dims
        mask = cx.view_insert(mask, len(mask.shape))
    out = cx.pointwise("where", [mask, vals, x], x.shape, x.pt.dtype, name=node.name)
    if name.endswith("_"):
        cx.rebind(x.pt, out.pt)  # later readers of x read the new tensor
    cx.bind(node, out)
    cx.set_row("mapped", "x[mask] = v with a boolean mask: where(mask, v, x), pointwise" +
               (" (in place: writes a new tensor)" if name.endswith("_") else ""))
    return True


@register("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "pixel_shuffle")
def spread(cx, node, name) -> bool:
    """Nearest upsampling by integer factors and pixel shuffle: a copy whose output map is an
    affine sum. Iterating the input index h and the offset r within a factor f, the output
    index is f * h + r, so no division appears (out[f*h + r] = in[h]; pixel shuffle reads
    channel c*f*f + i*f + j into out[c, f*h + i, f*w + j])."""
    x = cx.tensor(node.args[0])
    out_shape = list(meta(node).shape)
    iters: List[str] = []
    ranges: List[int] = []
    var = _parallel_vars(iters, ranges)
    e = _affine_terms
    if name == "pixel_shuffle":
        f = int(node.args[1])
        if len(x.shape) < 3 or x.shape[-3] % (f * f):
            return False
        lead = [var(d) for d in x.shape[:-3]]
        vc, vi, vj = var(x.shape[-3] // (f * f)), var(f), var(f)
        vh, vw = var(x.shape[-2]), var(x.shape[-1])
        xin = [e((v, 1)) for v in lead] + [e((vc, f * f), (vi, f), (vj, 1)), e((vh, 1)), e((vw, 1))]
        yout = [e((v, 1)) for v in lead] + [e((vc, 1)), e((vh, f), (vi, 1)), e((vw, f), (vj, 1))]
        why = f"pixel shuffle by {f}: a copy, channel c*{f * f} + i*{f} + j to (c, {f}h + i, {f}w + j)"
    else:
        k = len(x.shape) - 2
        if k < 1 or any(o % i for o, i in zip(out_shape[2:], x.shape[2:])):
            cx.do_opaque(node, _registry.reason(name))
            return True
        facs = [o // i for o, i in zip(out_shape[2:], x.shape[2:])]
        lead = [var(d) for d in x.shape[:2]]
        vs = [var(d) for d in x.shape[2:]]
        vr = [var(f) for f in facs]
        xin = [e((v, 1)) for v in lead] + [e((v, 1)) for v in vs]
        yout = [e((v, 1)) for v in lead] + [e((v, f), (r, 1)) for v, r, f in zip(vs, vr, facs)]
        why = f"nearest upsampling by {facs}: a copy, out[f*h + r] = in[h]"
    y = Val.whole(cx.new_pt(node.name, out_shape, cx.out_dtype(node)))
    cx.emit_exprs("pointwise", "copy", [(x, xin)], [(y, yout)], iters, ranges, name=node.name)
    cx.bind(node, y)
    cx.set_row("mapped", why)
    return True


@register("max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "_adaptive_avg_pool2d",
          "max_pool3d_with_indices", "max_pool3d", "avg_pool3d", "_adaptive_avg_pool3d")
def pool(cx, node, name) -> bool:
    x = cx.tensor(node.args[0])
    nd = 3 if "3d" in name else 2
    sp = list(x.shape[-nd:])
    if name.startswith("_adaptive_avg_pool"):
        # Exact when the output divides the input: a window of in / out with the same stride.
        osz = list(node.args[1])
        if any(i % o for i, o in zip(sp, osz)):
            cx.do_opaque(node, f"adaptive average pool {'x'.join(map(str, sp))} -> {'x'.join(map(str, osz))}: "
                         "windows of varying size")
            return True
        ks = [i // o for i, o in zip(sp, osz)]
        stride, padding, dil = list(ks), [0] * nd, [1] * nd
    else:
        ks = list(node.args[1])
        stride = list(arg(node, 2, "stride", []) or ks)
        padding = list(arg(node, 3, "padding", [0] * nd))
        dil = list(arg(node, 4, "dilation", [1] * nd)) if not name.startswith("avg") else [1] * nd
    ks, stride, padding, dil = (v * nd if len(v) == 1 else v for v in (ks, stride, padding, dil))
    m = meta(node)
    mv = m[0] if isinstance(m, (list, tuple)) else m
    out_shape = list(mv.shape)
    # ceil_mode: the last window may run past the padded input; pad the high side to cover it.
    hi = list(padding)
    for i in range(nd):
        need = (out_shape[-nd + i] - 1) * stride[i] + (ks[i] - 1) * dil[i] + 1
        hi[i] = max(hi[i], need - sp[i] - padding[i])
    if any(padding) or any(hi):
        # Max pools pad with -inf (the pad op's payload says so), average pools with 0.
        pad = []
        for i in reversed(range(nd)):
            pad += [padding[i], hi[i]]
        x = cx.pad(x, pad, 0, node.name + "_pad", payload="pad_neg_inf" if "max" in name else "pad")
    r = len(out_shape)
    iters, ranges = [], []

    def var(kind, ext):
        if ext == 1:
            return None
        iters.append(kind)
        ranges.append(ext)
        return len(iters) - 1
    lead = [var("parallel", out_shape[i]) for i in range(r - nd)]
    vh = [var("parallel", out_shape[r - nd + i]) for i in range(nd)]
    vr = [var("reduction", ks[i]) for i in range(nd)]

    def e(*terms):
        return {v: c for v, c in terms if v is not None}
    xin = [e((v, 1)) for v in lead] + [e((vh[i], stride[i]), (vr[i], dil[i])) for i in range(nd)]
    yout = [e((v, 1)) for v in lead] + [e((vh[i], 1)) for i in range(nd)]
    y = Val.whole(cx.new_pt(node.name, out_shape, cx.dtype_of(mv.dtype)))
    cx.emit_exprs("reduction" if "reduction" in iters else "pointwise", ("max" if "max" in name else "avg") + f"_pool{nd}d",
                  [(x, xin)], [(y, yout)], iters, ranges, node.name)
    if isinstance(m, (list, tuple)) and uses_output(node, 1):
        idx = cx.fresh(node.name + "_indices", m[1])
        cx.opaque("pool_indices", [x], [idx], name=node.name + "_indices")
        cx.bind(node, [y, idx])
    elif isinstance(m, (list, tuple)):
        cx.bind(node, [y, None])
    else:
        cx.bind(node, y)
    cx.set_row("mapped", f"{name}: reduction over the window with affine-sum maps (h * {stride[0]} + r)"
               + ("; the indices output is an opaque op" if isinstance(m, (list, tuple)) else ""))
    return True


@register("im2col")
def im2col(cx, node, name) -> bool:
    """F.unfold: out[n, c*kh*kw + i*kw + j, oh*OW + ow] = x[n, c, oh*sh + i*dh - ph, ow*sw + j*dw - pw].
    Iterating (c, i, j, oh, ow), both maps are affine sums (no division): a pad op for the
    padding, then one copy, exact (RAFT's correlation lookup was 12 opaque ops)."""
    x = cx.tensor(node.args[0])
    ks, dil, pad, st = (list(node.args[k]) for k in range(1, 5))
    if len(x.shape) not in (3, 4) or len(ks) != 2:
        return False
    if any(pad):
        x = cx.pad(x, [pad[1], pad[1], pad[0], pad[0]], 0, node.name + "_pad")
    H, W = x.shape[-2:]
    oh_n = (H - dil[0] * (ks[0] - 1) - 1) // st[0] + 1
    ow_n = (W - dil[1] * (ks[1] - 1) - 1) // st[1] + 1
    iters: List[str] = []
    ranges: List[int] = []
    var = _parallel_vars(iters, ranges)
    e = _affine_terms
    lead = [var(d) for d in x.shape[:-3]]
    vc, vi, vj, voh, vow = var(x.shape[-3]), var(ks[0]), var(ks[1]), var(oh_n), var(ow_n)
    xin = [e((v, 1)) for v in lead] + [e((vc, 1)), e((voh, st[0]), (vi, dil[0])), e((vow, st[1]), (vj, dil[1]))]
    yout = [e((v, 1)) for v in lead] + [e((vc, ks[0] * ks[1]), (vi, ks[1]), (vj, 1)), e((voh, ow_n), (vow, 1))]
    y = Val.whole(cx.new_pt(node.name, list(meta(node).shape), cx.out_dtype(node)))
    cx.emit_exprs("pointwise", "copy", [(x, xin)], [(y, yout)], iters, ranges, name=node.name)
    cx.bind(node, y)
    cx.set_row("mapped", f"im2col (unfold) {ks[0]}x{ks[1]}: a copy, (c, i, j, oh, ow) to (c*{ks[0] * ks[1]} + i*{ks[1]} + j, "
               f"oh*{ow_n} + ow), input (oh*{st[0]} + i*{dil[0]}, ow*{st[1]} + j*{dil[1]})")
    return True
