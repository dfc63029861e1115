"""Loops and branches: symbolic `affine_range`/`sequential_range` loops run once, unrolled
ranges, and `if` on loop indices guarded per branch (the AST rewrite that routes them here)."""
from __future__ import annotations

import ast
import contextlib
import re

from . import context as _ctx
from .context import _fail, _is_int, _line_text, _site
from .symbolic import Pred, Sym, _var_range
from .declarations import _free_loop_name
from .stack import on_loop_enter, on_loop_exit


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
    name = _free_loop_name(m.group(1) if m else f"i{len(_ctx.ST.loops)}")
    lid = len(_ctx.ST.loops)
    _ctx.ST.loops.append((name, trip, kind))
    node = {"loop": name, "trip": trip, "body": []}
    if kind != "affine":
        node["kind"] = kind
    node["source"] = f"{_ctx.ST.label}:{line}"
    node["_lid"] = lid
    _ctx.ST.stack[-1].append(node)
    _ctx.ST.stack.append(node["body"])
    _ctx.ST.loop_scope.append(lid)
    on_loop_enter()
    try:
        yield start + step * Sym(0, {("L", lid): 1})
    finally:
        on_loop_exit()
        _ctx.ST.stack.pop()
        _ctx.ST.loop_scope.pop()


def _range_of(api, kind):
    def f(*args, **kw):
        if _ctx.ST.unroll_all:
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
        _ctx.ST.guards.append(cons)
        try:
            yield
        finally:
            _ctx.ST.guards.pop()


def _min_over_loops(g):
    best = g.c
    for k, c in g.t.items():
        lo, hi = _var_range(k)
        best += min(c * lo, c * hi)
    return best


def _sp_range(*args):
    """A plain `range` in a `for` statement of the kernel file: sequential_range in old-API
    kernels (API.md §6); a Python range otherwise or when its bounds are not plain ints."""
    if _ctx.ST is None or _ctx.ST.unroll_all or not _ctx.ST.uses_old_api:
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
