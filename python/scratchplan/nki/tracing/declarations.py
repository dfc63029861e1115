"""Tensor declarations and allocations: `nl.ndarray` & co., buffers, `par_dim`, and the
evaluation of `ncc.sbuf/psum.alloc(func)` on every logical block."""
from __future__ import annotations

import contextlib
import inspect
import math
import os

from .context import np
from . import calls as _calls
from . import context as _ctx
from .context import TraceError, _fail, _is_int, _site, _source, _target_name
from .dtypes import _dtype_name
from .symbolic import Sym
from .tensors import Tensor, _Alloc, _register, _unique, _unique_ident
from .costs import _finish_cost
from .instructions import _new_instr


def _ndarray(shape, dtype, buffer=None, name="", address=None, fill=None, api="ndarray"):
    line, col = _site()
    st = _ctx.ST
    if fill is None and type(shape) is tuple and type(name) is str and _calls.MEMO and _plain(shape):
        # The memo (per site): a declaration's checks and derived fields depend only on the line and
        # the arguments in the key (address= by kind: its two ints are the tensor's own).
        if address is None:
            at = None
        elif type(address) is tuple and len(address) == 2 and type(address[0]) is int and type(address[1]) is int:
            at = True
        else:
            at = False
        if at is not False:
            key = (line, shape, type(dtype), dtype if type(dtype) is str else id(dtype),
                   buffer if buffer is None or type(buffer) is str else id(buffer), name, api, at)
            hit = st.decl_memo.get(key)
            if hit is not None:
                return _declare(st, hit, address, line, col, api)
            t, nm, alloc = _ndarray_new(shape, dtype, buffer, name, address, None, api, line, col)
            stored = st.memo_sites.get(line, 0)  # (calls key theirs by (call, line))
            if alloc.kind in _MEMO_KINDS and stored < _calls.MEMO_PER_SITE:
                st.memo_sites[line] = stored + 1
                proto = dict(t.__dict__)
                for k in _OWN:
                    proto.pop(k)
                st.decl_memo[key] = (proto, nm, nm.isidentifier() and nm.isascii(), alloc, {},
                                     (dtype, buffer))  # dtype and buffer kept alive (keyed by id)
            return t
    return _ndarray_new(shape, dtype, buffer, name, address, fill, api, line, col)[0]


def _plain(shape):
    """Plain ints only (par_dim markers and numpy ints hash as ints but declare otherwise)."""
    for s in shape:
        if type(s) is not int:
            return False
    return True


_MEMO_KINDS = ("auto", "address", "private_hbm", "shared_hbm")  # allocations with nothing per tensor to evaluate
_OWN = ("name", "alloc", "scope", "source")  # what each declaration of a memoised site has of its own
_EMPTY = frozenset()


def _declare(st, hit, address, line, col, api):
    """A declaration of a memoised signature: the template's fields with this one's name, scope,
    source and (address=) allocation."""
    proto, nm, ident, alloc, by_address, _ = hit
    t = Tensor.__new__(Tensor)
    d = t.__dict__
    d.update(proto)
    d["name"] = _unique_ident(nm) if ident else _unique(nm)
    if address is not None:  # one allocation object per address (they are never changed)
        alloc = by_address.get(address)
        if alloc is None:
            alloc = by_address[address] = _Alloc(proto["buffer"], "address", p=address[0], b=address[1])
    d["alloc"] = alloc
    ls = st.loop_scope
    d["scope"] = frozenset(ls) if ls else _EMPTY
    if st.root_pkg:
        d["source"] = _source(True)
    else:
        source = st.line_sources.get(line)
        if source is None:
            source = st.line_sources[line] = f"{st.label}:{line}"
        d["source"] = source
    _register(t)
    st.decls.append((t, line, col, api))
    return t


