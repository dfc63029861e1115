"""The instruction calls of the stand-in `nl` / `nisa` modules, generated from api_table.ROWS:
each row becomes a function with the row's Python signature whose body records one instruction
(reads, writes, engine, cost and result shape as the row says). The named rules the table
refers to (result shapes, constraints) are the functions below. A name outside the table is
modelled generically (_Generic), through the stand-in module type _Module."""
from __future__ import annotations

import functools
import math
import os
import sys
import types

from . import context as _ctx
from .api_table import NEW_API_DST, ROWS
from .context import _IN_KERNEL, MAX_INSTRUCTIONS, _fail, _line, _site, _source, np
from .dtypes import NkiDtype, _dtype_name, _itemsize
from .symbolic import Pred, Sym, _ST_AR
from .tensors import Pending, Tensor, View, _APView, _Alloc, _MGrid, _register, _unique
from .costs import _finish_cost
from .instructions import _accumulate_into, _dtype_of, _guard, _new_instr, _read, _result, _shape_of, _too_many, _write_into
from .tensors import _TILE, _as_view

_ENGINES = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "dma": "DMA"}

# Names the error messages give a tile parameter (default: the parameter's own name).
_LABELS = {("nl.load", "src"): "load source", ("nl.load_transpose2d", "src"): "load source",
           ("nl.store", "dst"): "store destination", ("nisa.dma_copy", "src"): "dma_copy source",
           ("nisa.dma_copy", "dst"): "dma_copy destination", ("nisa.dma_transpose", "src"): "source",
           ("nl.atomic_rmw", "dst"): "atomic_rmw destination", ("nisa.activation", "bias"): "bias/scale",
           ("nisa.activation", "scale"): "bias/scale", ("nisa.activation_reduce", "bias"): "bias/scale",
           ("nisa.activation_reduce", "scale"): "bias/scale"}


def kw_engine(e, default):
    """The engine an `engine=` value names (nisa.vector_engine & co.), else `default`."""
    if e is None:
        return default
    return _ENGINES.get(getattr(e, "_engine", None), default)


def _flat(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _flat(y)
    else:
        yield x


def direct():
    """Whether the kernel so far allocates some SBUF/PSUM tensor directly."""
    return any(t.alloc.kind not in ("auto", "shared_hbm", "private_hbm", "input") and t.buffer != "hbm"
               for t in _ctx.ST.tensors)


def hidden(api, why):
    """An API that creates a tensor the kernel cannot allocate: recorded as an automatic tensor
    so that a direct-allocation kernel reports mixed_allocation at this line. The new API has no
    such tensors (every instruction names its dst; activation's bias defaults to a constant)."""
    if _ctx.ST.uses_new_api:
        return
    line, _ = _site()
    t = Tensor(_unique(f"hidden_{api}_{line}"), (_ctx.ST.hw["partitions"], 1), "float32", _Alloc("sbuf", "auto"), implicit=True,
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


# ---- rules named by the table ----

def _reduced(shape, axis, keepdims, default_all_free):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,) if axis is not None else \
        tuple(range(1, len(shape))) if default_all_free else (axis,)
    out = [1 if i in axes else s for i, s in enumerate(shape)] if keepdims else \
        [s for i, s in enumerate(shape) if i not in axes]
    if len(out) < 2:
        out = out + [1] * (2 - len(out))
    return axes, tuple(out)


def _check(rule, row, a):
    if rule == "a_tile":
        if not any(isinstance(o, _TILE) for o in (a["x"], a["y"]) if o is not None):
            _fail(f"{row.api}: expected a tile operand")
    elif rule == "free_axes":
        shape = list(_as_view(a["x"], "x").shape)
        axes, _ = _reduced(shape, a["axis"], False, True)
        if 0 in [x % max(len(shape), 1) for x in axes]:
            _fail(f"{row.api} reduces free axes only, not the partition axis")
    elif rule == "on_true":
        if a["on_true_tile"] is None:
            _fail(f"{row.api} needs on_true_tile")


def _matmul_shape(row, a, views, ins):
    s, m = views[0], views[1]
    ss, ms = tuple(s.shape), tuple(m.shape)
    if row.shape == "matmul_x":  # nl.matmul(x, y, transpose_x=)
        n = ss[1] if a["transpose_x"] else ss[0]
        ins["_stat_n"] = n
        ins["_fp32"] = s.dt == "float32"
        return (n, ms[1])
    new = _ctx.ST.uses_new_api
    if new:  # the new API's tiles may have several free dims: flattened (the compiler checks the limits)
        ss, ms = (ss[0], math.prod(ss[1:])), (ms[0], math.prod(ms[1:]))
    if "matmul" in row.checks:
        if len(ss) != 2 or len(ms) != 2:
            _fail(f"nc_matmul expects 2-D tiles, got {list(ss)} and {list(ms)}")
        if ss[0] != ms[0] and not new:
            _fail(f"nc_matmul contraction dims differ: stationary {list(ss)}, moving {list(ms)}")
        if not new and (ss[1] > 128 or ms[1] > 512):
            _fail(f"nc_matmul tile too large: stationary free {ss[1]} (max 128), moving free {ms[1]} (max 512)")
    ins["_stat_n"] = ss[1]
    ins["_fp32"] = s.dt == "float32"
    return (ss[1], ms[1])


def _is_pattern(x):
    """An access pattern [[step, count], ...] (plain ints), as the new API's iota takes."""
    return isinstance(x, (list, tuple)) and bool(x) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(v, int) for v in p) for p in x)


