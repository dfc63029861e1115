"""Tracing for the PyTorch front end: ``make_fx`` on meta tensors (no arithmetic, no weight
memory), every FX node stamped with the module path it ran in (docs/torch.md, "Tracing")."""
from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
from typing import Any, Dict, List, Optional, Sequence

import torch

from .._common import BadInput
from . import _meta_kernels, _recurrent, _values
from ._report import UnsupportedModel, refusal

# Frames in these directories are not the model's code (torch, this package, the stdlib).
_NOT_MODEL = tuple(os.path.dirname(p) + os.sep for p in (torch.__file__, os.path.dirname(__file__)))
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep
_is_model_file: Dict[str, bool] = {}


def _model_file(path: str) -> bool:
    ok = _is_model_file.get(path)
    if ok is None:
        ok = not (path.startswith("<") or path.startswith(_NOT_MODEL) or
                  (path.startswith(_STDLIB) and "-packages" not in path))
        _is_model_file[path] = ok
    return ok


_short_paths: Dict[str, str] = {}
_SUFFIX = re.compile(r"_\d+$")


def _short(path: str, line: int) -> str:
    """``file:line``, relative to the working directory or to site-packages (torchvision/...)."""
    rel = _short_paths.get(path)
    if rel is None:  # cached: relpath per FX node was 5 % of MViT v2's trace
        rel = os.path.relpath(path)
        if rel.startswith(".."):
            m = re.search(r"[/\\](?:site|dist)-packages[/\\](.*)$", path)
            rel = m.group(1) if m else os.path.basename(path)
        _short_paths[path] = rel
    return f"{rel}:{line}"