def _ndarray_new(shape, dtype, buffer, name, address, fill, api, line, col):
    dt = _dtype_name(dtype)
    shp, pdim_at = _parse_shape(shape)
    alloc = _buffer_of(buffer, address)
    if alloc.buffer != "hbm":
        if pdim_at is None:
            pdim_at = 0
        if len(shp) < pdim_at + 2:
            shp = tuple(shp) + (1,) * (pdim_at + 2 - len(shp))  # a (P,) tile is (P, 1)
        if shp[pdim_at] > _ctx.ST.hw["partitions"]:
            _fail(f"partition dim {shp[pdim_at]} of {api} exceeds the {_ctx.ST.hw['partitions']} partitions")
        if fill is not None and alloc.kind != "auto":
            _fail(f"nl.{api} with a direct allocation is an error in NKI (declare with nl.ndarray, then assign)")
    if shp and min(shp) <= 0:
        _fail(f"shape {list(shp)} has a non-positive dimension")
    nm = name or _target_name(line) or api
    st = _ctx.ST
    if st.root_pkg:
        source = _source(True)
    else:  # one string per line (a line may declare a tensor per iteration)
        source = st.line_sources.get(line)
        if source is None:
            source = st.line_sources[line] = f"{st.label}:{line}"
    t = Tensor(_unique(nm), shp, dtype if dtype is not None else dt, alloc, role="internal", source=source,
               pdim_at=pdim_at)
    if alloc.buffer != "hbm" and alloc.kind == "func":
        t.table = _eval_alloc_func(alloc, t, line)
    _register(t)
    st.decls.append((t, line, col, api))
    if fill is not None:
        # A tensor with block dims is filled one block at a time: a loop per block dim around one
        # memset (the matmul tutorial zeroes its (M tiles, N tiles, P, F) result block this way).
        with _over_blocks(t, line) as idx:
            ins, _ = _new_instr(f"memset", "Vector", "memset")
            acc, p, b = (t[tuple(idx)] if idx else t.view()).access(write=True)
            ins["writes"].append(acc)
            ins["_isz"] = t.itemsize
            _finish_cost(ins, p, b)
    return t, nm, alloc


@contextlib.contextmanager
def _over_blocks(t, line):
    """Opens one affine loop per block dim of `t` and yields their indices (none: no loop)."""
    opened, idx = 0, []
    try:
        for d in range(t.nb):
            lid = len(_ctx.ST.loops)
            name = _free_loop_name(f"{t.name}_block{d}")
            _ctx.ST.loops.append((name, t.shape[d], "affine"))
            node = {"loop": name, "trip": t.shape[d], "body": [], "source": f"{_ctx.ST.label}:{line}"}
            _ctx.ST.stack[-1].append(node)
            _ctx.ST.stack.append(node["body"])
            _ctx.ST.loop_scope.append(lid)
            opened += 1
            idx.append(Sym(0, {("L", lid): 1}))
        yield idx
    finally:
        for _ in range(opened):
            _ctx.ST.stack.pop()
            _ctx.ST.loop_scope.pop()


def _free_loop_name(base):
    """`base`, or `base_2`, ...: not the name of an open loop."""
    used = {_ctx.ST.loops[l][0] for l in _ctx.ST.loop_scope}
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


class _ParDim(int):
    pass


def _parse_shape(shape):
    if type(shape) is tuple:  # plain ints (the common case): as the loop below gives them
        for s in shape:
            if type(s) is not int:
                break
        else:
            return shape, None
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
    # NKI calls the function by keyword, so functools.partial may bind its first parameters; a
    # function whose parameters have other names gets them positionally.
    by_keyword = True
    try:
        inspect.signature(func).bind(idx=(), pdim_size=0, fdim_size=0)
    except TypeError:
        by_keyword = False
    except ValueError:  # no signature (a builtin): keywords, as NKI
        pass
    for idx in _blocks_iter(t.blocks):
        try:
            r = func(idx=idx, pdim_size=pdim, fdim_size=fdim) if by_keyword else func(idx, pdim, fdim)
        except TraceError:
            raise
        except Exception as e:  # the allocation function's own bug, located
            tb = e.__traceback__
            ln = line
            while tb is not None:
                if os.path.abspath(tb.tb_frame.f_code.co_filename) == _ctx.ST.path:
                    ln = tb.tb_lineno
                tb = tb.tb_next
            raise TraceError(f"{_ctx.ST.label}:{ln}: allocation function of {t.name} failed on block {idx}: "
                             f"{type(e).__name__}: {e}") from None
        want = 3 if psum else 2
        if not isinstance(r, (tuple, list)) or len(r) != want or not all(_is_int(x) for x in r):
            raise TraceError(f"{_ctx.ST.label}:{line}: allocation function of {t.name} returned {r!r} for block {idx}; "
                             f"expected {'(bank, start_partition, byte_addr)' if psum else '(start_partition, byte_addr)'}"
                             " integers")
        if psum:
            bank, p, b = (int(x) for x in r)
            table.append([p, bank * _ctx.ST.hw["psum_bank_bytes"] + b])
        else:
            table.append([int(r[0]), int(r[1])])
    return table
