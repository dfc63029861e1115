"""Loading and launching kernels: the stand-ins in `sys.modules` while a trace runs, the kernel
file executed as a module, its arguments bound, and the recorded trace written as kernel JSON."""
from __future__ import annotations

import ast
import json
import math
import os
import re
import sys
import types

from . import context as _ctx
from .context import TRACE_SECONDS, Timeout, TraceError, _State, _Watchdog
from .dtypes import _ALIASES, _DTYPES, _dtype_name
from .symbolic import _ST_AR
from .tensors import Tensor, _Alloc, _register, _unique
from .costs import _finish_cost
from .loops import _Branch, _RangeRewriter, _Speculative, _sp_range
from .calls import _Module
from .modules import _Kernel, _build_modules
from .stack import StackAllocator


_MODULE_NAMES = ["neuronxcc", "neuronxcc.nki", "neuronxcc.nki.language", "neuronxcc.nki.isa",
                 "neuronxcc.nki.compiler", "neuronxcc.nki.typing", "neuronxcc.nki.isa.constants",
                 "nki", "nki.language", "nki.isa", "nki.compiler", "nki.typing", "nki.isa.constants"]


class _Installed:
    """Stand-ins in sys.modules for the duration of a trace; whatever was there is restored."""

    def __init__(self, mods, kernel_module=None):
        self.mods = mods
        self.kernel_module = kernel_module
        self.kernel_module_name = kernel_module.__name__ if kernel_module is not None else None
        self.saved = {}

    def __enter__(self):
        root_old = _Module("neuronxcc")
        root_old.nki = self.mods[""]
        table = {"neuronxcc": root_old}
        if self.kernel_module is not None:  # @dataclass looks its class's module up in sys.modules
            table[self.kernel_module.__name__] = self.kernel_module
        for ns in ("neuronxcc.nki", "nki"):
            for k, m in self.mods.items():
                table[ns + ("." + k if k else "")] = _NsProxy(m, ns) if ns == "nki" else m
        for name, m in table.items():
            if name != self.kernel_module_name:
                object.__setattr__(m, "__path__", [])  # packages: `neuronxcc.nki._private.x` resolves to a stand-in
            self.saved[name] = sys.modules.get(name)
            sys.modules[name] = m
        return self

    def __exit__(self, *a):
        for name, m in self.saved.items():
            if m is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = m
        return False


class _NsProxy(types.ModuleType):
    """The new namespace (`import nki`): same stand-ins; importing it switches ranges to Python
    ranges (NKI 0.2+ semantics)."""

    def __init__(self, mod, ns):
        super().__init__(mod.__name__.replace("neuronxcc.nki", "nki"))
        object.__setattr__(self, "_mod", mod)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if _ctx.ST is not None:
            _ctx.ST.uses_new_api = True
            _ctx.ST.unroll_all = True
        v = getattr(self._mod, name)
        if isinstance(v, _Module):
            v = _NsProxy(v, "nki")
        object.__setattr__(self, name, v)  # later look-ups skip __getattr__ (an unrolled kernel makes millions)
        return v


class _OldMarker:
    pass


def stand_ins():
    """Context manager with the stand-in NKI modules installed, so that a file of kernels can be
    imported (``with stand_ins(): import my_kernels``) and ``trace(my_kernels.add[2, 2], ...)``
    called on its objects; each trace re-reads the kernel's file."""
    return _Installed(_build_modules(_complete(None)))


_SPEC = r"([0-9]+(?:x[0-9]+)*)\s*(?::\s*([A-Za-z0-9_]+))?"


def parse_input(text):
    """'q=1x128x4096:bf16' -> ('q', (1, 128, 4096), 'bfloat16'); a list parameter (one HBM tensor per
    entry, as kernels that take per-layer weights do) 'w=[512x256:bf16, 512x256:bf16]' ->
    ('w', [((512, 256), 'bfloat16'), ((512, 256), 'bfloat16')], None)."""
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*\[(.*)\]\s*", text)
    if m:
        items = [x for x in m.group(2).split(",")]
        if not items or any(not x.strip() for x in items):
            raise TraceError(f"--input {text!r}: expected NAME=[SPEC, SPEC, ...] with SPEC D0xD1x...:DTYPE")
        return m.group(1), [_parse_spec(x.strip(), text) for x in items], None
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*" + _SPEC + r"\s*", text)
    if not m:
        raise TraceError(f"--input {text!r}: expected NAME=D0xD1x...:DTYPE (e.g. q=1x128x4096:bf16) "
                         "or NAME=[SPEC, SPEC, ...]")
    shape, n = _parse_spec(m.group(2) + (":" + m.group(3) if m.group(3) else ""), text)
    return m.group(1), shape, n


