"""Loops and branches: symbolic `affine_range`/`sequential_range` loops run once, unrolled
ranges, new-API Python ranges run once when that is exact (else rolled back and unrolled), and
`if` on loop indices guarded per branch (the AST rewrite that routes them here)."""
from __future__ import annotations

import ast
import contextlib
import re
import sys

from . import context as _ctx
from .context import _Unroll, _fail, _is_int, _line_text, _site, need_unroll
from .symbolic import Pred, Sym, _ST_AR, _var_range
from .declarations import _free_loop_name
from .calls import _Module
from .tensors import Pending, Tensor, View
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
        if isinstance(test, (Pred, Sym)):
            need_unroll("an if on the index")  # a Python range branches per iteration
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
        self.n_for = 0
        self.funcs = []  # enclosing function definitions

    def visit_FunctionDef(self, node):
        self.funcs.append(node)
        self.generic_visit(node)
        self.funcs.pop()
        return node

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
        ranged = isinstance(it, ast.Call) and (
            isinstance(it.func, ast.Name) and it.func.id == "range" or
            isinstance(it.func, ast.Attribute) and it.func.attr in ("affine_range", "sequential_range"))
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            it.func = ast.copy_location(ast.Name(id="__sp_range__", ctx=ast.Load()), it.func)
        plan = speculation_plan(node, self.funcs[-1]) if ranged and self.funcs else None
        if plan is None:
            return node
        # v = __sp_spec__(ITER, calls, stores); for T in v: try: BODY / except BaseException as e: if not v.failed(e): raise
        self.n_for += 1
        var, err = f"__sp_for_{self.n_for}", f"__sp_err_{self.n_for}"
        const = lambda xs: ast.Tuple(elts=[ast.Constant(value=x) for x in xs], ctx=ast.Load())
        spec = ast.Assign(targets=[ast.Name(id=var, ctx=ast.Store())],
                          value=ast.Call(func=ast.Name(id="__sp_spec__", ctx=ast.Load()),
                                         args=[node.iter, const(plan[0]), const(plan[1]), const(plan[2])],
                                         keywords=[]))
        failed = ast.Call(func=ast.Attribute(value=ast.Name(id=var, ctx=ast.Load()), attr="failed", ctx=ast.Load()),
                          args=[ast.Name(id=err, ctx=ast.Load())], keywords=[])
        handler = ast.ExceptHandler(type=ast.Name(id="BaseException", ctx=ast.Load()), name=err,
                                    body=[ast.If(test=ast.UnaryOp(op=ast.Not(), operand=failed),
                                                 body=[ast.Raise(exc=None, cause=None)], orelse=[])])
        wrapper = ast.Try(body=node.body, handlers=[handler], orelse=[], finalbody=[])
        wrapper.sp_wrapper = True  # an inner speculative loop does not stop its outer loop's
        node.body = [wrapper]
        if plan[2]:  # if v.reset is not None: (c1, c2, ...) = v.take_reset()  (see _Speculative)
            reset = ast.Attribute(value=ast.Name(id=var, ctx=ast.Load()), attr="reset", ctx=ast.Load())
            take = ast.Call(func=ast.Attribute(value=ast.Name(id=var, ctx=ast.Load()), attr="take_reset",
                                               ctx=ast.Load()), args=[], keywords=[])
            names = ast.Tuple(elts=[ast.Name(id=c, ctx=ast.Store()) for c in plan[2]], ctx=ast.Store())
            node.body.insert(0, ast.If(test=ast.Compare(left=reset, ops=[ast.IsNot()],
                                                        comparators=[ast.Constant(value=None)]),
                                       body=[ast.Assign(targets=[names], value=take)], orelse=[]))
            ast.fix_missing_locations(ast.copy_location(node.body[0], node.body[1].body[0]))
        node.iter = ast.Name(id=var, ctx=ast.Load())
        for x in (spec, node):
            ast.copy_location(x, node)
        return [spec, node]


# ---- Python `range` loops of the new namespace, traced once when that is exact -------------------
#
# New-API ranges are Python ranges (unrolled), which costs the tracer per executed instruction. A
# loop whose body passes the static test below runs once with a symbolic index instead, like
# affine_range; if that run fails (the index reaches a list, an `if`, an address, a first-write
# rule), the trace is rolled back and the loop unrolled, so the recorded stream is what unrolling
# would give. Static test: no exits, no name the body defines read after the loop, no stores into
# attributes, and (checked at entry) every call and subscript store goes to the NKI stand-ins,
# tensors, numpy or pure builtins. State carried between iterations (`slot = 1 - slot`, `a, b = b, a`)
# is traced once per phase when it is periodic (see _Speculative), else the loop unrolls.

