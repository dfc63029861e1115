"""A kernel of another author that imports a kernel library from PYTHONPATH: the library's own
package logic runs as written. nkilib's `__init__` probes with `importlib.util.find_spec` for a
standalone copy before it falls back to its bundled one; the tracer's stand-ins for absent
imports must not answer such a probe, or the package replaces itself by a stand-in."""
import os
import subprocess
import sys

from scratchplan import nki

sys.path.insert(0, os.path.dirname(__file__))
from conftest import CLI  # noqa: E402

LIB_INIT = """import importlib
import importlib.util
import pkgutil

# Like nkilib: use a standalone copy when one is installed, else the bundled submodules.
try:
    STANDALONE = importlib.util.find_spec("kernlib_standalone.kernlib") is not None
except ImportError:
    STANDALONE = False
if not STANDALONE:
    for _, name, _ in pkgutil.iter_modules(__path__):
        importlib.import_module("." + name, __name__)
"""

LIB_OPS = """import nki
import nki.language as nl
import nki.isa as nisa


def scaled_copy(x, out, base):
    t = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf, address=(0, base))
    nisa.dma_copy(dst=t, src=x)
    nisa.activation(dst=t, op=nl.exp, data=t)
    nisa.dma_copy(dst=out, src=t)
"""

KERNEL = """import nki
import nki.language as nl
import kernlib
from kernlib.ops import scaled_copy


@nki.jit
def user_kernel(x):
    if kernlib.STANDALONE is True:
        raise RuntimeError("the probe for a standalone copy found a stand-in")
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    scaled_copy(x, out, 0)
    return out
"""


def make(tmp_path):
    lib = tmp_path / "site" / "kernlib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(LIB_INIT)
    (lib / "ops.py").write_text(LIB_OPS)
    user = tmp_path / "user"
    user.mkdir()
    (user / "user_kernel.py").write_text(KERNEL)
    return str(tmp_path / "site"), str(user / "user_kernel.py")


def test_cli_traces_a_kernel_that_imports_a_library_from_pythonpath(tmp_path):
    site, kernel = make(tmp_path)
    env = dict(os.environ, PYTHONPATH=site)
    r = subprocess.run([CLI, "nki", "check", kernel + ":user_kernel", "--input", "x=128x256:fp32"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "violations: 0" in r.stdout


def test_python_api_traces_the_same_kernel(tmp_path, monkeypatch):
    site, kernel = make(tmp_path)
    monkeypatch.syspath_prepend(site)
    k = nki.trace(kernel + ":user_kernel", "128x256:fp32")
    sbuf = [t for t in k["tensors"] if t["buffer"] == "sbuf"]
    assert len(sbuf) == 1 and sbuf[0]["alloc"]["tiles"] == [[0, 0]]  # the library's address=(0, 0)
    assert nki.check(k).clean


def test_without_the_library_on_the_path_the_import_is_named(tmp_path):
    _, kernel = make(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([CLI, "nki", "check", kernel + ":user_kernel", "--input", "x=128x256:fp32"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "kernlib" in r.stderr, r.stderr