def _parse_spec(spec, text):
    m = re.fullmatch(_SPEC, spec)
    if not m:
        raise TraceError(f"--input {text!r}: {spec!r} is not D0xD1x...:DTYPE (e.g. 1x128x4096:bf16)")
    shape = tuple(int(x) for x in m.group(1).split("x"))
    if any(s <= 0 for s in shape):
        raise TraceError(f"--input {text!r}: dimensions must be positive")
    dt = m.group(2) or "float32"
    n = _ALIASES.get(dt, dt)
    if n not in _DTYPES or n == "bool_":
        raise TraceError(f"--input {text!r}: unknown dtype {dt!r}")
    return shape, n


_COMPILED = {}  # (path, source text) -> the rewritten module code (the rewrite depends on nothing else)


def _load_source(path):
    try:
        with open(path, encoding="utf-8") as f:
            src = f.read()
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror}") from None
    code = _COMPILED.get((path, src))
    if code is None:
        code = _compile_source(path, src)
        if len(_COMPILED) >= 16:  # a few kernels traced again and again (a benchmark, a sweep of shapes)
            _COMPILED.clear()
        _COMPILED[(path, src)] = code
    return src, code


def _compile_source(path, src):
    try:
        tree = ast.parse(src, filename=path)
    except SyntaxError as e:
        raise TraceError(f"{os.path.basename(path)}:{e.lineno}: syntax error: {e.msg}") from None
    tree = _RangeRewriter().visit(tree)
    _drop_module_launches(tree)
    ast.fix_missing_locations(tree)
    try:
        return compile(tree, path, "exec")
    except SyntaxError as e:  # what the parser lets through and the compiler does not ('return' outside a function)
        msg = f"{os.path.basename(path)}:{e.lineno}: syntax error: {e.msg}"
    raise TraceError(msg)


def _drop_module_launches(tree):
    """A kernel file whose module code launches a kernel (`k[0](q, k, v)` on NumPy arrays, then a
    check against a reference) is its own test driver: from that statement on, module-level code
    other than definitions and imports is not run (the launch is the trace's job)."""
    kernels = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.decorator_list}

    def launches(stmt):
        for c in ast.walk(stmt):
            if isinstance(c, ast.Call):
                f = c.func.value if isinstance(c.func, ast.Subscript) else c.func
                if isinstance(f, ast.Name) and f.id in kernels:
                    return True
        return False

    keep, skipping = [], False
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            skipping = skipping or launches(stmt)
            if skipping:
                continue
        keep.append(stmt)
    tree.body = keep


class _Absent(types.ModuleType):
    """Stand-in for a module the kernel imports but the trace does not need (torch, torch_xla, a
    test dependency that is not installed, neuronxcc's private helpers): any attribute is another
    stand-in; using one inside the traced kernel fails naming it."""

    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _AbsentValue(f"{self.__name__}.{name}")


class _AbsentValue:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _AbsentValue(f"{self._name}.{name}")

    def __call__(self, *a, **kw):
        if len(a) == 1 and callable(a[0]) and not kw:
            return a[0]  # used as a decorator: the function stays
        if _ctx.ST is not None and _ctx.ST.running:
            raise TraceError(f"{_ctx.ST.label}:{_site_line()}: {self._name} is outside what the tracer stands in "
                             "(an import the kernel does not need at trace time)")
        return _AbsentValue(f"{self._name}(...)")

    def __getitem__(self, k):
        return self

    def __mro_entries__(self, bases):
        return (object,)


def _site_line():
    from .context import _site
    return _site()[0]


def _probing():
    """True inside `importlib.util.find_spec`: code that asks whether a module exists (nkilib's
    `__init__` does, to choose between its standalone and bundled copies) must hear the truth, or
    it imports a stand-in in place of the real package."""
    f = sys._getframe(2)
    for _ in range(12):
        if f is None:
            return False
        if f.f_code.co_name == "find_spec" and f.f_code.co_filename.endswith("importlib.util>"):
            return True
        f = f.f_back
    return False


