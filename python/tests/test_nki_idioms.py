"""Idioms of real NKI kernels (issue 41), each in a small kernel of our own: keyword calls of
allocation functions, dtype identity, masks that switch accesses off, `%` of loop indices, item
assignment into a call's result, module-level launches and imports, and `--arg`."""
import os
import subprocess
import sys

import pytest

from scratchplan import BadInput, nki

HEAD = """import functools
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim
"""
TRACER = os.path.join(os.path.dirname(nki.__file__), "tracer.py")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(HEAD + text)
    return str(p)


def instrs(body):
    for n in body:
        if "loop" in n:
            yield from instrs(n["body"])
        else:
            yield n


def test_partial_allocation_function_is_called_by_keyword(tmp_path):
    path = write(tmp_path, "k.py", """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    def addr(offsets, idx, pdim_size, fdim_size):
        return (0, offsets[idx])
    t = nl.ndarray((2, par_dim(128), 512), dtype=nl.float32,
                   buffer=ncc.sbuf.alloc(functools.partial(addr, offsets={(0,): 0, (1,): 4096})))
    for i in nl.affine_range(2):
        t[i] = nl.load(x)
        nl.store(out, value=t[i])
    return out
""")
    k = nki.trace(path, x=((128, 512), "fp32"))
    assert k["tensors"][2]["alloc"] == {"kind": "table", "tiles": [[0, 0], [0, 4096]]}
    assert nki.check(k).clean


def test_dtypes_compare_and_hash_like_nki(tmp_path):
    path = write(tmp_path, "k.py", """
SIZES = {nl.float32: 4, nl.bfloat16: 2}

@nki.jit
def kernel(x):
    assert x.dtype == nl.bfloat16 and np.dtype(x.dtype).itemsize == 2 and x.itemsize == 2
    n = SIZES[x.dtype]
    t = nl.ndarray((128, 256 // n), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    t[...] = nl.load(x[:, 0:256 // n])
    return t
""")
    k = nki.trace(path, x=((128, 512), "bf16"))
    assert k["tensors"][1]["free"] == [128] and k["tensors"][1]["dtype"] == "bfloat16"



def test_dtype_ranges_and_sizes_like_numpy(tmp_path):
    # nl.fp32.min as a fill value (-inf stand-in of flash attention), finfo/iinfo facts of every dtype
    path = write(tmp_path, "k.py", """
@nki.jit
def kernel(x):
    assert nl.fp32.min == np.finfo(np.float32).min and nl.float16.max == 65504.0
    assert nl.int8.min == -128 and nl.uint8.max == 255 and nl.int32.max == 2**31 - 1
    assert nl.bfloat16.max > 3.3e38 and nl.bfloat16.bits == 16 and nl.bfloat16.itemsize == 2
    assert np.dtype(nl.bfloat16).itemsize == 2 and nl.float32 == np.float32 and nl.bfloat16 != nl.float16
    assert {nl.bfloat16: 1}[x.dtype] == 1 and str(x.dtype) == "bfloat16"
    t = nl.full((128, 4), fill_value=nl.fp32.min, dtype=nl.float32, buffer=nl.sbuf)
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=t)
    return out
""")
    nki.trace(path, x=((128, 4), "bf16"))


def test_integer_on_a_free_dim_keeps_it_and_bool_masks_fold(tmp_path):
    # l[:, i] is a (128, 1) tile a helper indexes again as l[:, 0]; `(i < n) & flag` with a Python bool flag
    path = write(tmp_path, "k.py", """
def helper(l_col, out_col):
    out_col[:, 0] = nl.exp(l_col[:, 0])

@nki.jit
def kernel(x):
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    l = nl.load(x)
    r = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    causal = True
    for i in nl.affine_range(8):
        if (i < 6) & causal:
            assert l[:, i].shape == (128, 1)
            helper(l[:, i], r[:, i])
    nl.store(out, value=r)
    return out
""")
    k = nki.trace(path, x=((128, 8), "fp32"))
    assert any(ins.get("when") for ins in instrs(k["body"]))

MASKED = """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    n = x.shape[0]
    t = nl.ndarray((2, par_dim(128), 512), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    ix, iy = nl.mgrid[0:128, 0:512]
    for i in nl.affine_range(2):
        for g in nl.affine_range(2):
            t[g] = nl.load(x[(2 * i + g) * 128 + ix, iy], mask=((2 * i + g) * 128 < n))
            nl.store(out, value=t[g], mask=((2 * i + g) * 128 < n))
    return out
"""


def test_mask_on_loop_indices_switches_the_access_off(tmp_path):
    # rows 128..511 do not exist: the mask switches those loads off, so they are not out of range
    k = nki.trace(write(tmp_path, "k.py", MASKED), x=((128, 512), "fp32"))
    load = next(n for n in instrs(k["body"]) if n["name"] == "load")
    assert load["when"]
    assert nki.check(k).clean