_SAFE_BUILTINS = {"range", "len", "min", "max", "abs", "int", "float", "slice", "tuple", "list", "isinstance",
                  "enumerate", "zip", "sum", "divmod", "round", "bool", "print", "reversed", "sorted", "dict", "getattr"}
_FORBIDDEN = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
              ast.Delete, ast.Try, ast.NamedExpr, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
              ast.AsyncFor, ast.AsyncWith)


def _comp_targets(node):
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            out |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
    return out


def _names(node, ctx):
    skip = _comp_targets(node)
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx) and n.id not in skip}


def _carried(stmts, stored, defined, out):
    """Adds to `out` the names the body stores that are read, in statement order, before the body
    defines them (values carried from the previous iteration). `defined` grows with the definitions
    seen; `x += 1` reads x."""
    def reads(node):
        r = _names(node, ast.Load)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            r.add(node.target.id)
        return r

    for s in stmts:
        if isinstance(s, ast.For):
            out |= (_names(s.iter, ast.Load) - defined) & stored
            inner = set(defined) | _names(s.target, ast.Store)
            _carried(s.body, stored, inner, out)
        elif isinstance(s, ast.If):
            out |= (_names(s.test, ast.Load) - defined) & stored
            a, b = set(defined), set(defined)
            _carried(s.body, stored, a, out)
            _carried(s.orelse, stored, b, out)
            defined |= a & b
        elif isinstance(s, ast.Try):  # the rewriter's wrapper of an inner speculative loop's body
            _carried(s.body, stored, defined, out)
            for h in s.handlers:
                _carried(h.body, stored, set(defined) | ({h.name} if h.name else set()), out)
        elif isinstance(s, ast.With):
            for it in s.items:
                out |= (_names(it.context_expr, ast.Load) - defined) & stored
                if it.optional_vars is not None:
                    defined |= _names(it.optional_vars, ast.Store)
            _carried(s.body, stored, defined, out)
        else:
            out |= (reads(s) - defined) & stored
            defined |= _names(s, ast.Store)
    return out