def _iota_shape(a):
    kw = a["kw"]
    pattern = kw.get("pattern") if a["expr"] is None else a["expr"] if _is_pattern(a["expr"]) else None
    if pattern is not None:
        # new API: iota(dst, pattern, offset=, channel_multiplier=), the pattern [[step, count], ...]
        # given by keyword or second positionally: dst's shape
        try:
            return (_ctx.ST.hw["partitions"],) + tuple(int(c) for _, c in pattern), "int32"
        except Exception:
            _fail(f"nisa.iota: pattern= expects [[step, count], ...], got {pattern!r}")
    expr = a["expr"]
    shape = None
    s = Sym.of(expr) if not isinstance(expr, _MGrid) else None
    if isinstance(s, Sym):
        axes = {}
        for k in s.t:
            if k[0] == "A":
                axes[_ST_AR[k[1]]["axis"]] = _ST_AR[k[1]]["n"]
        # An axis no arange spans has size 1: arange(n)[None, :] is one partition of n elements.
        shape = tuple(axes.get(x, 1) for x in range(max(axes) + 1)) if axes else None
    if not shape:
        _fail("nisa.iota expects an expression of nl.arange vectors")
    if len(shape) < 2:
        shape = shape + (1,)
    return shape, None


def _shape(row, a, views, ins):
    rule = row.shape
    if rule == "largest":
        big = None
        for v in views:
            s = tuple(v.shape)
            if big is None or math.prod(s) > math.prod(big):
                big = s
        if big is None:
            _fail(f"{row.api}: expected at least one tile operand")
        return big
    if rule.startswith("of:"):
        x = a[rule[3:]]
        s = _shape_of(x) if isinstance(x, _TILE) else tuple(x) if isinstance(x, (tuple, list)) else None
        return s if s is not None else _shape(row._replace(shape="largest"), a, views, ins)
    if rule.startswith("read:"):
        return tuple(views[0].shape)
    if rule.startswith("partition:"):
        return (views[0].shape[0], int(rule[10:]))
    if rule == "transpose":
        return tuple(views[0].shape)[::-1]
    if rule == "transpose2d":
        s = tuple(views[0].shape)
        return s[::-1] if len(s) == 2 else s
    if rule == "axes":
        s = tuple(views[0].shape)
        return tuple(s[x] for x in a["axes"]) if a["axes"] is not None else s[::-1]
    if rule == "reduce":
        nisa_form = row.api.startswith("nisa.")
        _, out = _reduced(list(views[0].shape), a["axis"], a["keepdims"], not nisa_form)
        return out
    if rule == "partition_reduce":
        return (1,) + tuple(views[0].shape[1:])
    if rule == "gather":
        idx = _as_view(a["index"], "index")
        return tuple(idx.shape[:-1]) + (idx.shape[-1] * int(a["num_elem_per_idx"]),)
    if rule in ("matmul", "matmul_x"):
        return _matmul_shape(row, a, views, ins)
    raise AssertionError(f"unknown shape rule {rule}")


