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


def test_integer_on_a_free_dim_stays_indexable_and_bool_masks_fold(tmp_path):
    # l[:, i] passed to a helper that indexes it again as l[:, 0]; `(i < n) & flag` with a Python bool flag
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
            assert l[:, i].shape == (128,) and l[:, i][:, 0].shape == (128,)
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


def test_instruction_mask_on_loop_indices_bounds_its_operands(tmp_path):
    # blockwise_mm's down projection: H = 6 banks of 512 walked as 2 x 4 banks; the matmul's own
    # mask= switches off the banks past H, whose operand columns do not exist.
    src = """
@nki.jit
def kernel(a, w):
    out = nl.ndarray((128, 3072), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    wt = nl.load(w)
    ip = nl.arange(128)[:, None]
    for h_i in nl.affine_range(2):
        acc = nl.zeros((4, par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for h_j in nl.affine_range(4):
            on = (4 * h_i + h_j < 6)
            acc[h_j] += nisa.nc_matmul(at, wt[ip, 2048 * h_i + 512 * h_j + nl.arange(512)[None, :]], mask=on)
            res = nl.copy(acc[h_j], mask=on)
            nl.store(out[ip, 2048 * h_i + 512 * h_j + nl.arange(512)[None, :]], value=res, mask=on)
    return out
"""
    k = nki.trace(write(tmp_path, "k.py", src), a=((128, 128), "bf16"), w=((128, 3072), "bf16"))
    mm = next(n for n in instrs(k["body"]) if n["name"] == "nc_matmul")
    assert mm["when"]
    assert nki.check(k).clean
    with pytest.raises(BadInput, match=r"k2\.py:\d+: index range \[0, 4095\] of free dim 1"):
        nki.trace(write(tmp_path, "k2.py", src.replace(", mask=on)", ")")), a=((128, 128), "bf16"), w=((128, 3072), "bf16"))


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
    ("eps", "expected NAME=EXPR"),
    ("eps=", "no expression after '='"),
    ("eps=foo", "--arg eps=foo: NameError"),
    ("eps=(1,", "is not a Python expression"),
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



def placements(k):
    return {t["name"]: t["alloc"].get("tiles") for t in k["tensors"] if t["buffer"] != "hbm"}


def test_new_api_dst_first_calls_and_addresses(tmp_path):
    # The new namespace's tutorial calls: dst-first nc_matmul, tensor_copy(dst=, src=), memset,
    # tensor_tensor, dma_copy, and address=(partition, byte) (PSUM at bank * 2048).
    p = tmp_path / "k.py"
    p.write_text("""import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    sa = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf, address=(0, 0))
    sb = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf, address=(0, 256))
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, 2 * 2048))
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf, address=(0, 1280))
    nisa.dma_copy(dst=sa, src=a)
    nisa.dma_copy(dst=sb, src=b)
    nisa.memset(dst=res, value=0.0)
    nisa.nc_matmul(acc, sa, sb)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.tensor_tensor(dst=res, data1=res, data2=res, op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out
""")
    k = nki.trace(str(p), a=((128, 128), "bf16"), b=((128, 512), "bf16"))
    pl = placements(k)
    assert pl["acc"] == [[0, 4096]] and pl["sb"] == [[0, 256]]
    names = [i["name"] for i in instrs(k["body"])]
    assert names.count("nc_matmul") == 1 and "memset" in names and "tensor_copy" in names
    mm = next(i for i in instrs(k["body"]) if i["name"] == "nc_matmul")
    assert [w["tensor"] for w in mm["writes"]] == ["acc"]
    assert nki.check(k).clean


STACK = """
@ncc.enable_stack_allocator(log_level=20)
@ncc.skip_middle_end_transformations
@nki.jit
def kernel(x):
    out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        a = nl.ndarray((par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)   # stack: loop frame
        a[...] = nl.load(x[i])
        acc = nl.ndarray((par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)  # stack: bank 0
        acc[...] = nisa.nc_matmul(a[:, 0:128], a)
        b = nl.copy(acc)                                                    # a call's result: the loop frame
        PLACE
        nl.store(out[i], value=b)
    for j in nl.affine_range(2):
        c = nl.ndarray((par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)   # the sibling loop reuses a's bytes
        c[...] = nl.load(x[j])
        nl.store(out[j], value=c)
    return out
"""


def test_stack_allocator_places_automatic_tensors_per_frame(tmp_path):
    path = write(tmp_path, "k.py", STACK.replace("PLACE", ""))
    k = nki.trace(path, x=((2, 128, 512), "fp32"))
    pl = placements(k)
    # the kernel frame starts after the allocator's hidden (128, 1) fp32 bias tile
    assert pl["a"] == [[0, 4]] and pl["b"] == [[0, 2052]] and pl["c"] == [[0, 4]] and pl["acc"] == [[0, 0]]
    assert nki.check(k).clean