def speculation_plan(loop, func):
    """(call roots, subscript-store roots, carried names) for a `for` loop that may run once
    symbolically (per phase of its carried state), or None."""
    if loop.orelse or not isinstance(loop.target, ast.Name):
        return None
    nodes = [n for s in loop.body for n in ast.walk(s)]
    if any(isinstance(n, _FORBIDDEN) and not getattr(n, "sp_wrapper", False) for n in nodes):
        return None
    for n in nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            return None
    stored = {loop.target.id} | {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    stored -= set().union(*(_comp_targets(s) for s in loop.body))
    carried = _carried(loop.body, stored - {loop.target.id}, {loop.target.id}, set())
    inside = {id(n) for n in nodes} | {id(loop.target)}
    if func is not None and any(isinstance(n, ast.Name) and n.id in stored - carried and id(n) not in inside
                                for n in ast.walk(func)):
        return None  # read (or written) outside the loop: its last value would matter (a carried
        # name's is exact: the iterations after the last whole period run concretely)
    calls, stores = set(), set()
    for n in nodes:
        if isinstance(n, ast.Call):
            f = n.func
            while isinstance(f, ast.Attribute):
                f = f.value
            if not isinstance(f, ast.Name):
                return None  # a call on a call's result or a subscript: not checkable at entry
            calls.add(f.id)
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                for x in ast.walk(t):
                    if isinstance(x, ast.Subscript):
                        v = x.value
                        while isinstance(v, (ast.Subscript, ast.Attribute)):
                            v = v.value
                        if not isinstance(v, ast.Name):
                            return None
                        stores.add(v.id)
    return sorted(calls - stored), sorted(stores - stored), sorted(carried)


def _entry_safe(frame, calls, stores):
    import builtins
    import types

    def look(name):
        for d in (frame.f_locals, frame.f_globals):
            if name in d:
                return True, d[name]
        if name in _SAFE_BUILTINS and hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None

    for name in calls:
        if name in ("__sp_if__", "__sp_range__", "__sp_spec__"):
            continue
        ok, v = look(name)
        if not ok:
            return False
        if isinstance(v, (Tensor, View, Pending, _Module)) or (isinstance(v, types.ModuleType) and
                                                               (v.__name__.split(".")[0] in ("numpy", "nki", "neuronxcc")
                                                                or isinstance(getattr(v, "_mod", None), _Module))):
            continue
        if name in _SAFE_BUILTINS and v is getattr(builtins, name, None):
            continue
        return False
    for name in stores:
        ok, v = look(name)
        if not ok or not isinstance(v, (Tensor, View, Pending)):
            return False
    return True


class _Snapshot:
    """What a failed speculative loop rolls back: everything the trace appended or changed."""

    def __init__(self, st):
        self.n_tensors, self.n_loops, self.n_decls = len(st.tensors), len(st.loops), len(st.decls)
        self.n_pendings, self.instr_count, self.last_pending = len(st.pendings), st.instr_count, st.last_pending
        self.stack, self.body_len = list(st.stack), len(st.stack[-1])
        self.loop_scope, self.guards = list(st.loop_scope), list(st.guards)
        self.name_next, self.splits = dict(st.name_next), dict(st.splits)
        self.unwritten = [t for t in st.tensors if not t.written]
        self.aranges = [dict(a) for a in _ST_AR]
        sa = st.stack_alloc
        self.frames = [[f[0], f[1], list(f[2])] for f in sa.frames] if sa is not None else None

    def restore(self, st):
        for t in st.tensors[self.n_tensors:]:
            st.names.discard(t.name)
        del st.tensors[self.n_tensors:]
        del st.loops[self.n_loops:]
        del st.decls[self.n_decls:]
        del st.pendings[self.n_pendings:]
        st.instr_count, st.last_pending = self.instr_count, self.last_pending
        st.stack[:] = self.stack
        del st.stack[-1][self.body_len:]
        st.loop_scope[:], st.guards[:] = self.loop_scope, self.guards
        st.name_next, st.splits = self.name_next, self.splits
        for t in self.unwritten:
            t.written = False
        _ST_AR[:] = self.aranges
        if self.frames is not None:
            st.stack_alloc.frames = self.frames


SPECULATE = True  # tests compare against False (every Python range unrolled)


MAX_PERIOD = 8  # iterations run concretely while looking for a period of the carried state


def _state_key(v):
    """A value of carried state as an exactly comparable key (tensors by identity), or None when it
    cannot be compared exactly (a symbolic index, a list, a float, an object)."""
    if v is None or type(v) in (bool, int, str):
        return (type(v).__name__, v)
    if isinstance(v, (Tensor, View)):
        return ("tensor", id(v))
    if type(v) is tuple:
        keys = [_state_key(x) for x in v]
        return None if any(k is None for k in keys) else ("tuple", tuple(keys))
    return None


def _linear_steps(seen):
    """Per carried value, its step when every one is unchanged (0) or a plain int advancing by a
    constant nonzero step per iteration and at least one advances; else None."""
    steps = []
    for col in zip(*seen):
        if all(_state_key(v) == _state_key(col[0]) for v in col):
            steps.append(0)
        elif all(type(v) is int for v in col) and len({b - a for a, b in zip(col, col[1:])}) == 1:
            steps.append(col[1] - col[0])
        else:
            return None
    return tuple(steps) if any(steps) else None


def _advance(values, steps, n):
    return tuple(v + d * n if d else v for v, d in zip(values, steps))


def _same_values(got, want):
    """Carried values equal exactly: affine ones term by term, the others as _state_key."""
    if got is None:
        return False
    for a, b in zip(got, want):
        if isinstance(a, Sym) or isinstance(b, Sym):
            a, b = Sym.of(a), Sym.of(b)
            if a is None or b is None or a.c != b.c or a.t != b.t:
                return False
        elif _state_key(a) is None or _state_key(a) != _state_key(b):
            return False
    return True


class _Speculative:
    """The iterable of a `for` the rewriter marked: a symbolic run first, else the Python range.

    A body carrying state (names read before the body assigns them) is periodic when the carried
    values at the start of iteration k equal those at an earlier iteration s (compared exactly:
    _state_key; period p = k - s, s > 0 when the first iterations differ, e.g. `prev = None`).
    Iterations 0..k-1 run concretely (as unrolling does) while looking for p; the whole periods
    after them are one symbolic loop over q whose body is the p phases in sequence (phase r runs
    index start + step*(k + p*q + r)); at each phase's end the carried state must be the one
    recorded for the next phase, so the state does not depend on the symbolic index. The iterations
    past the last whole period run concretely. Without a period within MAX_PERIOD, carried ints that
    advance by a constant step (counters, `k += 1`) are traced symbolically as affine in the index
    (_counting). If anything differs, the symbolic run is rolled back, the carried names are reset
    (`reset`, assigned by the statement the rewriter puts first in the body) to their values at the
    first iteration not run concretely, and the rest unrolls."""

    def __init__(self, it, calls, stores, carried=()):
        self.it, self.spec, self.failed_with = it, False, None
        self.carried, self.reset = carried, None
        f = sys._getframe(1)
        st = _ctx.ST
        self.try_symbolic = (SPECULATE and isinstance(it, range) and len(it) > 1 and st is not None and st.unroll_all
                             and st.running and _entry_safe(f, calls, stores))
        self.frame = f if self.try_symbolic and carried else None

    def _state(self, frame):
        values = self._values(frame)
        return None if values is None else _state_key(values)

    def take_reset(self):
        values, self.reset = self.reset, None
        return values

    def __iter__(self):
        if not self.try_symbolic:
            yield from self.it
            return
        if self.carried:
            yield from self._periodic()
            return
        snap = _Snapshot(_ctx.ST)
        gen, index = self._symbolic(self.it.start, len(self.it), self.it.step)
        try:
            yield index
        finally:
            self._close(gen)
        if self.failed_with is None:
            return
        snap.restore(_ctx.ST)
        yield from self.it

    def _values(self, frame):
        loc = frame.f_locals
        return tuple(loc[c] for c in self.carried) if all(c in loc for c in self.carried) else None

    def _periodic(self):
        vals, frame = self.it, self.frame
        self.frame = None  # only the running generator holds the kernel's frame (no reference cycle)
        seen = [self._values(frame)]  # the carried values at the start of each concrete iteration
        keys = [None if seen[0] is None else _state_key(seen[0])]
        k, first, period, steps = 0, 0, None, None
        while keys[0] is not None and k < len(vals):
            yield vals[k]
            k += 1
            if k == len(vals):
                break
            seen.append(self._values(frame))
            keys.append(None if seen[-1] is None else _state_key(seen[-1]))
            if keys[-1] is None:
                break
            if keys[-1] in keys[:-1]:  # a state seen before: periodic from there on
                first = keys.index(keys[-1])
                period = k - first
                break
            if k > MAX_PERIOD:
                steps = _linear_steps(seen)
                break
        if period:
            yield from self._phases(vals, frame, k, keys[first:k], seen[first])
        elif steps:
            yield from self._counting(vals, frame, k, seen[-1], steps)
        else:
            yield from vals[k:]

    def _symbolic(self, first, trip, step):
        """Opens the symbolic loop and returns (generator, its index); the caller closes it."""
        st = _ctx.ST
        self.spec = True
        st.speculating += 1
        gen = _symbolic_loop("range", "sequential", (first, first + step * trip, step))
        return gen, next(gen)

    def _close(self, gen):
        gen.close()
        _ctx.ST.speculating -= 1
        self.spec = False

    def _phases(self, vals, frame, k, cycle, start_values):
        """Iterations k.. of a periodic state (cycle: its keys from iteration k on, start_values: its
        values at k): the whole periods symbolically, one phase per key."""
        period = len(cycle)
        full = (len(vals) - k) // period
        if full < 2:
            yield from vals[k:]
            return
        st = _ctx.ST
        snap = _Snapshot(st)
        step = vals.step
        gen, base = self._symbolic(vals.start + step * period, full, step * period)
        try:
            for r in range(period):
                yield base + step * r
                if self.failed_with is not None:
                    break
                if self._state(frame) != cycle[(r + 1) % period]:
                    self.failed_with = "the carried state depends on the index"
                    break
        finally:
            self._close(gen)
        if self.failed_with is None:
            yield from vals[k + period * full:]
            return
        snap.restore(st)
        self.reset = start_values
        yield from vals[k:]

    def _counting(self, vals, frame, k, at_k, steps):
        """Iterations k.. of counters (`k += 1`): each carried int advances by its step per
        iteration; the others stay. All but the last run symbolically with the counters affine in
        the loop index; the last runs concretely, so the counters end with their exact values."""
        full = len(vals) - k - 1
        if full < 2:
            yield from vals[k:]
            return
        st = _ctx.ST
        snap = _Snapshot(st)
        gen, base = self._symbolic(vals.start + vals.step * k, full, vals.step)
        try:
            q = Sym(0, {("L", st.loop_scope[-1]): 1})
            self.reset = _advance(at_k, steps, q)
            yield base
            if self.failed_with is None and not _same_values(self._values(frame), _advance(at_k, steps, q + 1)):
                self.failed_with = "a carried counter does not advance by its step"
        finally:
            self._close(gen)
        if self.failed_with is None:
            self.reset = _advance(at_k, steps, full)
            yield from vals[k + full:]
            return
        snap.restore(st)
        self.reset = at_k
        yield from vals[k:]

    def failed(self, e):
        """Called with an exception of the body: True (swallowed) when the symbolic run fails."""
        if not self.spec or isinstance(e, _ctx.Timeout) or not isinstance(e, (Exception, _Unroll)):
            return False
        self.failed_with = e
        return True