# ---- the generic call ----

def _emit(ins, line, api, shape, dt, buffer, a):
    """The call's result: a new tile, or, for a new-API call whose result goes straight into its dst
    (`_writes_dst` passes it as __dst__), the write of dst itself, as _write_into would record it."""
    dst = a.get("__dst__")
    if dst is None:
        return _result(ins, line, api, shape, dt, buffer)
    target = _as_view(dst, "dst")
    if target.tensor.buffer == "hbm" and ins["engine"] != "DMA":
        _fail(f"{api} writes HBM tensor {target.tensor.name}; compute engines write SBUF/PSUM tiles "
              "(nl.store the result)")
    ins["_isz"] = _itemsize(dt)
    acc, p, b = target.access(write=True, extra=ins.get("_mcons", ()))
    ins["writes"].append(acc)
    _finish_cost(ins, p, b)
    target.tensor.written = True
    return None


def _compile(row):
    """The recorder of one call of `row`, with the row's decisions taken once (a call is recorded
    up to millions of times): run(a) records the instruction for bound parameters `a` (a dict)."""
    api = row.instr
    checks = tuple(c for c in row.checks if c != "matmul")
    fixed_engine = row.engine if row.engine not in ("transpose",) and not row.engine.startswith("engine=") else None
    kw_default = row.engine[7:] if row.engine.startswith("engine=") else None
    short = api.split(".")[-1]
    why = {"always": "composite" if short in ("softmax", "rms_norm") else "identity", "no_transpose_x": "transpose",
           "tensor_engine": "identity", "no_bias": "bias", "": None}[row.hidden]
    # (parameter, must be a tile, label in messages, a DMA endpoint that mask= bounds)
    reads = tuple((p.rstrip("!"), p.endswith("!"), _LABELS.get((api, p.rstrip("!")), p.rstrip("!") if p.endswith("!")
                   else "operand"), p.rstrip("!") in ("src", "dst")) for p in row.reads)
    writes, out, mask_on, rule = row.writes, row.out, row.mask, row.shape
    row_cost, row_dtype, row_buffer, row_hidden = row.cost, row.dtype, row.buffer, row.hidden
    dst_label = _LABELS.get((api, "dst"), "dst")
    simple_shape = {"largest", "read:data", "read:src", "transpose"}

    def record(a):
        """(result, the instruction record, whether dst was written through _emit)."""
        for c in checks:
            _check(c, row, a)
        engine = fixed_engine
        pre = None
        if engine is None:
            if kw_default is not None:
                engine = kw_engine(a.get("engine"), kw_default)
            else:  # transpose: by the tile's size
                pre = _as_view(a["data"], "data")
                engine = kw_engine(a.get("engine"), "Tensor" if max(tuple(pre.shape)) > 32 else "Vector")
        if why is not None:
            h = row_hidden
            if h == "always" or (h == "no_transpose_x" and not a["transpose_x"]) or \
                    (h == "tensor_engine" and engine == "Tensor") or (h == "no_bias" and a["bias"] is None and not _ctx.ST.uses_new_api and direct()):
                hidden(short, why)
        cost = row_cost
        if cost == "transpose":
            cost = "transpose_pe" if engine == "Tensor" else "alu"
        dma = engine == "DMA"
        ins, line = _new_instr(api, engine, cost)
        mask = a.get("mask")
        if mask_on and mask is not None:
            _guard(ins, mask)
        views = []
        pb = None
        for p, req, label, endpoint in reads:
            v = a[p]
            if not req and not isinstance(v, _TILE):
                if not isinstance(v, (list, tuple)):
                    continue
                many = [o for o in _flat(v) if isinstance(o, _TILE)]
            else:
                many = None
            for o in (v,) if many is None else many:
                if dma:
                    o = _as_view(o, label)
                    if endpoint:
                        o = _masked(o, mask)
                    o, pp, bb = _read(ins, o, label, allow_hbm=True)
                elif pre is not None and p == "data":
                    o, pp, bb = _read(ins, pre, label)
                else:
                    o, pp, bb = _read(ins, o, label)
                if pb is None:
                    pb = (pp, bb)
                views.append(o)
        for p in writes:
            if a[p] is not None:
                acc, _, _ = _as_view(a[p], p).access(write=True)
                ins["writes"].append(acc)
        if out == "dma" or out == "none":
            if pb is None:
                _fail(f"{api}: expected a tile operand")
            if out == "dma":
                d = _masked(_as_view(a["dst"], dst_label), mask)
                acc, pd, bd = d.access(write=True)
                ins["writes"].append(acc)
                ins["_isz"] = 1
                if row_cost == "dma_dst":
                    pb = (pd, bd)
            else:
                ins["_isz"] = 1 if dma else views[0].tensor.itemsize
            _finish_cost(ins, *pb)
            return None, ins, False
        if rule == "iota":
            shape, dt = _iota_shape(a)
            dtype = a["dtype"]
            return _emit(ins, line, api, shape, _dtype_name(dtype) if dtype is not None else dt or _dtype_name(dtype),
                         "sbuf", a), ins, False
        if rule in simple_shape and views:
            shape = tuple(views[0].shape) if rule != "largest" or len(views) == 1 else _shape(row, a, views, ins)
            if rule == "transpose":
                shape = shape[::-1]
        else:
            shape = _shape(row, a, views, ins)
        dtype = a.get("dtype")
        if dtype is not None and (not dma or dtype):
            dt = _dtype_name(dtype)
        elif row_dtype != "first":
            dt = row_dtype
        elif rule == "gather":
            dt = _dtype_of(a["src_buffer"])
        else:
            dt = views[0].dt if views else "float32"
        buffer = row_buffer if row_buffer != "engine" else "psum" if engine == "Tensor" else "sbuf"
        r = _emit(ins, line, api, shape, dt, buffer, a)
        if out == "dst":
            _write_into(_as_view(a["dst"], "dst"), r)
            return None, None, False
        return r, ins, a.get("__dst__") is not None

    # What a call records depends only on its site (line, source), the API mode and the signature
    # of its arguments (_sig); rows whose record depends on more (iota's aranges, a write through a
    # pending result) are never memoised.
    memoizable = rule != "iota" and out != "dst"

    def run(a):
        st = _ctx.ST
        if not (MEMO and memoizable and not st.guards and (why is None or st.uses_new_api)):
            return record(a)[0]
        # _line(3), inline: the innermost kernel frame from the caller of the generated function
        f = _getframe(2)
        known = _IN_KERNEL.get(st.path)
        line = None
        if known is not None:
            while f is not None:
                code = f.f_code
                mine = known.get(id(code))
                if mine is None or mine[0] is not code:
                    break
                if mine[1] is not None:
                    line = f.f_lineno
                    break
                f = f.f_back
        if line is None:
            line = _line(3)
        names, keep = {}, []
        sig = [run, line, _source() if st.root_pkg else None, st.uses_new_api, tuple(a)]
        add = sig.append
        try:
            for k, v in a.items():
                if v is None:
                    add(None)
                elif type(v) is Tensor:  # _sig's first cases, inline (the most frequent arguments)
                    add((v.shape, v.dt, v.buffer, v.nb, names.setdefault(v.name, len(names))))
                elif type(v) is View:
                    add(_view_sig(v, names))
                elif k != "kw":  # a["kw"] holds only entries a has too
                    add(_sig(v, names, keep))
        except _NoMemo:
            return record(a)[0]
        key = tuple(sig)
        hit = st.memo.get(key)
        if hit is None:
            r, ins, wrote = record(a)
            site = (run, line)
            stored = st.memo_sites.get(site, 0)
            if stored < MEMO_PER_SITE:
                tpl = _template(r, ins, wrote, names, keep)
                if tpl is not None:
                    st.memo[key] = tpl
                    st.memo_sites[site] = stored + 1
            return r
        # The record, for this call's tensors, with _new_instr's, _emit's and _result's effects on the
        # trace. An access of the template's own tensor is the template's dict itself, and the
        # template's lists when every tensor is its own: records are never changed in place once
        # made, except a pending result's writes (copied); sharing saves the memory whose first
        # touch costs about as much as the rest of the replay.
        tpl, lists, reads, writes, result, wrote, own = hit
        slots = list(names)
        if slots == own[0]:  # the template's own tensors
            ins = own[4]  # its whole record when it has no result to complete
            if ins is None:  # else its lists (writes grow for a pending result)
                ins = tpl.copy()
                for k in lists:
                    ins[k] = list(ins[k])
                ins["reads"] = own[1]
                ins["writes"] = own[2] if result is None else list(own[2])
        else:
            ins = tpl.copy()
            for k in lists:
                ins[k] = list(ins[k])
            ins["reads"] = [acc if acc["tensor"] is slots[s] else _filled(acc, slots[s], b) for acc, s, b in reads]
            ins["writes"] = [acc if acc["tensor"] is slots[s] else _filled(acc, slots[s], b) for acc, s, b in writes]
        st.last_pending = None
        st.stack[-1].append(ins)
        st.instr_count += 1
        if st.instr_count > MAX_INSTRUCTIONS:
            _too_many()
        if wrote:
            d = a["__dst__"]
            (d.tensor if type(d) is not Tensor else d).written = True
        if result is not None:
            return _result(ins, line, result[3], result[0], result[1], result[2])
        return None
    return run


