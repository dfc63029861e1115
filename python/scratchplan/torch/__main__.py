"""``python3 -m scratchplan.torch MODULE:ATTR --input 1,3,224,224[:dtype] [--dtype fp16] -o model.program.json``

Builds the model (``MODULE:ATTR`` is a ``torch.nn.Module`` instance, class or factory called with
``None`` for every ``weights*`` parameter, so nothing is downloaded), traces it on meta tensors
with inputs of the given shapes (float32 unless a dtype follows: ``2,16:int64`` for token ids)
and writes the program JSON (``-o -`` or no ``-o``: standard output; then ``scratchplan plan
model.program.json``). ``--report`` prints the op-by-op mapping to stderr. Bad input: one line,
exit 2.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys


def _fail(msg: str) -> "None":
    print(f"scratchplan.torch: {msg}", file=sys.stderr)
    sys.exit(2)


# --input SHAPE[:DTYPE]: token ids for embeddings are integers, masks are bool.
_INPUT_DTYPES = {"float32": "float32", "fp32": "float32", "float": "float32", "float16": "float16", "fp16": "float16",
                 "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16", "float64": "float64",
                 "double": "float64", "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
                 "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def _input(text: str):
    """``2,16``, ``2,16:int64`` or ``1:int64=200`` -> (dims, torch dtype name, value or None)."""
    shape, _, dt = text.partition(":")
    dt, eq, value_text = dt.partition("=")
    try:
        dims = [int(x) for x in shape.split(",")]
    except ValueError:
        dims = []
    if not dims or any(d < 0 for d in dims):
        _fail(f"--input {text!r}: expected sizes separated by commas, e.g. 1,3,224,224, 2,16:int64 or 1:int64=200")
    if dt and dt not in _INPUT_DTYPES:
        _fail(f"--input {text!r}: unknown dtype {dt!r}; expected one of {', '.join(sorted(set(_INPUT_DTYPES)))}")
    dtype = _INPUT_DTYPES[dt or "float32"]
    value = None
    if eq:
        # A value known at trace time (lengths): integer and bool inputs only; floating inputs
        # are signals, whose values a plan must not depend on.
        if dtype.startswith(("float", "bfloat")):
            _fail(f"--input {text!r}: a value (=N) is for integer or bool inputs (lengths, counts), not {dtype}")
        try:
            value = int({"true": "1", "false": "0"}.get(value_text.lower(), value_text))
        except ValueError:
            _fail(f"--input {text!r}: expected an integer value after '=', e.g. 1:int64=200")
    return dims, dtype, value


def _call(text: str):
    """``factory(k=v, ...)`` -> (name, keyword arguments): Python literals only (ast.literal_eval)."""
    import ast
    name, _, rest = text.partition("(")
    if not rest:
        return text, {}
    try:
        call = ast.parse(text, mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            raise ValueError("positional arguments")
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        if len(kwargs) != len(call.keywords):
            raise ValueError("**kwargs")
    except (SyntaxError, ValueError) as e:
        _fail(f"{text!r}: expected ATTR or ATTR(name=literal, ...), e.g. conv_tasnet_base(num_sources=2) ({e})")
    return name.strip(), kwargs


def _no_weights(factory) -> dict:
    """None for every ``weights*`` parameter of a factory (torchvision's ``weights``,
    ``weights_backbone``, ...): the structure is all a plan needs, and a default of pretrained
    weights would download them (offline: a failure)."""
    import inspect
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    return {k: None for k, p in params.items() if k.startswith("weights")
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


# Plain text for --help (the module docstring is reStructuredText for the docs).
_DESCRIPTION = "Trace a PyTorch model on meta tensors and write its scratchplan program JSON."
_EPILOG = ("MODEL names a torch.nn.Module instance, class or factory, called with None for every weights* "
           "parameter (nothing is downloaded); the inputs are tensors of the given shapes, float32 unless a dtype "
           "follows (2,16:int64 for token ids); an integer input may carry a value known at trace time "
           "(1:int64=200: lengths filled with 200; the trace is specialized where Python reads it). "
           "ATTR(name=literal, ...) passes keyword arguments to the factory. -o - writes the program to stdout. "
           "Then: scratchplan plan "
           "model.program.json. Bad input: one line on stderr, exit 2.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m scratchplan.torch", description=_DESCRIPTION, epilog=_EPILOG)
    ap.add_argument("model", metavar="MODEL", help="MODULE:ATTR or MODULE:ATTR(name=literal, ...), e.g. "
                    "torchvision.models:vit_b_16 or 'torchaudio.models:hdemucs_low(sources=[\"bass\", \"vocals\"])'")
    ap.add_argument("--input", action="append", required=True, help="input shape[:dtype[=value]], e.g. 1,3,224,224, "
                    "2,16:int64, or 1:int64=200 (lengths: a tensor filled with a value known at trace time); default "
                    "float32; repeat per input")
    ap.add_argument("--dtype", default=None, help="fp16, bf16 or fp32 for every floating tensor")
    ap.add_argument("--name", default=None, help="program name")
    ap.add_argument("--submodule", default=None, metavar="PATH",
                    help="convert only this submodule (e.g. backbone), with the inputs the model passes it")
    ap.add_argument("-o", "--output", default=None, help="program JSON path (default or -: stdout)")
    ap.add_argument("--report", action="store_true", help="print the op-by-op mapping report to stderr")
    a = ap.parse_args(argv)
    if ":" not in a.model:
        _fail(f"{a.model!r}: expected MODULE:ATTR, e.g. torchvision.models:vit_b_16")
    mod_name, attr = a.model.split(":", 1)
    attr, call_kwargs = _call(attr)
    shapes = [_input(s) for s in a.input]
    if a.output == "-":  # standard output, as for every file argument of scratchplan
        a.output = None
    if a.output and os.path.isdir(a.output):
        _fail(f"-o {a.output}: is a directory")
    import torch
    from . import to_program
    from .._common import BadInput
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:  # noqa: BLE001
        _fail(f"{a.model}: cannot import {mod_name}: {e}")
    obj = getattr(mod, attr, None)
    if obj is None:
        _fail(f"{a.model}: module {mod_name} has no attribute {attr!r}")
    try:
        model = obj if isinstance(obj, torch.nn.Module) else obj(**{**_no_weights(obj), **call_kwargs})
    except Exception as e:  # noqa: BLE001
        _fail(f"{a.model}: building the model failed: {type(e).__name__}: {e}")
    if not isinstance(model, torch.nn.Module):
        _fail(f"{a.model}: expected a torch.nn.Module, got {type(model).__name__}")
    try:
        # An input with a value is a real tensor (its value known at trace time); the others are
        # meta tensors: shapes only, no memory.
        inputs = tuple(torch.empty(s, dtype=getattr(torch, dt), device="meta") if v is None
                       else torch.full(s, v, dtype=getattr(torch, dt)) for s, dt, v in shapes)
        name = a.name or (f"{attr}.{a.submodule}" if a.submodule else attr)
        program, report = to_program(model, inputs, dtype=a.dtype, name=name, submodule=a.submodule)
    except BadInput as e:
        _fail(str(e))
    text = json.dumps(program, indent=1) + "\n"
    if a.output:
        tmp = a.output + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, a.output)
        except OSError as e:
            _fail(f"-o {a.output}: {e.strerror}")
    else:
        sys.stdout.write(text)
    c = report.counts
    print(f"{program['name']}: {len(report.rows)} ATen ops: {c['mapped']} mapped, {c['folded']} folded, "
          f"{c['opaque']} opaque ({100 * report.mapped_fraction:.1f}% of compute ops mapped); "
          f"{len(program['ops'])} program ops", file=sys.stderr)
    for line in report.specializations:  # the trace is specialized to values read in Python
        print(f"  specialized: {line}", file=sys.stderr)
    if a.report:
        print(report.text(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
