"""Instruction records and costs: one record per engine instruction with its reads, writes,
guards and the cycle estimate of API.md; results of calls and writes into tensors."""
from __future__ import annotations

import math

from .context import np
from . import context as _ctx
from .context import MAX_INSTRUCTIONS, _fail, _site, _source, _target_name, need_unroll
from .dtypes import _dtype_name, _itemsize
from .symbolic import Pred, Sym, _affine_text, _mk, _var_range
from . import tensors as _tensors
from .costs import _finish_cost
from .tensors import _NONE, _TILE, Pending, Tensor, View, _as_view, _is_tile


_SHORT = {}  # api -> its last dotted part (the instruction's name)


def _new_instr(api, engine, cost_kind):
    st = _ctx.ST
    line, _ = _site()
    name = _SHORT.get(api)
    if name is None:
        name = _SHORT[api] = api.split(".")[-1]
    ins = {"name": name, "engine": engine, "cost": 1, "reads": [], "writes": [],
           "source": _source() if st.root_pkg else f"{st.label}:{line}", "_cost": cost_kind}
    st.last_pending = None  # a result is stored "right away" only if no instruction came between
    if st.guards:  # inside the branches of symbolic ifs
        ins["when"] = [_affine_text(g) for cons in st.guards for g in cons]
        if not ins["when"]:
            del ins["when"]
    st.stack[-1].append(ins)
    st.instr_count += 1
    if st.instr_count > MAX_INSTRUCTIONS:
        _too_many()
    return ins, line


def _too_many():
    _fail(f"more than {MAX_INSTRUCTIONS:,} instructions recorded (static_range and new-API ranges unroll); "
          "too large to trace")


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
        if len(loop) == len(g.t):  # on loop indices only: the operands are accessed only where it holds
            ins.setdefault("_mcons", []).append(g)


def _read(ins, x, what="operand", allow_hbm=False):
    v = _as_view(x, what)
    if v.tensor.buffer == "hbm" and not allow_hbm and ins["engine"] != "DMA":
        _fail(f"{ins['name']}: {what} {v.tensor.name} is in HBM; compute engines read SBUF/PSUM tiles (nl.load it)")
    acc, p, b = v.access(extra=ins.get("_mcons", ()))
    ins["reads"].append(acc)
    for idx in getattr(v, "dyn", ()):  # run-time index tiles of an indirect DMA
        _read(ins, idx, "index")
    return v, p, b


def _result(ins, line, api, shape, dtype, buffer="sbuf"):
    p = Pending(ins, shape, dtype, buffer, api, line)
    p.target = _target_name(line)
    ins["_isz"] = _itemsize(dtype)
    _ctx.ST.last_pending = p
    _ctx.ST.pendings.append(p)
    return p


def _write_into(target, value):
    """t[...] = value: the pending instruction writes the tile directly when it is the last one
    recorded; anything else becomes a copy (constants: a memset)."""
    if isinstance(value, Pending) and value.tensor is None and _ctx.ST.last_pending is value:
        _ctx.ST.last_pending = None
        if target.tensor.buffer == "hbm" and value.instr["engine"] != "DMA":
            _fail(f"{value.api} writes HBM tensor {target.tensor.name}; compute engines write SBUF/PSUM tiles "
                  "(nl.store the result)")
        _check_write_fits(target, value)
        acc, p, b = target.access(write=True, extra=value.instr.get("_mcons", ()))
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
    if _ctx.ST.uses_new_api:
        return  # an explicit dst= is the shape written (the compiler checks the instruction's shapes)
    ts = target.shape
    vs = value.shape
    if math.prod(ts) != math.prod(vs) and math.prod(vs) != 1 and tuple(ts)[: len(vs)] != tuple(vs)[: len(ts)]:
        # broadcasting of (P, 1) etc. is allowed; a plain size mismatch is not
        if not (len(ts) == len(vs) and all(a == b or b == 1 for a, b in zip(ts, vs))):
            _fail(f"{value.api} result of shape {list(vs)} does not fit {target.tensor.name}{list(ts)}")