def test_mask_on_an_arange_grid_bounds_the_access(tmp_path):
    path = write(tmp_path, "k.py", """
@nki.jit
def kernel(x):
    out = nl.ndarray((250, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    for i in nl.affine_range(2):
        t = nl.load(x[i * 128 + ip, jf], mask=(i * 128 + ip < 250))
        nl.store(out[i * 128 + ip, jf], value=t, mask=(i * 128 + ip < 250))
    return out
""")
    nki.trace(path, x=((250, 64), "fp32"))
    # without the mask the second tile reads rows 250..255
    bad = open(path).read().replace(", mask=(i * 128 + ip < 250)", "")
    with pytest.raises(BadInput, match=r"k2\.py:\d+: index range \[0, 255\]"):
        nki.trace(write(tmp_path, "k2.py", bad[len(HEAD):]), x=((250, 64), "fp32"))


def test_modulo_of_a_loop_index_is_exact(tmp_path):
    src = """
@nki.jit
def kernel(x):
    out = nl.ndarray((5, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((2, par_dim(128), 512), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    for i in nl.sequential_range(5):
        t[i % 2] = nl.load(x[i])
        nl.store(out[i], value=t[i % 2])
        if i >= 1:
            nl.store(out[i], value=t[(i + 1) % 2])
    return out
"""
    k = nki.trace(write(tmp_path, "k.py", src), x=((5, 128, 512), "fp32"))
    outer = k["body"][0]
    assert (outer["loop"], outer["trip"]) == ("i_q", 3) and (outer["body"][0]["loop"], outer["body"][0]["trip"]) == ("i_r", 2)
    load = next(n for n in instrs(k["body"]) if n["name"] == "load")
    assert load["writes"][0]["block"] == ["i_r"] and "4 - 2*i_q - i_r" in load["when"]  # i = 5 does not run
    assert nki.check(k).clean
    # the previous slot is read after the next load overwrote it when both use one tile
    one = src.replace("t[(i + 1) % 2]", "t[(i + 1) % 2]").replace("num_free_tiles=(2,)", "num_free_tiles=(1,)")
    rep = nki.check(nki.trace(write(tmp_path, "k1.py", one), x=((5, 128, 512), "fp32")))
    assert not rep.clean and {v["kind"] for v in rep.violations} == {"lifetime_conflict"}


def test_item_assignment_into_a_call_result(tmp_path):
    path = write(tmp_path, "k.py", """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    y = nl.multiply(nl.load(x), 2.0)
    y[...] = nl.multiply(y, 3.0)
    nl.store(out, value=y)
    return out
""")
    k = nki.trace(path, x=((128, 512), "fp32"))
    assert [n["name"] for n in instrs(k["body"])].count("multiply") == 2
    assert nki.check(k).clean


def test_module_code_imports_and_launches(tmp_path):
    (tmp_path / "helpers.py").write_text("def tiles(n):\n    return n // 128\n")
    path = write(tmp_path, "k.py", """
import torch
import torch_xla.core.xla_model as xm
from helpers import tiles

@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(tiles(x.shape[0])):
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(x[i * 128:(i + 1) * 128, :]))
    return out

a = np.random.rand(256, 64).astype(np.float32)
o = kernel(a)
np.testing.assert_allclose(o, a)
""")
    k = nki.trace(path, x=((256, 64), "fp32"))
    assert k["body"][0]["trip"] == 2
    # the CLI's script form resolves helpers from the kernel's folder too, run from anywhere
    r = subprocess.run([sys.executable, TRACER, "trace", path, "--input", "x=256x64:fp32"], capture_output=True,
                       text=True, cwd="/")
    assert r.returncode == 0, r.stderr


ARGS = """
@nki.jit
def kernel(x, eps=None, shape=(1, 1), dt=nl.bfloat16, scale=1, flag=False, label=""):
    assert eps == 1e-6 and shape == (3, 4) and dt == nl.float32 and scale == 2 and flag is True and label == "a b"
    out = nl.ndarray(x.shape, dtype=dt, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
"""


def test_arg_values_on_the_command_line_and_in_python(tmp_path):
    path = write(tmp_path, "k.py", ARGS)
    r = subprocess.run([sys.executable, TRACER, "trace", path, "--input", "x=128x64:fp32", "--arg", "eps=1e-6",
                        "--arg", "shape=(3,4)", "--arg", "dt=nl.float32", "--arg", "scale=2", "--arg", "flag=True",
                        "--arg", "label='a b'"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    nki.trace(path, x=((128, 64), "fp32"), eps=1e-6, shape=(3, 4), dt=nki_float32(),
              scale=2, flag=True, label="a b")


def nki_float32():
    import numpy as np
    return np.float32


@pytest.mark.parametrize("arg, msg", [
    ("eps", "expected NAME=VALUE"),
    ("eps=", "is not a Python literal"),
    ("eps=foo", "is not a Python literal"),
    ("eps=(1,", "is not a Python literal"),
    ("nope=1", "has no parameter 'nope'"),
])
def test_bad_arg_is_one_line(tmp_path, arg, msg):
    path = write(tmp_path, "k.py", ARGS)
    r = subprocess.run([sys.executable, TRACER, "trace", path, "--input", "x=128x64:fp32", "--arg", arg],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and msg in r.stderr, r.stderr


def test_errors_are_bad_input_with_file_and_line(tmp_path):
    path = write(tmp_path, "k.py", """
@nki.jit
def kernel(x):
    nl.frobnicate(x)
""")
    with pytest.raises(BadInput, match=r"^k\.py:\d+: .*frobnicate"):
        nki.trace(path, x=((128, 64), "fp32"))