class _NoMemo(Exception):
    """An argument whose effect on the record the memo cannot key (the call is recorded afresh)."""


_getframe = sys._getframe
MEMO = True  # per-site memoisation of instruction records (tests switch it off to compare)
MEMO_PER_SITE = 1024  # templates kept per call site (one indexing HBM at a new offset per iteration never hits)
# Argument types keyed by identity (never inspected beyond what they are: op= functions, dtype and
# engine objects; modules.py adds its engine type).
BY_IDENTITY = {types.FunctionType, types.BuiltinFunctionType, type, NkiDtype}


def _view_sig(v, names):
    if v.mask is not None or v.dyn:
        raise _NoMemo
    dims = []
    for d in v.dims:
        if d is None:
            dims.append(None)
        elif d.vec is None and type(d.start) is int:
            dims.append((d.start, d.size, d.step, d.scalar, d.keep))
        else:
            raise _NoMemo  # symbolic indices: the record holds the loop's expressions
    t = v.tensor
    if type(t) is not Tensor:
        raise _NoMemo
    return ("V", tuple(dims), t.shape, t.dt, t.buffer, t.nb, names.setdefault(t.name, len(names)),
            v._ap_shape if type(v) is _APView else None)


def _sig(v, names, keep):
    """What of argument `v` a record can depend on. Tensors are keyed by shape, dtype, buffer and
    which argument names them first (`names`: tensor name -> slot), never by name, so a tensor
    declared anew per iteration hits; objects compared by identity are kept alive in `keep`."""
    tp = type(v)
    if tp is Tensor:
        return (v.shape, v.dt, v.buffer, v.nb, names.setdefault(v.name, len(names)))
    if tp is View or tp is _APView:
        return _view_sig(v, names)
    if tp is int or tp is bool or tp is str or v is None:
        return tp, v
    if tp is float:
        return tp, v.hex()  # 0.0 and -0.0 apart
    if tp is tuple or tp is list:
        return tp, tuple([_sig(x, names, keep) for x in v])
    if tp is _Generic:
        return tp, v._name
    if tp in BY_IDENTITY:
        keep.append(v)  # engines, functions (op=), dtype objects: their identity
        return tp, id(v)
    if np is not None and tp is np.dtype:
        return tp, v
    raise _NoMemo