def test_stack_and_explicit_psum_share_a_bank_checked_by_lifetime(tmp_path):
    # An explicit mod_alloc on bank 0 while the stack's acc (bank 0) is still to be read: an overlap;
    # the same bank after acc's last read is legal.
    late = ("p = nl.ndarray((par_dim(128), 512), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))\n"
            "        p[...] = nisa.nc_matmul(a[:, 0:128], a)\n        b2 = nl.copy(p)")
    k = nki.trace(write(tmp_path, "ok.py", STACK.replace("PLACE", late)), x=((2, 128, 512), "fp32"))
    assert nki.check(k).clean
    early = STACK.replace("        b = nl.copy(acc)", "        PRE\n        b = nl.copy(acc)").replace("PLACE", "")
    early = early.replace("PRE", "p = nl.ndarray((par_dim(128), 512), dtype=nl.float32, "
                          "buffer=ncc.psum.mod_alloc(base_bank=0))\n        p[...] = nisa.nc_matmul(a[:, 0:128], a)")
    k = nki.trace(write(tmp_path, "bad.py", early), x=((2, 128, 512), "fp32"))
    v = nki.check(k).violations
    assert v and v[0]["tensor"] == "acc" and v[0]["overwritten_by"]["tensor"] == "p"


def test_stack_overflow_is_one_located_line(tmp_path):
    path = write(tmp_path, "k.py", """
@ncc.enable_stack_allocator
@nki.jit
def kernel(x):
    a = nl.ndarray((4, par_dim(128), 12288), dtype=nl.float32, buffer=nl.sbuf)
    return x
""")
    with pytest.raises(BadInput, match=r"^k\.py:\d+: stack overflow on sbuf: tensor a needs 196608 bytes"):
        nki.trace(path, x=((128, 4), "fp32"))


def test_stack_overflow_lists_the_stack_of_helper_returned_tensors(tmp_path):
    # blockwise_mm's idiom: helpers called in a sequential loop return the tensors they declare,
    # which stay in the loop's frame; the overflow names what is on the stack, largest first.
    path = write(tmp_path, "k.py", """
def block(n):
    states = nl.ndarray((n, par_dim(128), 8192), dtype=nl.float32, buffer=nl.sbuf)
    return states

@ncc.enable_stack_allocator
@nki.jit
def kernel(x, n=2):
    w = nl.ndarray((par_dim(128), 16384), dtype=nl.bfloat16, buffer=nl.sbuf)
    for b in nl.sequential_range(2):
        h = block(n)
        h_t = block(n)
        old = block(n)
    return x
""")
    assert nki.trace(path, x=((128, 4), "fp32"), n=1)  # 4 + 32768 + 3 * 32768 bytes fit
    with pytest.raises(BadInput, match=r"^k\.py:10: stack overflow on sbuf: tensor states_3 needs 65536 bytes per "
                                       r"partition at byte 163844, 180224 usable \(on the stack: states 65536, states_2 65536, "
                                       r"w 32768, the hidden bias tile 4\)$"):
        nki.trace(path, x=((128, 4), "fp32"), n=2)


def test_indirect_dma_masked_subscript_and_lazy_psum(tmp_path):
    # x[idx_tile, f] (run-time row indices), w[e[0, 0], ...], tile[pred] as a mask, a lazily
    # initialized PSUM accumulator summed over h with an inner loop b indexing it.
    path = write(tmp_path, "k.py", """
@nki.jit
def kernel(x, ids, w):
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    idx = nl.load(ids)
    e = nl.load(ids[0:1, 0:1])
    ip, jf = nl.mgrid[0:128, 0:256]
    rows = nl.load(x[idx[ip, 0], jf])
    wt = nl.load(w[e[0, 0], ip, jf])
    acc = nl.zeros((2, par_dim(128), 128), dtype=nl.float32, buffer=nl.psum, lazy_initialization=True)
    for h in nl.affine_range(2):
        for b in nl.affine_range(2):
            k = nl.arange(128)[None, :] + 128 * b
            acc[b, 0:128, 0:128] += nisa.nc_matmul(wt[ip, k][k < 200], rows[:, 0:128], mask=(k < 200))
    nl.store(out[:, 0:128], value=acc[0])
    return out
""")
    k = nki.trace(path, x=((1024, 256), "fp32"), ids=((128, 1), "int32"), w=((4, 128, 256), "fp32"))
    loads = [i for i in instrs(k["body"]) if i["name"] == "load"]
    assert any({r["tensor"] for r in i["reads"]} == {"x", "idx"} for i in loads)
    firsts = [i for i in instrs(k["body"]) if i["name"] == "nc_matmul" and not any(w.get("accumulate") for w in i["writes"])]
    assert firsts and all(i.get("when") for i in firsts)  # the first h starts each b's group
    assert not any(i["name"] == "memset" for i in instrs(k["body"]))