def _accumulate_into(target, other, first_over=None):
    """`target += other`. first_over: loop ids whose first iteration overwrites instead (a new-API
    nc_matmul's first write into dst, traced once over those loops); None: _group_loops decides."""
    if isinstance(other, Pending) and other.tensor is None and _ctx.ST.last_pending is other and \
            target.tensor.buffer == "psum" and other.instr["engine"] == "Tensor":
        _ctx.ST.last_pending = None
        acc, p, b = target.access(write=True, extra=other.instr.get("_mcons", ()))
        acc["accumulate"] = True
        other.instr["writes"].append(acc)
        other.instr.setdefault("_isz", 4)
        _finish_cost(other.instr, p, b)
        if not _start_group(other.instr, target, first_over) and first_over:
            need_unroll("the first write of a matmul could not be split")
        return
    if first_over:
        need_unroll("a first write that is not a matmul into PSUM")
    res = _alu("add", target, other)
    _write_into(target, res)


def _group_loops(target):
    """The loops an accumulation `t[...] += matmul` sums over: the enclosing loops inside the
    target's declaration scope that do not index it (a loop indexing the target may sit inside
    them: `for h: for b: acc[b] += mm(h, b)` sums over h)."""
    used = set()
    for dim in target.dims:
        if dim is not None:
            for x in (dim.start, dim.vec):
                sx = Sym.of(x) if x is not None else None
                if sx is not None:
                    used |= {k[1] for k in sx.t if k[0] == "L"}
    out = []
    for lid in reversed(_ctx.ST.loop_scope):
        if lid in target.tensor.scope:
            break
        if lid not in used:
            out.append(lid)
    return out


def _start_group(ins, target, group=None):
    """A PSUM accumulation group starts at the first iteration of the loops it sums over: there
    the matmul overwrites the tile (the hardware's accumulate flag is off) instead of reading
    what an earlier group or another tensor left in the bank. Recorded as two guarded copies.
    Returns whether it split the instruction."""
    if group is None:
        if _ctx.ST.unroll_all:
            return False
        group = _group_loops(target)
    if not group:
        return False
    first = dict(ins, reads=list(ins["reads"]), writes=[{k: v for k, v in w.items() if k != "accumulate"}
                                                        if w.get("accumulate") else w for w in ins["writes"]])
    idx = [Sym(0, {("L", lid): 1}) for lid in group]
    first["when"] = list(ins.get("when", [])) + [_affine_text(-i) for i in idx]
    ins["when"] = list(ins.get("when", [])) + [_affine_text(sum(idx[1:], idx[0]) - 1)]
    body = _ctx.ST.stack[-1]
    at = next((k for k in range(len(body) - 1, -1, -1) if body[k] is ins), None)
    if at is None:
        return False  # recorded elsewhere (cannot split safely)
    body.insert(at, first)
    _ctx.ST.instr_count += 1
    return True


def _alu(api, *operands, engine="Vector", kind="alu", dtype=None, shape=None, mask=None, out_psum=False):
    ins, line = _new_instr(api, engine, kind)
    _guard(ins, mask)
    big, dt = None, _NONE  # the largest operand shape (the first on ties) and the first operand's dtype
    for o in operands:
        if isinstance(o, _TILE):
            v, _, _ = _read(ins, o)
            if shape is None:
                s = tuple(v.shape)
                if big is None or math.prod(s) > math.prod(big):
                    big = s
            if dt is _NONE:
                dt = o.dt
    if shape is None:
        if big is None:
            _fail(f"{api}: expected at least one tile operand")
        shape = big
    dt = _dtype_name(dtype) if dtype is not None else "float32" if dt is _NONE else dt
    return _result(ins, line, api, shape, dt, "psum" if out_psum else "sbuf")


def _dtype_of(x, default="float32"):
    if isinstance(x, (View, Pending, Tensor)):
        return x.dt
    return default


def _shape_of(x):
    if isinstance(x, (View, Pending)):
        return tuple(x.shape)
    if isinstance(x, Tensor):
        return x.shape
    return None


# Python operators and assignments on tiles record instructions (tensors.py calls these).
_tensors.RECORD.alu, _tensors.RECORD.write_into, _tensors.RECORD.accumulate_into = _alu, _write_into, _accumulate_into