def _template(r, ins, wrote, names, keep):
    """The memo entry of a record just made: the record with each access's tensor as a slot of the
    signature, the result's shape (a pending result is made anew at each replay), whether dst was
    written; None if the record names a tensor the arguments do not."""
    if ins is None or (r is not None and (type(r) is not Pending or r.instr is not ins)):
        return None
    accs = []
    for k in ("reads", "writes"):
        out = []
        for acc in ins[k]:
            slot = names.get(acc["tensor"])
            if slot is None:
                return None
            out.append((dict(acc), slot, "block" in acc))
        accs.append(tuple(out))
    tpl = {k: [] if k in ("reads", "writes") else list(v) if type(v) is list else v for k, v in ins.items()}
    lists = tuple(k for k, v in tpl.items() if type(v) is list and k not in ("reads", "writes"))
    # Replays on the template's own tensors take its access lists whole (`keep` rides along).
    own = [list(names), [a for a, _, _ in accs[0]], [a for a, _, _ in accs[1]], keep, None]
    if r is None and not lists:  # a complete record: replays on the same tensors share it whole
        own[4] = dict(tpl, reads=own[1], writes=own[2])
    return tpl, lists, accs[0], accs[1], (r.shape, r.dt, r.buffer, r.api) if r is not None else None, wrote, own


