"""Values known at trace time (docs/torch.md, "Inputs whose values matter").

Tracing runs on meta tensors, which have shapes but no values. Some tensors' values are known
anyway: example inputs given as real integer or bool tensors (``lengths``), tensors made in
forward from no data (``arange``, ``zeros``, ``full``) and whatever is computed from those alone
(``arange(T) < lengths[:, None]``, ``lengths.max()``). ``Known`` keeps each such meta tensor's
value as a CPU tensor, computed by running the same call on the values (tracing disabled), so
where Python reads one (``.item()``, ``int(t)``, ``.tolist()``, ``if t > 0``, ``.cpu()``) the
trace is specialized to it, as ``torch.jit.trace`` specializes, and the read is recorded.
A value that depends on anything else (activations, weights) is unknown: reading it is refused
as data-dependent, as before.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

# Values are kept up to this many elements (the ones Python reads are lengths and small masks).
MAX_ELEMENTS = 1 << 20

# Reads of a value in Python: the trace is specialized to the value.
READS = {torch.Tensor.item: "item()", torch.Tensor.tolist: "tolist()", torch.Tensor.__int__: "int()",
         torch.Tensor.__index__: "an index", torch.Tensor.__float__: "float()", torch.Tensor.__bool__: "a condition",
         torch.Tensor.numpy: "numpy()", torch.Tensor.cpu: "cpu()"}
# Ops whose values do not depend on their tensor argument's values (only on its shape / dtype).
_SHAPE_ONLY = {"new_zeros", "new_ones", "new_full", "zeros_like", "ones_like", "full_like", "new_tensor", "empty_like",
               "new_empty"}
# Uninitialized tensors: their value is taken as zeros (a model that reads one before writing it
# is undefined anyway; the ones that write it whole, invert_permutation's scatter_, are known).
_UNINITIALIZED = {"empty", "empty_like", "new_empty", "empty_strided"}
_RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli",
           "uniform_", "normal_", "bernoulli_", "random_", "dropout", "multinomial"}
# Values that ATen ops give meta tensors the value of: shape queries and the like need no tracking.
_NO_TENSOR = {"size", "dim", "numel", "stride", "__len__", "element_size", "is_floating_point"}


def _cpu(x: Any) -> Any:
    if isinstance(x, torch.device) and x.type == "meta":
        return torch.device("cpu")
    if isinstance(x, str) and x == "meta":
        return "cpu"
    return x


def _summary(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        v = v.tolist()
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class Known:
    """The known values of meta tensors of one trace (id -> (meta tensor, CPU value))."""

    def __init__(self, where: Callable[[], Tuple[str, str]]) -> None:
        self.vals: Dict[int, Tuple[torch.Tensor, torch.Tensor]] = {}
        self.where = where                  # () -> (module path, model file:line) for the records
        self.specializations: List[str] = []  # one line per value read in Python
        self.random: Dict[int, torch.Tensor] = {}  # meta tensors whose values derive from a random op

    def add(self, meta: torch.Tensor, value: torch.Tensor) -> None:
        self.vals[id(meta)] = (meta, value)

    def get(self, t: Any) -> Any:
        """The CPU value of a tensor (a CPU tensor is its own value), None when unknown."""
        if not isinstance(t, torch.Tensor):
            return None
        if t.device.type != "meta":
            return t
        e = self.vals.get(id(t))
        return e[1] if e is not None and e[0] is t else None

    def read(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """Python reads the value of a meta tensor: the known value (recorded), or NotImplemented."""
        from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
        value = self.get(args[0])
        if value is None:
            if self.random.get(id(args[0])) is args[0]:
                raise RuntimeError("scratchplan: reads a random value in Python (rand, randperm, ...): not known at "
                                   "trace time (data-dependent)")
            return NotImplemented
        if args[0].device.type != "meta":
            # A CPU tensor (batch sizes of a packed sequence, a constant) has its values; make_fx
            # would still trace the read as an op on a tracked constant and fail.
            with disable_proxy_modes_tracing():
                return func(*args, **kwargs)
        with disable_proxy_modes_tracing():
            out = func(value, *args[1:], **kwargs)
        if isinstance(out, torch.Tensor) or type(out).__module__ == "numpy":
            out = out.copy() if type(out).__module__ == "numpy" else out.clone()  # the model may write it
        module, where = self.where()
        self.specializations.append(f"module '{module}'" + (f" at {where}" if where else "")
                                    + f": {READS[func]} of a tensor known at trace time: {_summary(out)}")
        return out

    def propagate(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        """After ``result = func(*args, **kwargs)`` on meta tensors: when every tensor argument has
        a known value, compute the call on the values and keep the results' values."""
        name = getattr(func, "__name__", "")
        if name in _RANDOM or (self.random and any(self.random.get(id(x)) is x for x in tree_flatten((args, kwargs))[0]
                                                   if isinstance(x, torch.Tensor))):
            for o in tree_flatten(result)[0]:  # random values, and what is computed from them
                if isinstance(o, torch.Tensor) and o.device.type == "meta":
                    self.random[id(o)] = o
        if name in _NO_TENSOR or name in _RANDOM:
            if name.endswith("_") and isinstance(args[0] if args else None, torch.Tensor):
                self.forget(args[0])
            return
        outs, _ = tree_flatten(result)
        metas = [o for o in outs if isinstance(o, torch.Tensor) and o.device.type == "meta"]
        leaves, spec = tree_flatten((args, kwargs))
        mutates = (name.endswith("_") and not name.endswith("__")) or name == "__setitem__" or "out" in kwargs
        if not metas and not mutates:
            return
        vals = []
        ok = True
        for i, x in enumerate(leaves):
            if isinstance(x, torch.Tensor):
                v = self.get(x)
                if v is None and name in _SHAPE_ONLY and i == 0:
                    v = torch.zeros(x.shape, dtype=x.dtype)
                if v is None and name in ("to", "type_as") and i > 0:
                    v = torch.empty(0, dtype=x.dtype)  # x.to(other): other's dtype only
                if v is None or v.numel() > MAX_ELEMENTS:
                    ok = False
                    break
                vals.append(v)
            else:
                vals.append(_cpu(x))
        if ok and any(m.numel() > MAX_ELEMENTS for m in metas):
            ok = False
        if not ok:
            if mutates and args and isinstance(args[0], torch.Tensor):
                self.forget(args[0])
            return
        from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
        a, k = tree_unflatten(vals, spec)
        try:
            with disable_proxy_modes_tracing():
                res = func(*a, **k)
        except Exception:  # noqa: BLE001 - a value that cannot be computed is simply unknown
            if mutates and args and isinstance(args[0], torch.Tensor):
                self.forget(args[0])
            return
        if name in _UNINITIALIZED and isinstance(res, torch.Tensor):
            res = res.zero_()
        routs, _ = tree_flatten(res)
        if len(routs) == len(outs):
            for o, r in zip(outs, routs):
                if isinstance(o, torch.Tensor) and o.device.type == "meta" and isinstance(r, torch.Tensor):
                    self.add(o, r)

    def forget(self, t: torch.Tensor) -> None:
        """``t`` was written with unknown values: it and every known tensor sharing its values
        (views of one CPU value share its storage) are unknown from now on."""
        v = self.get(t)
        if v is None or t.device.type != "meta":
            return
        ptr = v.storage().data_ptr()
        for key in [k for k, (_, val) in self.vals.items() if val.storage().data_ptr() == ptr]:
            del self.vals[key]
