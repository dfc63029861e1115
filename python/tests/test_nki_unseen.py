"""Kernels written the way other authors write them (issue 41, "unseen real kernels"), each with
its expected verdict: python/tests/nki_unseen/ holds a package whose kernel imports its helpers
relatively, a new-API matmul and an old-API block transpose (what each combines: their docstrings)."""
import os
import subprocess

import numpy as np

from scratchplan import nki

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nki_unseen")
TRACER = os.path.join(os.path.dirname(nki.__file__), "tracer.py")


def traced(name, *inputs, **args):
    return nki.trace(os.path.join(HERE, name), **dict(inputs), **args)


def test_package_kernel_with_relative_helpers_checks_clean():
    k = traced("pkg/kern.py:scale_rows", ("x", ((300, 512), "bf16")), tile=(128, 256), scale=0.25,
               acc_dtype=np.float32)
    allocs = {t["name"]: t.get("alloc") for t in k["tensors"]}
    assert allocs["inp"]["base_addr"] == 0 and allocs["res"]["base_addr"] == 1024  # the helper's bump allocator
    assert nki.check(k).clean


def test_package_kernel_with_an_overlap_reports_it():
    k = traced("pkg/kern.py:scale_rows", ("x", ((300, 512), "bf16")), overlap=True)
    v = nki.check(k).violations
    assert v and {x["tensor"] for x in v} | {x["overwritten_by"]["tensor"] for x in v} == {"inp", "res"}


def test_package_kernel_from_the_command_line_with_args(tmp_path):
    # run from the package's parent folder as `python -m` would, the args as literals
    r = subprocess.run(["/usr/bin/python3", TRACER, "trace", "pkg/kern.py:scale_rows", "--input", "x=300x512:bf16",
                        "--arg", "tile=(128, 256)", "--arg", "scale=0.25", "--arg", "acc_dtype=nl.float32",
                        "--arg", "overlap=False"], cwd=HERE, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"name":"res"' in r.stdout


def test_new_api_matmul_with_list_buffers_checks_clean():
    k = traced("newapi.py", ("a_t", ((512, 128), "bf16")), ("b", ((512, 512), "bf16")), n_k=4)
    mm = [n for n in k["body"] if n.get("name") == "nc_matmul"]
    # sa[k % 2] indexes a Python list: the k loop is unrolled, first matmul overwrites, then accumulates
    assert len(mm) == 4 and not mm[0]["writes"][0].get("accumulate") and all(m["writes"][0]["accumulate"] for m in mm[1:])
    loops_ = [n for n in k["body"] if "loop" in n]
    assert [n["trip"] for n in loops_] == [2]  # the r loop: traced once
    assert nki.check(k).clean


def test_new_api_matmul_with_a_third_buffer_overlapping_reports_it():
    k = traced("newapi.py", ("a_t", ((512, 128), "bf16")), ("b", ((512, 512), "bf16")), n_k=4)
    places = {t["name"]: t for t in k["tensors"]}
    assert [places[n]["alloc"]["tiles"] for n in ("ndarray", "ndarray_2", "ndarray_3", "ndarray_4")] == \
        [[[0, 0]], [[0, 256]], [[0, 512]], [[0, 1536]]]  # the helper's two lists: sa, then sb
    places["ndarray_4"]["alloc"]["tiles"] = [[0, 256]]  # sb[1] over sa[1]: loaded after it, before the matmul
    v = nki.check(k).violations
    assert v and v[0]["tensor"] == "ndarray_2" and v[0]["overwritten_by"]["tensor"] == "ndarray_4"


def test_old_api_block_transpose_checks_clean():
    k = traced("oldapi.py", ("x", ((128, 64), "fp16")), width=64, dtype=np.float16)
    tr = [n for n in loops_body(k["body"]) if n["name"] == "nc_transpose"]
    assert len(tr) == 2 and all(n["engine"] == "Vector" for n in tr)  # static_range: two copies
    assert nki.check(k).clean


def loops_body(body):
    for n in body:
        if "loop" in n:
            yield from loops_body(n["body"])
        else:
            yield n


def test_old_api_block_transpose_from_the_command_line_with_a_dtype_arg():
    r = subprocess.run(["/usr/bin/python3", TRACER, "trace", "oldapi.py", "--input", "x=96x64:bf16", "--arg",
                        "dtype=nl.bfloat16"], cwd=HERE, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"base_addr":256' in r.stdout  # dst after src's two 64-wide bf16 tiles