class _AbsentFinder:
    """Meta path finder: `torch`/`torch_xla` always (imported by kernels for their test drivers,
    slow or absent here), and, tried last, any other module that cannot be found."""

    def __init__(self, always):
        self.always = always

    def find_spec(self, name, path=None, target=None):
        import importlib.machinery
        root = name.split(".")[0]
        if self.always and root not in ("torch", "torch_xla") and not name.startswith("neuronxcc.nki."):
            return None
        if not self.always and _probing():
            return None  # `importlib.util.find_spec` asks whether it exists: it does not
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        return _Absent(spec.name)

    def exec_module(self, module):
        pass


def _input_spec(x, name):
    """An input: (shape, dtype) tuple, 'AxB:dtype' text, or anything with .shape/.dtype."""
    if isinstance(x, str):
        if not re.fullmatch(r"\s*[0-9]+(?:x[0-9]+)*\s*(?::\s*\w+)?\s*", x):
            return None  # a string argument, passed through
        return _parse_spec(x.strip(), f"{name}={x}")
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], (tuple, list)):
        return tuple(int(s) for s in x[0]), _dtype_name(x[1], "input dtype")
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, type):  # np.float32 is a dtype argument
        dt = x.dtype
        name_ = str(dt).replace("torch.", "")
        return tuple(int(s) for s in x.shape), _dtype_name(_ALIASES.get(name_, name_), "input dtype")
    return None


def trace(kernel, *inputs, grid=None, hardware=None, cycle_model=None, name=None, time_limit=TRACE_SECONDS,
          lnc=1, core_id=0, _stated_limit=None, **kwargs):
    """Traces ``kernel`` (a function defined in a file, a @nki.jit object, or ``"file.py[:func]"``)
    on HBM inputs given as shapes and dtypes (``((1, 128, 4096), "bf16")``, ``"1x128x4096:bf16"``
    or objects with ``.shape``/``.dtype``); other arguments are passed through as Python values.
    Returns the kernel model (a dict in the JSON format of docs/nki.md). ``grid`` (or
    ``kernel[g]``) launches SPMD instances, traced as one symbolic instance inside a loop per grid
    dim. ``hardware`` (a dict or a path) sets the hardware and its cycle model. ``time_limit``
    (seconds, default 60; None: unbounded) bounds the whole trace, the kernel's module code
    included: past it the trace stops with a TraceError naming the line it was running. ``lnc``
    (logical cores, 1 or 2) and ``core_id``: the launch is traced as that one core sees it
    (``nl.program_id(0)`` is core_id, ``nl.num_programs()`` is lnc); each core has its own SBUF and
    PSUM, so each core's trace is checked on its own."""
    path, fname = None, None
    if isinstance(kernel, (str, os.PathLike)):
        s = os.fspath(kernel)
        m = re.fullmatch(r"(.*?\.py)(?::([A-Za-z_]\w*))?", s)
        if not m:
            raise TraceError(f"{s}: expected FILE.py or FILE.py:FUNCTION")
        path, fname = m.group(1), m.group(2)
    else:
        if isinstance(kernel, _Kernel) or hasattr(kernel, "func") and hasattr(kernel, "grid"):
            if grid is None and kernel.grid:
                grid = kernel.grid
            kernel = kernel.func
        func = getattr(kernel, "__wrapped__", kernel)
        code = getattr(func, "__code__", None)
        if code is None:
            raise TraceError(f"<kernel>: expected a kernel function or FILE.py[:FUNCTION], got {type(kernel).__name__}")
        path, fname = code.co_filename, func.__name__
    if time_limit is not None:
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not time_limit > 0 \
                or time_limit == float("inf"):
            raise TraceError(f"time_limit: expected a positive number of seconds or None, got {time_limit!r}")
    if isinstance(lnc, bool) or not isinstance(lnc, int) or not 1 <= lnc <= 8:
        raise TraceError(f"lnc: expected 1 to 8 logical cores, got {lnc!r}")
    if isinstance(core_id, bool) or not isinstance(core_id, int) or not 0 <= core_id < lnc:
        raise TraceError(f"core_id: expected 0 to {lnc - 1}, got {core_id!r}")
    for x in inputs:
        _check_shape_text(x)
    for n, x in kwargs.items():
        _check_shape_text(x, n)
    path = os.path.abspath(path)
    wd = _Watchdog(time_limit)
    import contextlib
    import gc
    gc_was = gc.isenabled()
    gc.disable()  # a trace allocates millions of small objects and frees them at the end: cyclic GC passes only cost (-25%)
    try:
        # The kernel's own prints go to stderr, as in the CLI (stdout may carry the caller's results).
        with wd, contextlib.redirect_stdout(sys.stderr):
            return _trace_path(path, fname, inputs, kwargs, grid, hardware, cycle_model, name, wd, (lnc, core_id))
    except Timeout as e:
        line = _kernel_line(e.__traceback__, path)
        raise TraceError(f"{os.path.basename(path)}:{line}: tracing took longer than the time limit of "
                         f"{_stated_limit or time_limit:g} s (a loop that never ends?)") from None
    finally:
        if gc_was:
            gc.enable()


