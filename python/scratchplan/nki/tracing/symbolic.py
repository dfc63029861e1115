"""Symbolic indices and predicates: loop indices, program ids, `nl.arange` vectors, affine
expressions of them, and comparisons of those (masks, branch conditions)."""
from __future__ import annotations

import math

from .context import np
from . import context as _ctx
from .context import _fail


class Sym:
    """const + sum(coef * var). Variables: ('L', loop id) for loops and SPMD ids, ('A', arange id)
    for arange/mgrid axes (index vectors)."""

    __slots__ = ("c", "t")

    def __init__(self, c=0, t=None):
        self.c = c
        self.t = t or {}

    @staticmethod
    def of(x):
        if isinstance(x, Sym):
            return x
        if isinstance(x, bool):
            return Sym(int(x))
        if isinstance(x, int):
            return Sym(x)
        if np is not None and isinstance(x, np.integer):
            return Sym(int(x))
        return None

    def is_const(self):
        return not self.t

    def has_arange(self):
        return any(k[0] == "A" for k in self.t)

    def _bin(self, o, sign):
        o = Sym.of(o)
        if o is None:
            return NotImplemented
        t = dict(self.t)
        for k, v in o.t.items():
            t[k] = t.get(k, 0) + sign * v
            if t[k] == 0:
                del t[k]
        return _mk(self.c + sign * o.c, t)

    def __add__(self, o):
        return self._bin(o, 1)

    __radd__ = __add__

    def __sub__(self, o):
        return self._bin(o, -1)

    def __rsub__(self, o):
        o = Sym.of(o)
        return NotImplemented if o is None else o._bin(self, -1)

    def __neg__(self):
        return _mk(-self.c, {k: -v for k, v in self.t.items()})

    def __pos__(self):
        return self

    def __mul__(self, o):
        o = Sym.of(o)
        if o is None:
            return NotImplemented
        if not o.is_const() and not self.is_const():
            _fail("product of two symbolic indices is not affine")
        a, k = (self, o.c) if o.is_const() else (o, self.c)
        return _mk(a.c * k, {v: c * k for v, c in a.t.items() if c * k})

    __rmul__ = __mul__

    def _divmod_const(self, o, op):
        o = Sym.of(o)
        if o is None or not o.is_const() or o.c == 0:
            _fail(f"'{op}' of a symbolic index by a non-constant")
        if self.is_const():
            return Sym(self.c // o.c if op == "//" else self.c % o.c)
        # Exact when every coefficient (and the constant) divides: i*128 // 128 == i.
        if op == "//" and all(c % o.c == 0 for c in self.t.values()) and self.c % o.c == 0:
            return _mk(self.c // o.c, {k: c // o.c for k, c in self.t.items()})
        q = self._split(o.c, op)
        if q is not None:
            return q
        _fail(f"'{op}' of a symbolic index ({self}) is not affine")

    def _split(self, m, op):
        """(a*i + c) % m or // m of one loop index i: the loop is written as i = s*q + r with
        s = m / gcd(a, m) (q, r loop indices of their own in the kernel JSON), which makes both
        exact when the result is affine in r over r = 0..s-1 (i % 2, (i + 1) % 2, i // 4,
        (2*i + 2) % 4); None otherwise."""
        if len(self.t) != 1 or m <= 0:
            return None
        (k, a), = self.t.items()
        if k[0] != "L" or len(k) != 2:
            return None
        lid = k[1]
        # i = s*q + r with s = m / gcd(a, m): a*s is a multiple of m, so the result depends on r
        # only, plus a*s/m per q for `//` ((2*j + 2) % 4 splits j by 2, not 4)
        s = m // math.gcd(a, m)
        if s == 1:  # a multiple of m: no split needed
            return self.c % m if op == "%" else _mk(self.c // m, {k: a // m})
        if _ctx.ST.splits.setdefault(lid, s) != s:
            _fail(f"index {_ctx.ST.loops[lid][0]} is split by both {_ctx.ST.splits[lid]} and {s} (taken modulo {m}); "
                  "one modulus per loop")
        tab = [(a * r + self.c) % m if op == "%" else (a * r + self.c) // m for r in range(s)]
        d = tab[1] - tab[0]
        if any(tab[r] != tab[0] + d * r for r in range(s)):
            return None
        t = {("L", lid, "r"): d}
        if op == "//":
            t[("L", lid, "q")] = a * s // m
        return _mk(tab[0], t)

    def __floordiv__(self, o):
        return self._divmod_const(o, "//")

    def __mod__(self, o):
        return self._divmod_const(o, "%")

    def __truediv__(self, o):
        _fail(f"'/' of a symbolic index ({self}) is not an integer index")

    def __rfloordiv__(self, o):
        _fail("division by a symbolic index is not affine")

    __rmod__ = __rtruediv__ = __rfloordiv__

    def __bool__(self):
        _fail(f"branch on a symbolic index ({self}): loop bodies are traced once, so its value is undefined")

    def __index__(self):
        _fail(f"symbolic index {self} used where Python needs an integer (a loop bound or a Python list index)")

    __int__ = __index__

    def __hash__(self):
        return hash((self.c, tuple(sorted(self.t.items()))))

    def _cmp(self, o, op):
        o = Sym.of(o)
        if o is None:
            return NotImplemented
        d = self - o  # compare d with 0
        if isinstance(d, int):
            return {"<": d < 0, "<=": d <= 0, ">": d > 0, ">=": d >= 0, "==": d == 0, "!=": d != 0}[op]
        return Pred.from_cmp(d, op)

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return self._cmp(o, ">")

    def __ge__(self, o):
        return self._cmp(o, ">=")

    def __eq__(self, o):
        return self._cmp(o, "==")

    def __ne__(self, o):
        return self._cmp(o, "!=")

    def __getitem__(self, key):  # nl.arange(n)[:, None]: place an arange on an axis
        if not isinstance(key, tuple):
            key = (key,)
        axes = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if len(axes) != 1 or any(k is not None and not isinstance(k, slice) for k in key):
            _fail("expected an index vector placed with [:, None] / [None, :]")
        ids = [k for k in self.t if k[0] == "A"]
        if not ids:
            _fail("only nl.arange vectors can be placed on an axis")
        for k in ids:
            _ST_AR[k[1]]["axis"] = axes[0]
            _ST_AR[k[1]]["ndim"] = len(key)
        return self

    def bounds(self, ranges=None):
        """[lo, hi] over loop trips and arange ranges."""
        lo = hi = self.c
        for k, c in self.t.items():
            a, b = _var_range(k)
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        return lo, hi

    def lin(self):
        return tuple(sorted(self.t.items()))

    def loop_part(self):
        return Sym(self.c, {k: v for k, v in self.t.items() if k[0] == "L"})

    def __repr__(self):
        parts = []
        for k, c in sorted(self.t.items()):
            n = _var_name(k)
            parts.append(n if c == 1 else f"{c}*{n}")
        if self.c or not parts:
            parts.append(str(self.c))
        return " + ".join(parts).replace("+ -", "- ")

    __str__ = __repr__


def _mk(c, t):
    t = {k: v for k, v in t.items() if v}
    return Sym(c, t) if t else c


_ST_AR = []  # arange registry of the current trace: {"n": size, "start": s, "axis": a, "ndim": d}


def _var_range(k):
    if k[0] == "L" and len(k) == 3:  # quotient / remainder of a split loop index
        trip, m = _ctx.ST.loops[k[1]][1], _ctx.ST.splits[k[1]]
        return 0, (-(-trip // m) if k[2] == "q" else min(m, trip)) - 1
    if k[0] == "L":
        return 0, _ctx.ST.loops[k[1]][1] - 1
    a = _ST_AR[k[1]]
    return a["start"], a["start"] + a["n"] - 1


def _var_name(k):
    if k[0] == "L":
        return _ctx.ST.loops[k[1]][0] + (f"_{k[2]}" if len(k) == 3 else "")
    return f"arange{k[1]}"


def _affine_text(x):
    """Affine string over loop names for the kernel JSON."""
    s = Sym.of(x)
    if s.is_const():
        return s.c
    return repr(s)


class Pred:
    """A mask: a conjunction of affine constraints g >= 0."""

    __slots__ = ("cons",)

    def __init__(self, cons):
        self.cons = cons

    @staticmethod
    def from_cmp(d, op):
        d = Sym.of(d)
        if op == "<":
            return Pred([-d - 1])
        if op == "<=":
            return Pred([-d])
        if op == ">":
            return Pred([d - 1])
        if op == ">=":
            return Pred([d])
        if op == "==":
            return Pred([d, -d])
        _fail("'!=' is not an affine mask")

    def __and__(self, o):
        if isinstance(o, (bool, np.bool_) if np is not None else bool):
            # `(i < n) & causal_mask` where the kernel set causal_mask = True: Python bools fold in
            return self if o else Pred([-1])
        if not isinstance(o, Pred):
            _fail("a mask combines comparisons with &")
        return Pred(self.cons + o.cons)

    __rand__ = __and__

    def __bool__(self):
        _fail("branch on a symbolic index: loop bodies are traced once, so the comparison has no single value")

    def upper(self, x):
        """Best upper bound of affine x under the mask, or None."""
        best = None
        for g in self.cons:
            g = Sym.of(g)
            if g.t and {k: -v for k, v in g.t.items()} == x.t:
                b = x.c + g.c
                best = b if best is None else min(best, b)
        return best

    def lower(self, x):
        best = None
        for g in self.cons:
            g = Sym.of(g)
            if g.t and g.t == x.t:
                b = x.c - g.c
                best = b if best is None else max(best, b)
        return best


def bounds_under(x, cons, limit=1 << 20):
    """[lo, hi] of affine x over the iterations where every g in cons is >= 0 (masks and branch
    conditions): exact by enumerating the variables x shares with the constraints (at most
    `limit` points), else the plain bounds. None when no iteration satisfies them."""
    x = Sym.of(x)
    cons = [Sym.of(g) for g in cons if not Sym.of(g).is_const() or Sym.of(g).c < 0]
    if not cons or np is None:
        return x.bounds()
    if any(g.is_const() for g in cons):
        return None  # a constant false constraint
    keys = set(x.t)
    rel, grew = [], True
    while grew:  # constraints connected to x's variables, transitively
        grew = False
        for g in cons:
            if not any(g is r for r in rel) and (not keys or keys & set(g.t)):
                rel.append(g)
                keys |= set(g.t)
                grew = True
    keys = sorted(keys)
    size = 1
    for k in keys:
        a, b = _var_range(k)
        size *= b - a + 1
    if not rel or size > limit:
        return x.bounds()
    grids = np.meshgrid(*[np.arange(_var_range(k)[0], _var_range(k)[1] + 1) for k in keys], indexing="ij", copy=False)
    env = dict(zip(keys, grids))

    def ev(s):
        v = np.full(grids[0].shape if grids else (), s.c, dtype=np.int64)
        for k, c in s.t.items():
            v = v + c * env[k]
        return v

    ok = np.ones(grids[0].shape if grids else (), dtype=bool)
    for g in rel:
        ok &= ev(g) >= 0
    if not ok.any():
        return None
    vals = ev(x)[ok]
    return int(vals.min()), int(vals.max())
