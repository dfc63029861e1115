"""Tracing for the PyTorch front end: ``make_fx`` on meta tensors (no arithmetic, no weight
memory), every FX node stamped with the module path it ran in (docs/torch.md, "Tracing")."""
from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
import sysconfig
from typing import Any, Dict, List, Optional, Sequence

import torch

from .._common import BadInput
from . import _meta_kernels
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


def _short(path: str, line: int) -> str:
    """``file:line``, relative to the working directory or to site-packages (torchvision/...)."""
    rel = os.path.relpath(path)
    if rel.startswith(".."):
        m = re.search(r"[/\\](?:site|dist)-packages[/\\](.*)$", path)
        rel = m.group(1) if m else os.path.basename(path)
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
    if isinstance(e, torch.fx.proxy.TraceError) or "get value out of a tracing tensor" in msg \
            or "data-dependent" in msg or "cannot be used as inputs to control flow" in msg:
        if re.match(r"\s*(if|elif|while|assert)\b", source) or re.search(r"\bif\b.*\belse\b", source):
            return "data-dependent control flow (if on a tensor value)"
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


class _FactoriesOnMeta(torch.overrides.TorchFunctionMode):
    """Tensors a forward creates without a device (``torch.zeros(2, 64)``, ``torch.arange(n)``) are
    made on meta like everything else traced; on the CPU they met meta tensors in the first op and
    the trace failed (a state initialized in forward, position ids). Used for a second trace only
    when the first one failed so (see trace)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _FACTORIES and kwargs.get("device") is None:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


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
    # Recurrent modules run one fused kernel over weights cached at construction (_flat_weights),
    # which the meta-tensor swap below does not reach: name them instead of a device error.
    for path, mod in model.named_modules():
        if isinstance(mod, torch.nn.RNNBase):
            raise UnsupportedModel(f"module '{path or type(model).__name__}' ({type(mod).__name__}): recurrent modules "
                                   "(RNN, LSTM, GRU) are not supported; unroll the cell (nn.LSTMCell etc.) over time steps")
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    names = list(state)
    metas = [torch.empty(v.shape, dtype=v.dtype, device="meta") for v in state.values()]
    in_metas = [torch.empty(x.shape, dtype=x.dtype, device="meta") for x in inputs]
    paths = _module_paths(model)
    stack: List[str] = []

    def pre(mod, args):
        stack.append(paths.get(id(mod), stack[-1] if stack else ""))

    def post(mod, args, out):
        if stack:
            stack.pop()

    h1 = torch.nn.modules.module.register_module_forward_pre_hook(pre)
    h2 = torch.nn.modules.module.register_module_forward_hook(post)
    orig = torch.fx.Graph.create_node

    def create_node(self, *a, **k):
        n = orig(self, *a, **k)
        n.meta["sp_module"] = stack[-1] if stack else ""
        n.meta["sp_where"] = _caller()  # the model's file:line, for refusals
        return n

    on_meta = [False]  # second attempt: factories without a device make meta tensors

    def f(*flat):
        args = list(leaves)
        for i, x in zip(tensor_at, flat[len(names):]):
            args[i] = x
        with _FactoriesOnMeta() if on_meta[0] else contextlib.nullcontext():
            return stateless.functional_call(model, dict(zip(names, flat[:len(names)])), tuple(tree_unflatten(args, spec)))

    torch.fx.Graph.create_node = create_node
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
        h1.remove()
        h2.remove()
        model.train(was_training)
    return g, names, metas + in_metas