def _filled(acc, name, block):
    acc = dict(acc, tensor=name)
    if block:
        acc["block"] = list(acc["block"])
    return acc


# ---- argument forms the signature alone does not give ----

def _dma_copy_args(args, a):
    if args:  # new API: dma_copy(dst, src)
        a["dst"], a["src"] = (args + (None, None))[:2] if len(args) >= 2 else (args[0], a["src"])
    if a["dst"] is None or a["src"] is None:
        _fail("nisa.dma_copy needs dst= and src=")


def _shuffle_args(args, a):
    # Old API (src, dst, shuffle_mask); the new API puts dst first, as for every instruction.
    pos = list(args) + [None] * 2
    if pos[0] is not None:
        x, y = (pos[0], pos[1]) if not _ctx.ST.uses_new_api else (pos[1], pos[0])
        a["src"], a["dst"] = a["src"] if a["src"] is not None else x, a["dst"] if a["dst"] is not None else y
    if a["src"] is None or a["dst"] is None:
        _fail("nisa.nc_stream_shuffle needs src and dst")


_ARGS = {"nisa.dma_copy": _dma_copy_args, "nisa.nc_stream_shuffle": _shuffle_args}


def _generate(row):
    """The stand-in function of `row`: its signature, binding into a dict for _run."""
    short = row.api.split(".")[-1]
    params = [p.strip() for p in row.sig.split(",")]
    names = [p.split("=")[0].strip().lstrip("*") for p in params if p != "*"]
    star = next((p.lstrip("*") for p in params if p.startswith("*") and not p.startswith("**") and p != "*"), None)
    kwn = next((p.lstrip("*") for p in params if p.startswith("**")), None)
    items = ", ".join(f"{n!r}: {n}" for n in names if n not in (star, kwn))
    body = [f"def {short}({row.sig}):", f"    a_ = {{{items}}}"]
    if kwn:
        body.append(f"    a_['kw'] = {kwn}")
        body.append(f"    if {kwn}:")
        body.append(f"        for k_, v_ in {kwn}.items():")
        body.append("            a_.setdefault(k_, v_)")
    if star and row.api in _ARGS:
        body.append(f"    _ARGS[{row.api!r}]({star}, a_)")
    elif star:
        body.append(f"    a_[{star!r}] = {star}")
    body.append("    return RUN(a_)")
    ns = {"RUN": _compile(row), "_ARGS": _ARGS}
    # An absolute file name outside any kernel tree: source locations skip these frames as the tracer's own.
    code = compile("\n".join(body), os.path.join(os.path.dirname(os.path.abspath(__file__)), f"<{row.api}>"), "exec")
    exec(code, ns)  # noqa: S102 - code generated from the table's own signatures
    return ns[short]


