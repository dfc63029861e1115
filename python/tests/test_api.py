"""The public API is documented and typed: every public function and class of every submodule
has a docstring, and the type stubs (*.pyi beside each module) declare every public name with the
same parameters as the implementation."""
import ast
import inspect
import os
import sys

import pytest

import scratchplan as sp

PKG = os.path.dirname(sp.__file__)
MODULES = {"alloc": sp.alloc, "layout": sp.layout, "lx": sp.lx, "mlsys": sp.mlsys, "nki": sp.nki,
           "program": sp.program, "spyre": sp.spyre, "workdiv": sp.workdiv}


def stub_of(name):
    path = os.path.join(PKG, name + ".pyi")
    if not os.path.exists(path):
        path = os.path.join(PKG, name, "__init__.pyi")
    with open(path) as f:
        return ast.parse(f.read())


def stub_functions(tree):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            out[node.name] = [x.arg for x in a.posonlyargs + a.args] + [x.arg for x in a.kwonlyargs]
        elif isinstance(node, ast.ClassDef):
            out[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return out


def public(mod):
    return [n for n in mod.__all__ if not n.startswith("_")]


def has_stub(obj):
    """Names re-exported from a module that has no stub of its own (e.g. a front end added later
    with its own typing) are that module's business."""
    m = sys.modules.get(getattr(obj, "__module__", ""), None)
    f = getattr(m, "__file__", None)
    return f is not None and os.path.exists(os.path.splitext(f)[0] + ".pyi")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_public_name_is_documented(name):
    mod = MODULES[name]
    assert mod.__doc__
    for n in public(mod):
        obj = getattr(mod, n)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__, f"{name}.{n} has no docstring"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_stubs_match_the_implementation(name):
    mod = MODULES[name]
    stubs = stub_functions(stub_of(name))
    for n in public(mod):
        obj = getattr(mod, n)
        if not has_stub(obj):
            continue
        if inspect.isfunction(obj):
            assert n in stubs, f"{name}.{n} missing from the stub"
            params = [p.name for p in inspect.signature(obj).parameters.values()]
            assert stubs[n] == params, (name, n)
        elif inspect.isclass(obj):
            assert n in stubs, f"{name}.{n} missing from the stub"
            methods = {m for m, v in vars(obj).items() if not m.startswith("_") and callable(getattr(obj, m, None))}
            props = {m for m, v in vars(obj).items() if isinstance(v, property)}
            assert methods | props <= stubs[n] | {"_repr_svg_"}, (name, n, (methods | props) - stubs[n])


def test_package_stub_lists_the_submodules():
    with open(os.path.join(PKG, "__init__.pyi")) as f:
        text = f.read()
    for n in list(MODULES) + ["BadInput"]:
        assert n in text
    assert os.path.exists(os.path.join(PKG, "py.typed"))
    assert issubclass(sp.BadInput, ValueError)