def _input_list_specs(x, name):
    """A list whose entries are all input specs (or None, at least one spec): one HBM input each."""
    if not isinstance(x, list) or not x:
        return None
    specs = [None if v is None else _input_spec(v, f"{name}[{i}]") for i, v in enumerate(x)]
    if any(sp is None and v is not None for sp, v in zip(specs, x)) or all(sp is None for sp in specs):
        return None
    return specs


def _check_shape_text(x, name=None):
    """A string that starts like a shape ('128x512:bf16', '128xx512') is meant as one: malformed,
    it is refused as the CLI's --input is, instead of reaching the kernel as a string."""
    if isinstance(x, str) and re.match(r"\s*[0-9]+\s*(x|:)", x) and _input_spec(x, name or "input") is None:
        raise TraceError(f"{'argument ' + name if name else 'input'} {x!r}: expected a shape D0xD1x...:DTYPE "
                         "(e.g. '1x128x4096:bf16') or a (shape, dtype) tuple")


def _kernel_line(tb, path):
    line = 0
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


HARDWARE_DEFAULTS = None  # the C++ default description, when the CLI hands it over (--hardware-defaults)


def _default_hardware():
    """The C++ description of the default core (src/nki builtin_hardware): from the CLI, else the extension."""
    if HARDWARE_DEFAULTS is not None:
        return HARDWARE_DEFAULTS
    try:
        from ..._core import nki_builtin_hardware
    except ImportError:
        raise TraceError("tracer: no hardware description: give --hardware-defaults (the CLI does) or run with the "
                         "scratchplan extension importable") from None
    return json.loads(nki_builtin_hardware("trn1"))


def _complete(hw):
    """The default description with what the caller gave (a built-in name's, a file's, a dict's) over it."""
    base = _default_hardware()
    full = dict(base, cycle_model=dict(base["cycle_model"]))
    if isinstance(hw, dict):
        full.update({k: v for k, v in hw.items() if k not in ("cycle_model", "comment")})
        if isinstance(hw.get("cycle_model"), dict):
            full["cycle_model"].update(hw["cycle_model"])
    return full


_BUILTIN_HW = ("trn1", "trn2", "neuroncore-v2", "neuroncore-v3", "inf2", "v2", "v3")