def _split_dst(args, kw):
    """(dst or None, the other positional args): dst= anywhere, or first under the new namespace."""
    dst = kw.pop("dst", None)
    if dst is None and _ctx.ST is not None and _ctx.ST.uses_new_api and args and isinstance(args[0], _TILE):
        dst, args = args[0], args[1:]
    return dst, args


def _writes_dst(f, matmul):
    """The new-API form of an ISA call: the result goes into dst. accumulate=True adds into it (PSUM
    accumulation, as `dst += ...` in the old API); None, the default of nc_matmul, overwrites the
    first write of dst and accumulates into it after that (ranges are unrolled in the new API), for
    the matmul calls (`matmul`)."""

    @functools.wraps(f)
    def call(*args, **kw):
        st = _ctx.ST
        dst = kw.pop("dst", None)  # _split_dst, inline
        if dst is None and st is not None and st.uses_new_api and args and isinstance(args[0], _TILE):
            dst, args = args[0], args[1:]
        accumulate = kw.pop("accumulate", False if dst is None else None)
        if dst is not None and not matmul and not accumulate and st.uses_new_api:
            kw["__dst__"] = dst  # a plain write of dst: recorded directly (no intermediate result)
            f(*args, **kw)
            return None
        r = f(*args, **kw)
        if dst is None:
            return r
        target = _as_view(dst, "dst")
        if accumulate is None and matmul and not target.tensor.written:
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
        if accumulate or (accumulate is None and matmul and getattr(target.tensor, "written", False)):
            _accumulate_into(target, r)
        else:
            _write_into(target, r)
        target.tensor.written = True
        return None
    return call


def _memset_dst(f):
    """nisa.memset(dst, value) in the new API (a constant written into dst, as `dst[...] = value`);
    memset(shape, value, dtype) returns a tile in the old."""
    @functools.wraps(f)
    def call(*args, **kw):
        dst, args = _split_dst(args, kw)
        if dst is None:
            return f(*args, **kw)
        value = args[0] if args else kw.get("value", 0)
        _write_into(_as_view(dst, "dst"), value)
        return None
    return call


def functions():
    """{module ('nl' or 'nisa'): {name: stand-in function}} generated from the table."""
    out = {"nl": {}, "nisa": {}}
    for row in ROWS:
        mod, name = row.api.split(".")
        f = _generate(row)
        if mod == "nisa" and name in NEW_API_DST:
            f = _memset_dst(f) if name == "memset" else _writes_dst(f, row.cost == "matmul")
        out[mod][name] = f
    return out


FUNCTIONS = None  # generated once per process (the functions hold no per-trace state)


def install(nl, nisa):
    global FUNCTIONS
    if FUNCTIONS is None:
        FUNCTIONS = functions()
    for mod, table in (("nl", nl), ("nisa", nisa)):
        for name, f in FUNCTIONS[mod].items():
            setattr(table, name, f)


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
        if dst is None and mod.endswith("isa") and args and isinstance(args[0], _TILE) and _ctx.ST is not None \
                and _ctx.ST.uses_new_api:
            dst, args = args[0], args[1:]
        tiles = [x for x in _flat(list(args) + list(kw.values())) if isinstance(x, _TILE)]
        if dst is None:
            if tiles:
                _fail(f"{label} is not in the tracer's API table and writes no explicit dst=, so its effect on "
                      "memory cannot be known")
            return _Generic(f"{self._name}(...)")
        d = _as_view(dst, f"{label} dst")
        # Only the DMA engine reaches HBM: a call whose dst is in HBM (nisa.core_barrier(hbm_tensor, cores))
        # runs there whatever engine= says for its on-chip part.
        dma = "dma" in short.lower() or getattr(kw.get("engine"), "_engine", None) == "dma" or d.tensor.buffer == "hbm"
        engine = "DMA" if dma else kw_engine(kw.get("engine"), "Vector")
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