def _caller() -> str:
    """The innermost frame of the model's own code on the stack (where an FX node comes from)."""
    f = sys._getframe(2)
    while f is not None:
        if _model_file(f.f_code.co_filename):
            return _short(f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return ""


def _failing_frame(e: BaseException) -> Optional[tuple]:
    """(path, line) of the innermost traceback frame in the model's own code."""
    tb, found = e.__traceback__, None
    while tb is not None:
        if _model_file(tb.tb_frame.f_code.co_filename):
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


# Ops whose output shape depends on values: no meta kernel can exist for them.
_DATA_DEPENDENT = {"nonzero", "masked_select", "_unique", "_unique2", "unique_dim", "unique_consecutive",
                   "unique_dim_consecutive", "argwhere", "repeat_interleave", "nonzero_numpy", "_local_scalar_dense"}


def _reason(e: BaseException, source: str) -> str:
    """A plain reason for a trace failure, never PyTorch's boilerplate."""
    msg = str(e)
    first = msg.strip().splitlines()[0] if msg.strip() else type(e).__name__
    if first.startswith("scratchplan: "):  # the tracing mode's own reasons
        return first[len("scratchplan: "):]
    if isinstance(e, torch.fx.proxy.TraceError) or "get value out of a tracing tensor" in msg \
            or "data-dependent" in msg or "cannot be used as inputs to control flow" in msg:
        if re.match(r"\s*(if|elif|while|assert)\b", source) or re.search(r"\bif\b.*\belse\b", source):
            return "data-dependent control flow (if on a tensor value)"
        return "reads a tensor's value in Python (.item(), .tolist(), int(t)): data-dependent"
    if "Cannot copy out of meta tensor" in msg:  # .tolist() / .numpy() of a value not known
        return "reads a tensor's value in Python (.item(), .tolist(), int(t)): data-dependent"
    m = re.search(r"Could not run '(aten::\w+)(?:\.\w+)?' with arguments from the 'Meta' backend", msg)
    if m:
        op = m.group(1)
        if op.split("::")[1] in _DATA_DEPENDENT:
            return f"data-dependent output shape ({op}: torch.where / nonzero / boolean indexing)"
        return f"{op} has no meta kernel in torch {'.'.join(torch.__version__.split('.')[:2])}: it cannot be traced on meta tensors"
    if "meta" in msg and "device" in msg:
        return "a tensor made on an explicit device (device='cpu') meets the traced model; make it on x.device"
    if "dtype" in msg.lower() and ("unsupported" in msg.lower() or "not implemented" in msg.lower()):
        return f"unsupported dtype ({first})"
    return f"{type(e).__name__}: {first}"


def _module_paths(model: torch.nn.Module) -> Dict[int, str]:
    return {id(m): name for name, m in model.named_modules()}


_FACTORIES = {torch.zeros, torch.ones, torch.empty, torch.full, torch.arange, torch.eye, torch.linspace,
              torch.rand, torch.randn, torch.randint, torch.tensor, torch.as_tensor, torch.scalar_tensor}


_REPEAT_INTERLEAVE = {torch.repeat_interleave, torch.Tensor.repeat_interleave}


def _repeat_interleave(x, repeats, dim=None, *, output_size=None):
    """``repeat_interleave`` by an int, as views: on meta tensors ATen turns the int into a repeats
    tensor and then needs its values (MViT's positional encoding). x[i] repeated r times along dim
    is x viewed with a new dim of size r after dim, expanded, then merged: the converter's expand
    (a view) and a merge (a copy writing ``r * i + k``), exact."""
    if dim is None:
        x, dim = x.reshape(-1), 0
    dim %= x.dim()
    sizes = list(x.shape)
    sizes.insert(dim + 1, repeats)
    return x.unsqueeze(dim + 1).expand(sizes).flatten(dim, dim + 1)


class _Rewrites(torch.overrides.TorchFunctionMode):
    """Calls rewritten while tracing. Always: ``repeat_interleave`` by an int (see above), the
    recurrent kernels (``aten::lstm`` ...) unrolled into their cell arithmetic, packing with
    lengths known at trace time, ``_weight_norm`` decomposed (``_recurrent``) and, with ``known``,
    values known at trace time kept and read (``_values``). With ``factories_on_meta``: tensors a
    forward creates without a device (``torch.zeros(2, 64)``, ``torch.arange(n)``) are made on
    meta like everything else traced; on the CPU they met meta tensors in the first op and the
    trace failed (a state initialized in forward, position ids). That is used for a second trace
    only when the first one failed so (see trace)."""

    def __init__(self, factories_on_meta: bool = False, known: Optional[_values.Known] = None,
                 swapped: Optional[Dict[int, torch.Tensor]] = None) -> None:
        super().__init__()
        self.factories_on_meta = factories_on_meta
        self.known = known
        self.swapped = swapped or {}  # id(a real parameter) -> the meta tensor traced in its place

    def _lengths(self, lengths: Any) -> List[int]:
        v = self.known.get(lengths) if self.known is not None else (lengths if lengths.device.type != "meta" else None)
        if v is None:
            raise RuntimeError("scratchplan: pack_padded_sequence: the lengths are not known at trace time (data-dependent); "
                               "give the lengths input a value (--input 2:int64=200, or a real tensor in Python)")
        return [int(x) for x in v.tolist()]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _REPEAT_INTERLEAVE and len(args) > 1 and isinstance(args[1], int) and args[0].device.type == "meta":
            return _repeat_interleave(*args, **kwargs)
        if func in _recurrent.RECURRENT and args and args[0].device.type == "meta":
            args = list(args)
            packed = isinstance(args[1], torch.Tensor) and args[1].dim() == 1 and args[1].device.type != "meta" \
                and args[1].dtype == torch.int64
            w = 3 if packed else 2
            # nn.RNNBase passes the weights cached when it was built (_flat_weights): the traced ones.
            args[w] = [self.swapped.get(id(t), t) for t in args[w]]
            return _recurrent.unroll(_recurrent.RECURRENT[func], args, packed)
        if func is torch._pack_padded_sequence and args[0].device.type == "meta":
            return _recurrent.pack_padded(args[0], self._lengths(args[1]), args[2])
        if func is torch._pad_packed_sequence and args[0].device.type == "meta":
            return _recurrent.pad_packed(*args)
        if func is torch._nested_tensor_from_mask_left_aligned and args[0].device.type == "meta":
            # nn.TransformerEncoder with a padding mask would switch to nested tensors (no meta
            # kernels); the regular path computes the same values at the positions that count.
            return False
        if func is torch.istft and args[0].device.type == "meta":
            return _recurrent.istft(*args, **kwargs)
        if func is torch._weight_norm and args[0].device.type == "meta":
            return _recurrent.weight_norm(*args, **kwargs)
        if self.known is not None and func in _values.READS and args and isinstance(args[0], torch.Tensor):
            out = self.known.read(func, args, kwargs)
            if out is not NotImplemented:
                return out
        if self.factories_on_meta and func in _FACTORIES and kwargs.get("device") is None:
            kwargs["device"] = "meta"
        out = func(*args, **kwargs)
        if self.known is not None:
            self.known.propagate(func, args, kwargs, out)
        return out


def trace(model: torch.nn.Module, example_inputs: Sequence[Any]):
    """make_fx on meta tensors; every node gets meta["sp_module"], the module path it ran in."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless

    _meta_kernels.register()
    if not isinstance(model, torch.nn.Module):
        raise BadInput(f"to_program: expected a torch.nn.Module, got {type(model).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise BadInput(f"to_program: example_inputs: expected a tuple of arguments, got {type(example_inputs).__name__}")
    # Arguments may nest tensors in tuples, lists and dicts; other leaves (ints, floats, strings,
    # None: a step count, a flag) are passed as they are, so the trace is specialized to them.
    from torch.utils._pytree import tree_flatten, tree_unflatten
    leaves, spec = tree_flatten(list(example_inputs))
    for i, x in enumerate(leaves):
        if not isinstance(x, (torch.Tensor, bool, int, float, str, type(None))):
            raise BadInput(f"to_program: example_inputs: argument leaf {i} is a {type(x).__name__}; expected tensors "
                           "(in tuples, lists or dicts) and plain values (int, float, bool, str, None)")
    tensor_at = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    inputs = [leaves[i] for i in tensor_at]
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    names = list(state)
    metas = [torch.empty(v.shape, dtype=v.dtype, device="meta") for v in state.values()]
    # Recurrent modules pass the weights cached when they were built (_flat_weights) to their
    # kernel, which the swap to meta tensors does not reach: the rewrite maps them back.
    swapped = {id(v): m for v, m in zip(state.values(), metas)}
    in_metas = [torch.empty(x.shape, dtype=x.dtype, device="meta") for x in inputs]
    paths = _module_paths(model)
    stack: List[str] = []
    known_box: List[_values.Known] = []

    def where():
        return (stack[-1] if stack else "") or type(model).__name__, _caller()

    def new_known() -> _values.Known:
        # Example inputs given as real integer or bool tensors carry their values (lengths);
        # floating ones are signals: their shape only.
        k = _values.Known(where)
        for x, m in zip(inputs, in_metas):
            if x.device.type != "meta" and not x.is_floating_point() and not x.is_complex() and x.numel() > 0:
                k.add(m, x.detach().clone())
        known_box[:] = [k]
        return k

    def pre(mod, args):
        stack.append(paths.get(id(mod), stack[-1] if stack else ""))

    def post(mod, args, out):
        if stack:
            stack.pop()

    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post)
    orig = torch.fx.Graph.create_node

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        if name is None or not _SUFFIX.search(name):
            # FX names the k-th node of a target by trying name_1, name_2, ... until one is free:
            # quadratic in the nodes per target (1 s of MViT v2's trace; make_fx passes the op's
            # name, and an unrolled LSTM of 400 steps spent 16 s there). Counting here gives the
            # same names in one try.
            base = self._target_to_str(target) if name is None else name
            counts = self.__dict__.setdefault("_sp_name_counts", {})
            k = counts.get(base, 0)
            counts[base] = k + 1
            name = base if k == 0 else f"{base}_{k}"
        n = orig(self, op, target, args, kwargs, name, type_expr)
        n.meta["sp_module"] = stack[-1] if stack else ""
        n.meta["sp_where"] = _caller()  # the model's file:line, for refusals
        return n

    on_meta = [False]  # second attempt: factories without a device make meta tensors

    def f(*flat):
        args = list(leaves)
        for i, x in zip(tensor_at, flat[len(names):]):
            args[i] = x
        with _Rewrites(on_meta[0], new_known(), swapped):
            return stateless.functional_call(model, dict(zip(names, flat[:len(names)])), tuple(tree_unflatten(args, spec)))

    torch.fx.Graph.create_node = create_node
    # make_fx wraps the graph in a GraphModule, which generates and compiles Python source for it
    # (1.2 s for MViT v2); only the graph is read here, so that code is not generated.
    recompile = torch.fx.GraphModule.recompile
    torch.fx.GraphModule.recompile = lambda self: None
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            try:
                g = make_fx(f, tracing_mode="real")(*metas, *in_metas)
            except RuntimeError as e:
                # A tensor made in forward on the CPU met the meta tensors: trace again with the
                # factories on meta. Only then, so that a model reading such a tensor's values
                # (`.tolist()`, `.item()`) traces as before.
                if "meta" not in str(e) or "device" not in str(e):
                    raise
                stack.clear()
                on_meta[0] = True
                g = make_fx(f, tracing_mode="real")(*metas, *in_metas)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - any trace failure becomes one clear line
        module = (stack[-1] if stack else "") or type(model).__name__
        frame = _failing_frame(e)
        source = linecache.getline(*frame) if frame else ""
        raise UnsupportedModel(refusal(module, _short(*frame) if frame else "", _reason(e, source))) from None
    finally:
        torch.fx.Graph.create_node = orig
        torch.fx.GraphModule.recompile = recompile
        h1.remove()
        h2.remove()
        model.train(was_training)
    g.sp_specializations = list(known_box[0].specializations) if known_box else []
    return g, names, metas + in_metas


class _Reached(Exception):
    """Raised by the pre-hook of the submodule: its inputs are captured, the parent stops."""


def submodule_inputs(model: torch.nn.Module, example_inputs: Any, path: str):
    """Runs ``model`` on meta tensors until it calls the submodule at ``path`` and returns
    (submodule, its positional arguments as meta tensors). The parent's code before that call
    (a detection model's preprocessing) runs once, as it would; nothing after it runs, so its
    data-dependent postprocessing does not matter."""
    from torch.nn.utils import stateless
    from torch.utils._pytree import tree_flatten, tree_unflatten

    _meta_kernels.register()
    if not isinstance(model, torch.nn.Module):
        raise BadInput(f"to_program: expected a torch.nn.Module, got {type(model).__name__}")
    try:
        sub = model.get_submodule(path)
    except AttributeError:
        names = ", ".join(n for n, _ in model.named_children())
        raise BadInput(f"to_program: submodule {path!r}: {type(model).__name__} has no such submodule "
                       f"(its children: {names or 'none'})") from None
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    leaves, spec = tree_flatten(list(example_inputs))
    leaves = [torch.empty(x.shape, dtype=x.dtype, device="meta") if isinstance(x, torch.Tensor) else x for x in leaves]
    state = {k: torch.empty(v.shape, dtype=v.dtype, device="meta")
             for k, v in list(model.named_parameters()) + list(model.named_buffers())}
    got: List[Any] = []

    def pre(mod, args):
        got.append(args)
        raise _Reached()

    def run(on_meta: bool) -> None:
        with _Rewrites(on_meta):
            stateless.functional_call(model, state, tuple(tree_unflatten(leaves, spec)))

    h = sub.register_forward_pre_hook(pre)
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            try:
                run(False)
            except RuntimeError as e:
                if "meta" not in str(e) or "device" not in str(e):
                    raise
                run(True)  # tensors made in forward without a device met meta tensors: as in trace
    except _Reached:
        pass
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - one clear line
        frame = _failing_frame(e)
        source = linecache.getline(*frame) if frame else ""
        raise UnsupportedModel(refusal(type(model).__name__, _short(*frame) if frame else "",
                                       f"before calling submodule '{path}': {_reason(e, source)}")) from None
    finally:
        h.remove()
        model.train(was_training)
    if not got:
        raise UnsupportedModel(refusal(type(model).__name__, "", f"submodule '{path}' is never called by forward"))
    return sub, tuple(got[0])