def _hardware_doc(hardware):
    if hardware is None:
        return None
    if isinstance(hardware, str) and hardware in _BUILTIN_HW and not os.path.exists(hardware):
        try:  # the C++ description (one source for the checker and the stand-ins)
            from ..._core import nki_builtin_hardware
        except ImportError:
            raise TraceError(f"hardware {hardware!r}: built-in names need the scratchplan package; "
                             "give a hardware JSON file") from None
        return json.loads(nki_builtin_hardware(hardware))
    if isinstance(hardware, str) and hardware.lstrip().startswith("{"):  # the CLI's --hardware-json
        try:
            return json.loads(hardware)
        except ValueError as e:
            raise TraceError(f"--hardware-json: {e}") from None
    if isinstance(hardware, (str, os.PathLike)):
        try:
            with open(hardware, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise TraceError(f"{hardware}: cannot read the hardware file: {e}") from None
    return dict(hardware)


def _package_of(path):
    """('a.b', folder above a) for a file in folders a/b that have __init__.py; ('', '') otherwise."""
    parts, d = [], os.path.dirname(path)
    while os.path.isfile(os.path.join(d, "__init__.py")) and os.path.dirname(d) != d:
        parts.insert(0, os.path.basename(d))
        d = os.path.dirname(d)
    return (".".join(parts), d) if parts else ("", "")


def _trace_path(path, fname, inputs, kwargs, grid, hardware, cycle_model, name, wd, cores=(1, 0)):
    hw = _hardware_doc(hardware)
    full = _complete(hw)
    cm = dict(full["cycle_model"])
    if cycle_model:
        for k in cycle_model:
            if k not in cm:
                raise TraceError(f"cycle_model: unknown entry {k!r} (known: {', '.join(cm)})")
        cm.update(cycle_model)
    if _ctx.ST is not None:
        raise TraceError("trace() is not re-entrant")
    label = os.path.basename(path)
    src, code = _load_source(path)
    mods = _build_modules(full)
    # Imports resolve like `python FILE` (the kernel's folder) and `python -m` (the current directory).
    saved_path, saved_meta = list(sys.path), list(sys.meta_path)
    saved_mods = set(sys.modules)
    # A file inside a package (folders with __init__.py) also imports like a module of it, so
    # `from .helpers import f` resolves: the folder above the top package goes on the path.
    package, top = _package_of(path)
    saved_path_heads = [os.path.dirname(path) + os.sep, os.getcwd() + os.sep, top + os.sep]
    if package:  # its folder goes last: a module of the package named like a standard one (copy.py) must not shadow it
        sys.path[:0] = [top, os.getcwd()]
        sys.path.append(os.path.dirname(path))
    else:
        sys.path[:0] = [os.path.dirname(path), os.getcwd()]
    sys.meta_path.insert(0, _AbsentFinder(True))
    sys.meta_path.append(_AbsentFinder(False))
    st = _State(path, cm, full)
    st.lnc, st.core = cores
    if package:
        st.root, st.root_pkg = os.path.abspath(top), True
    _ctx.ST = st
    _ST_AR.clear()
    saved_logging = _sdk_logging()
    try:
        kmod = types.ModuleType("__sp_kernel__")
        with _Installed(mods, kmod):
            g = kmod.__dict__
            if package:
                g["__package__"] = package
            g.update({"__file__": path, "__sp_range__": _sp_range, "__sp_if__": _Branch,
                      "__sp_spec__": _Speculative,
                      "__builtins__": __builtins__})
            try:
                exec(code, g)
            except TraceError:
                raise
            except SystemExit as e:
                raise TraceError(_exited(e, label, path, "while loading the kernel file")) from None
            except Exception as e:
                raise TraceError(_located(e, label, path, "while loading the kernel file")) from None
            for n, v in list(kwargs.items()):
                if isinstance(v, _Expr):
                    kwargs[n] = v.evaluate(g)
            cands = {k: v for k, v in g.items() if isinstance(v, _Kernel)}
            if any(not v.sub for v in cands.values()):  # sub-kernels (mode="trace") are not entry points
                cands = {k: v for k, v in cands.items() if not v.sub}
            if fname is None:
                if len(cands) != 1:
                    raise TraceError(f"{label}: {'no' if not cands else 'several'} @nki.jit kernels "
                                     f"({', '.join(sorted(cands)) or 'none'}); name one as {label}:FUNCTION")
                fname = next(iter(cands))
            obj = g.get(fname)
            if obj is None:
                raise TraceError(f"{label}: no function {fname!r} in the file")
            kgrid = ()
            if getattr(obj, "__sp_stack_allocator__", False):
                st.stack_alloc = StackAllocator(full)
            if isinstance(obj, _Kernel):
                kgrid = obj.grid
                obj = obj.func
            if not callable(obj):
                raise TraceError(f"{label}: {fname!r} is not a function")
            if grid is not None:
                kgrid = tuple(int(x) for x in (grid if isinstance(grid, (tuple, list)) else (grid,)))
            if any(x <= 0 for x in kgrid):
                raise TraceError(f"{label}: grid dims must be positive, got {list(kgrid)}")
            st.uses_old_api = not st.uses_new_api
            if _imports_new_namespace(src):
                st.unroll_all = True
                st.uses_new_api = True
                st.uses_old_api = False
            # kernel arguments
            import inspect
            sig = inspect.signature(obj)
            params = sig.parameters
            if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
                for n in kwargs:
                    if n not in params:
                        raise TraceError(f"{label}: {fname} has no parameter {n!r} (parameters: "
                                         f"{', '.join(params) or 'none'})")
            try:
                bound = sig.bind(*inputs, **kwargs)
            except TypeError as e:
                raise TraceError(f"{label}: arguments do not match {fname}{inspect.signature(obj)}: {e}") from None
            args = {}
            def hbm_input(pname, shape, dt):
                t = Tensor(_unique(pname), shape, dt, _Alloc("hbm", "input"), role="input",
                           source=f"{label}:{obj.__code__.co_firstlineno}")
                _register(t)
                return t

            for pname, val in bound.arguments.items():
                spec = _input_spec(val, pname)
                specs = _input_list_specs(val, pname) if spec is None else None
                if spec is not None:
                    args[pname] = hbm_input(pname, *spec)
                elif specs is not None:  # a list of tensors: w_0, w_1, ... (None entries stay None)
                    args[pname] = [None if sp is None else hbm_input(f"{pname}_{i}", *sp) for i, sp in enumerate(specs)]
                else:
                    args[pname] = val
            # SPMD: one symbolic instance inside a loop per grid dim
            outer = []
            for gi, gd in enumerate(kgrid):
                lid = len(st.loops)
                st.loops.append((f"pid{gi}", gd, "spmd"))
                node = {"loop": f"pid{gi}", "trip": gd, "kind": "spmd", "body": []}
                st.stack[-1].append(node)
                st.stack.append(node["body"])
                st.loop_scope.append(lid)
                st.spmd.append(lid)
                outer.append(node)
            try:
                st.running = True
                ret = obj(**args)
            except TraceError:
                raise
            except RecursionError:
                raise TraceError(f"{label}: recursion too deep while tracing") from None
            except SystemExit as e:
                raise TraceError(_exited(e, label, path, f"while tracing {fname}")) from None
            except AssertionError as e:
                if "out of memory" in str(e).lower():  # the kernel's own allocator (kernel_assert) overflowed
                    raise TraceError(_located(e, label, path, f"while tracing {fname}").replace(
                        ": AssertionError: ", ": allocation violation: the kernel's allocator ran out of memory: ", 1)) from None
                raise TraceError(_located(e, label, path, f"while tracing {fname}")) from None
            except Exception as e:
                raise TraceError(_located(e, label, path, f"while tracing {fname}")) from None
            # A result never stored anywhere still executes and needs a tile of its own.
            for p in st.pendings:
                if p.tensor is None and "_cost" in p.instr:
                    p.materialize()
            for t in _returned_tensors(ret):
                t = getattr(t, "_alias", t)  # a reshape of the output names the tensor it views
                if t.buffer == "hbm" and t.role != "input":
                    t.role = "output"
    finally:
        wd.disarm()
        _restore_logging(saved_logging)
        _ctx.ST = None
        sys.path[:], sys.meta_path[:] = saved_path, saved_meta
        for m in set(sys.modules) - saved_mods:  # the kernel's helpers and stand-ins go with the trace
            f = getattr(sys.modules.get(m), "__file__", None) or ""
            if isinstance(sys.modules.get(m), _Absent) or f.startswith(tuple(saved_path_heads)):
                sys.modules.pop(m, None)
    return _to_json(st, hw, name or f"{label}:{fname}")


def _imports_new_namespace(src):
    return bool(re.search(r"^\s*(import\s+nki\b|from\s+nki\b)", src, re.M))


def _returned_tensors(ret):
    if isinstance(ret, Tensor):
        return [ret]
    if isinstance(ret, (tuple, list)):
        return [t for r in ret for t in _returned_tensors(r)]
    return []


def _sdk_logging():
    """Import-time names the Neuron SDK adds that kernel files rely on: `logging.OFF` (course
    kernels call `logging.disable(logging.OFF)` at module level). Present for the trace only;
    the logging state a kernel changes is put back afterwards."""
    import logging
    saved = (getattr(logging, "OFF", _NOTHING), logging.root.manager.disable)
    if saved[0] is _NOTHING:
        logging.OFF = logging.CRITICAL + 1  # above every standard level: disable(OFF) silences all
    return saved


_NOTHING = object()


def _restore_logging(saved):
    import logging
    if saved[0] is _NOTHING:
        logging.__dict__.pop("OFF", None)
    logging.disable(saved[1])


def _exited(e, label, path, what):
    code = e.code
    return f"{label}:{_kernel_line(e.__traceback__, path)}: the kernel called sys.exit({'' if code is None else repr(code)}) ({what})"


def _located(e, label, path, what):
    tb = e.__traceback__
    line = None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"{label}:{line or 0}: {type(e).__name__}{': ' + msg if msg else ''} ({what})"


def _strip(body):
    out = []
    for n in body:
        if "loop" in n:
            n = dict(n)
            n.pop("source", None)
            lid = n.pop("_lid", None)
            n["body"] = _strip(n["body"])
            if lid in _ctx.ST.splits:
                n = _split_loop(n, _ctx.ST.splits[lid])
            out.append(n)
        else:
            if "_cost" in n:
                # a result nobody stored (e.g. nl.load(x) as a statement): it still executes
                _finish_cost(n, 1, 1)
            out.append(n if n.keys() <= _PUBLIC or not any(k[0] == "_" for k in n) else
                       {k: v for k, v in n.items() if k[0] != "_"})
    return out


_PUBLIC = {"name", "engine", "cost", "reads", "writes", "source", "when"}  # an instruction's keys, none private


def _split_loop(n, m):
    """Loop `i` whose index was taken % m or // m: loops `i_q` (ceil(trip/m)) and `i_r` (m), `i`
    replaced by `(m*i_q + i_r)` in every index and guard below, and, when m does not divide the
    trip, a guard skipping the iterations past its end."""
    name, trip = n["loop"], n["trip"]
    q, r = f"{name}_q", f"{name}_r"
    pat = re.compile(r"\b%s\b" % re.escape(name))
    rep = f"({m}*{q} + {r})"
    extra = [f"{trip - 1} - {m}*{q} - {r}"] if trip % m else []

    def expr(x):  # only indices and guards name loops
        return pat.sub(rep, x) if isinstance(x, str) else x

    def fix(x):
        if isinstance(x, list):
            return [fix(v) for v in x]
        if not isinstance(x, dict):
            return x
        d = dict(x)
        if "body" in x:
            d["body"] = fix(x["body"])
        if "block" in x:
            d["block"] = [expr(v) for v in x["block"]]
        for key in ("reads", "writes"):
            if key in x:
                d[key] = fix(x[key])
        if "engine" in x and ("when" in x or extra):
            d["when"] = [expr(v) for v in x.get("when", [])] + extra
        return d

    inner = {"loop": r, "trip": min(m, trip), "body": fix(n["body"])}
    outer = {"loop": q, "trip": -(-trip // m), "body": [inner]}
    if "kind" in n:
        inner["kind"] = outer["kind"] = n["kind"]
    return outer


def _to_json(st, hw, label):
    _ctx.ST = st
    try:
        body = _strip(st.body)
    finally:
        _ctx.ST = None
    tensors = []
    any_addressed = any(t.buffer != "hbm" and t.alloc.kind == "address" for t in st.tensors)
    # On-chip tensors of one shape, dtype and placement (a declaration repeated by an unrolled loop)
    # differ only by name and source: one template each, copied (its lists shared: the trace is read-only).
    same = {}
    for t in st.tensors:
        a = t.alloc
        key = None
        if t.buffer != "hbm":
            if a.kind == "address":
                key = (t.shape, t.nb, t.dt, t.buffer, a.kw["p"], a.kw["b"])
            elif a.kind == "auto":
                key = (t.shape, t.nb, t.dt, t.buffer, None, None)
            if key is not None:
                j = same.get(key)
                if j is not None:
                    j = j.copy()
                    j["name"] = t.name
                    j["source"] = t.source
                    tensors.append(j)
                    continue
        j = {"name": t.name, "buffer": t.buffer}
        if t.buffer == "hbm":
            j["role"] = "input" if t.role == "input" else "output" if t.role == "output" else \
                "scratch" if st.uses_new_api else "internal"  # the new API allows HBM working space
            if t.alloc.kind == "shared_hbm" and st.lnc > 1 and t.role != "input":
                j["shared"] = True  # the other logical cores see it (outputs too): one may write what this one reads
            j["blocks"] = []
            j["partitions"] = t.shape[0] if t.shape else 1
            j["free"] = list(t.shape[1:])
        else:
            nb, shape = t.nb, t.shape  # t.blocks, t.pdim and t.free, without the properties
            j["blocks"] = list(shape[:nb])
            j["partitions"] = shape[nb] if len(shape) > nb else 1
            j["free"] = list(shape[nb + 1:])
        j["dtype"] = t.dt
        j["source"] = t.source
        if t.buffer != "hbm":
            a = t.alloc
            if a.kind == "auto":
                j["alloc"] = {"kind": "auto"}
                if st.uses_new_api and any_addressed:
                    j["alloc"]["compiler_placed"] = True  # the compiler places it beside the address= tensors
            elif a.kind == "mod_alloc":
                j["alloc"] = {"kind": "mod_alloc", **a.kw}
                if a.buffer == "psum" and not j["alloc"].get("num_free_tiles"):
                    j["alloc"].pop("num_free_tiles", None)  # PSUM rotates banks; the model has no such key
            elif a.kind in ("func", "stack"):
                j["alloc"] = {"kind": "table", "tiles": t.table}
            elif a.kind == "address":
                n = max(1, math.prod(j["blocks"]))
                j["alloc"] = {"kind": "table", "tiles": [[a.kw["p"], a.kw["b"]]] * n}
                if t.buffer == "sbuf":  # the new API aligns an address= tile to its element size
                    j["alloc"]["align"] = t.itemsize
        tensors.append(j)
        if key is not None:
            same[key] = j
    k = {"format": "scratchplan-nki-kernel", "version": 1,
         "comment": f"traced from {label}" + (f" as logical core {st.core} of {st.lnc}" if st.lnc > 1 else "")}
    if hw is not None:
        k["hardware"] = hw
    if st.generic:
        k["modelled_generically"] = [{"call": c, "source": s} for c, s in sorted(st.generic.items())]
    k["tensors"] = tensors
    k["body"] = body
    return k


class _Expr:
    """An --arg value that is not a literal: a Python expression evaluated in the kernel module's
    namespace once its module code has run (`NormType.RMS_NORM`, `Cfg(bs=1)`, `nl.bfloat16`)."""

    def __init__(self, name, text):
        self.name, self.text = name, text

    def evaluate(self, g):
        try:
            code = compile(self.text, f"--arg {self.name}", "eval")
        except SyntaxError as e:
            raise TraceError(f"--arg {self.name}={self.text}: not a Python expression ({e.msg})") from None
        try:
            return eval(code, g)
        except TraceError:
            raise
        except Exception as e:
            msg = str(e).splitlines()[0] if str(e) else ""
            raise TraceError(f"--arg {self.name}={self.text}: {type(e).__name__}{': ' + msg if msg else ''} "
                             "(evaluated in the kernel module's namespace)") from None


def parse_arg(text):
    """--arg 'eps=1e-6' -> ('eps', 1e-06): a Python literal (int, float, bool, None, tuple, list,
    string) or a dtype name (`float32`, `nl.bfloat16`) at once; any other expression
    (`NormType.RMS_NORM`, `Cfg(bs=1, ...)`) is evaluated in the kernel module's namespace after
    its module code ran."""
    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=(.*)", text, re.S)
    if not m:
        raise TraceError(f"--arg {text!r}: expected NAME=EXPR (a Python expression, e.g. eps=1e-6, shape=(3,4), "
                         "norm=NormType.RMS_NORM)")
    name, value = m.group(1), m.group(2).strip()
    if not value:
        raise TraceError(f"--arg {text!r}: no expression after '='")
    dt = re.fullmatch(r"(?:(?:nl|np|numpy|nki\.language)\.)?([A-Za-z_]\w*)", value)
    if dt and value not in ("True", "False", "None"):
        n = _ALIASES.get(dt.group(1), dt.group(1))
        if n in _DTYPES:
            return name, _DTYPES[n][1]
        from .dtypes import _VARIANTS
        if dt.group(1) in _VARIANTS:
            return name, _VARIANTS[dt.group(1)]
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        compile(value, "--arg", "eval")
    except SyntaxError as e:
        raise TraceError(f"--arg {text!r}: {value!r} is not a Python expression ({e.msg})") from None
    return name, _Expr(name, value)


def trace_file(spec, inputs, grid=None, hardware=None, args=(), time_limit=TRACE_SECONDS, lnc=1, core_id=0,
               stated_limit=None):
    """The CLI's form: ``spec`` is FILE.py[:FUNCTION], ``inputs`` are 'name=AxB:dtype' strings
    and ``args`` 'name=literal' strings, bound to the kernel's parameters by name."""
    kw = {}
    for text in inputs:
        n, shape, dt = parse_input(text)
        if n in kw:
            raise TraceError(f"--input {text!r}: {n} given twice")
        kw[n] = (shape, dt) if dt is not None else shape  # a list: one (shape, dtype) per entry
    for text in args:
        n, v = parse_arg(text)
        if n in kw:
            raise TraceError(f"--arg {text!r}: {n} given twice")
        kw[n] = v
    return trace(spec, grid=grid, hardware=hardware, time_limit=time_limit, lnc=lnc, core_id=core_id,
                 _stated_limit=stated_limit, **kw)
