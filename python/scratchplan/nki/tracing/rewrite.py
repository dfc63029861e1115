"""`--rewrite`: the kernel source with each declaration set to the planned allocation, every other
byte unchanged. Old-API kernels get `buffer=ncc.sbuf/psum...`; new-API kernels (the `nki`
namespace) get `address=(partition, byte)`, which needs the kernel's own addresses to be literals."""
from __future__ import annotations

import ast
import os
import re

from .context import TRACE_SECONDS, TraceError
from . import launch as _launch
from .launch import _imports_new_namespace, trace_file


_DECL_APIS = {"ndarray", "zeros", "ones", "full", "zeros_like", "empty_like"}


def rewrite(spec, inputs, planned, grid=None, hardware=None, args=(), time_limit=TRACE_SECONDS):
    """Source text of the kernel file with the buffer= of every SBUF/PSUM declaration replaced by
    the planned allocation in ``planned`` (the kernel JSON of ``nki plan -o``). Only those
    argument texts change; everything else is byte-identical."""
    m = re.fullmatch(r"(.*?\.py)(?::([A-Za-z_]\w*))?", spec)
    if not m:
        raise TraceError(f"{spec}: expected FILE.py or FILE.py:FUNCTION")
    path = os.path.abspath(m.group(1))
    label = os.path.basename(path)
    # Trace again to learn where each tensor was declared.
    decls = []
    orig_to_json = _launch._to_json

    def capture(st, hw, lbl):
        decls.extend(st.decls)
        decls.append(("__bank__", st.hw["psum_bank_bytes"]))
        decls.append(("__tensors__", st.tensors))
        return orig_to_json(st, hw, lbl)

    _launch._to_json = capture
    try:
        trace_file(spec, inputs, grid=grid, hardware=hardware, args=args, time_limit=time_limit)
    finally:
        _launch._to_json = orig_to_json
    tensors = decls.pop()[1]
    bank = decls.pop()[1]
    with open(path, encoding="utf-8") as f:
        new_api = _imports_new_namespace(f.read())
    sites = {}
    for t, line, col, api in decls:
        if t.buffer != "hbm" and sites.setdefault((line, col), t) is not t:
            raise TraceError(f"{label}:{line}: one declaration makes several tensors ({sites[(line, col)].name}, "
                             f"{t.name}: unrolled loop or helper), so one {'address' if new_api else 'buffer'}= cannot hold "
                             "their planned allocations")
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
        if node is None and new_api:
            raise TraceError(f"{label}:{line}: {t.name} is declared by a helper whose address is computed, not a literal "
                             "address=, so --rewrite cannot replace it (--addresses FILE.json writes the planned map)")
        if node is None:
            raise TraceError(f"{t.source}: cannot find the declaration of {t.name} to rewrite")
        if new_api:
            edits.append(_address_edit(t, p["alloc"], node, bank, label, src, pos))
            continue
        text = _alloc_text(t, p["alloc"], ncc_expr, bank)
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


def _address_edit(t, alloc, node, bank, label, src, pos):
    """The edit that sets a new-API declaration's address= to the planned (partition, byte): the
    literal replaced, or the keyword added when the compiler placed the tensor. A computed address
    is refused: replacing an expression would silently drop whatever else the kernel computes."""
    kind = alloc.get("kind")
    if kind == "table" and len(alloc.get("tiles", [])) == 1:
        where = tuple(alloc["tiles"][0])
    elif kind == "mod_alloc" and not any(alloc.get(k) for k in ("num_free_tiles", "num_bank_tiles", "num_par_tiles")):
        byte = alloc.get("base_addr", 0) + (alloc.get("base_bank", 0) * bank if t.buffer == "psum" else 0)
        where = (alloc.get("base_partition", 0), byte)
    else:
        raise TraceError(f"{t.source}: the plan gives {t.name} several physical tiles, which one address= cannot "
                         "express (--addresses FILE.json writes the planned map)")
    text = f"({where[0]}, {where[1]})"
    kw = next((k for k in node.keywords if k.arg == "address"), None)
    value = kw.value if kw is not None else node.args[4] if _call_name(node) == "ndarray" and len(node.args) >= 5 \
        else None
    if value is None:
        end = pos(node.end_lineno, node.end_col_offset) - 1  # the closing ')'
        raw = src.encode("utf-8")
        j = end - 1
        while j > 0 and raw[j:j + 1] in (b" ", b"\n", b"\t", b"\r"):
            j -= 1
        sep = " " if raw[j:j + 1] in (b",", b"(") else ", "
        return end, end, f"{sep}address={text}"
    try:
        literal = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        literal = ()
    if literal is not None and not (isinstance(literal, tuple) and len(literal) == 2 and
                                    all(isinstance(v, int) for v in literal)):
        expr = ast.get_source_segment(src, value) or "an expression"
        expr = expr if len(expr) <= 60 else expr[:57] + "..."
        raise TraceError(f"{label}:{value.lineno}: the address of {t.name} is computed ({expr}), not a literal, so "
                         "--rewrite cannot replace it (--addresses FILE.json writes the planned map)")
    return pos(value.lineno, value.col_offset), pos(value.end_lineno, value.end_col_offset), text


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


def _alloc_text(t, alloc, ncc, bank):
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
            tab = tuple((p, b // bank, b % bank) for p, b in tiles)
            return (f"{ncc}.psum.alloc(lambda idx, pdim_size, fdim_size, _t={tab!r}: "
                    f"(_t[{lin}][1], _t[{lin}][0], _t[{lin}][2]))")
        tab = tuple((p, b) for p, b in tiles)
        return f"{ncc}.sbuf.alloc(lambda idx, pdim_size, fdim_size, _t={tab!r}: _t[{lin}])"
    raise TraceError(f"{t.source}: cannot express a {kind!r} allocation for {t.name}")
