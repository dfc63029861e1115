"""The command line on NKI kernels (issue 41): `--arg` passed through to the tracer and its bad
input, `nki plan` of a kernel whose own allocation is faulty, `--rewrite` over its own input, and
violations repeated over blocks reported once."""
import json
import os
import subprocess
import sys

import pytest

import scratchplan

sys.path.insert(0, os.path.dirname(__file__))
from test_nki_idioms import ARGS, write  # noqa: E402


CLI = os.environ.get("SCRATCHPLAN_CLI") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(scratchplan.__file__)))), "scratchplan")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki")

# One SBUF tile for four blocks all loaded before any is stored: blocks 0-2 are overwritten while
# their store is pending, the same fault in three blocks.
FAULTY = """
@nki.jit
def kernel(x):
    out = nl.ndarray((4, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((4, par_dim(128), 512), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(1,)))
    for i in nl.affine_range(4):
        t[i] = nl.load(x[i])
    for i in nl.affine_range(4):
        nl.store(out[i], value=t[i])
    return out
"""


def cli(*args):
    return subprocess.run([CLI, "nki", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args, msg", [
    (["--arg", "eps=(1,"], "is not a Python expression"),
    (["--arg", "eps"], "expected NAME=EXPR"),
    (["--arg", "nope=1"], "has no parameter 'nope'"),
])
def test_cli_bad_arg_is_exit_2_one_line(tmp_path, args, msg):
    path = write(tmp_path, "k.py", ARGS)
    r = cli("check", path, "--input", "x=128x64:fp32", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and msg in r.stderr, r.stderr


def test_cli_arg_passes_through_and_is_refused_on_json():
    r = cli("check", os.path.join(EXAMPLES, "load_exp.json"), "--arg", "eps=1e-6")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--arg applies to Python kernels" in r.stderr


def test_cli_arg_values_reach_the_kernel(tmp_path):
    path = write(tmp_path, "k.py", ARGS)
    r = cli("check", path, "--input", "x=128x64:fp32", "--arg", "eps=1e-6", "--arg", "shape=(3,4)",
            "--arg", "dt=nl.float32", "--arg", "scale=2", "--arg", "flag=True", "--arg", "label='a b'")
    assert r.returncode == 0, r.stderr


def test_check_reports_a_fault_repeated_over_blocks_once(tmp_path):
    path = write(tmp_path, "k.py", FAULTY)
    r = cli("check", path, "--input", "x=4x128x512:fp32")
    assert r.returncode == 2
    lines = [ln for ln in r.stdout.splitlines() if "lifetime" in ln]
    assert len(lines) == 1 and "same in 3 blocks: [0] [1] [2]" in lines[0], r.stdout
    r = cli("check", path, "--input", "x=4x128x512:fp32", "--json")
    g = json.loads(r.stdout)["grouped"]
    assert [x["blocks"] for x in g] == [[[0], [1], [2]]]


def test_plan_of_a_faulty_kernel_says_so_and_plans_clean(tmp_path):
    path = write(tmp_path, "k.py", FAULTY)
    r = cli("plan", path, "--input", "x=4x128x512:fp32", "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and "own allocation has 3 violation(s)" in r.stderr
    s = json.loads(r.stdout)
    assert s["input_distinct_violations"] == 3 and len(s["input_violations"]) == 3
    out = str(tmp_path / "planned.py")
    r = cli("plan", path, "--input", "x=4x128x512:fp32", "--rewrite", out)
    assert r.returncode == 0 and "the kernel's own allocation has 3 violation(s)" in r.stdout, r.stderr
    assert cli("check", out, "--input", "x=4x128x512:fp32").returncode == 0
    clean = cli("plan", out, "--input", "x=4x128x512:fp32", "--json")
    assert clean.returncode == 0 and clean.stderr == "" and json.loads(clean.stdout)["input_violations"] == []


def test_rewrite_refuses_to_overwrite_its_input(tmp_path):
    path = write(tmp_path, "k.py", FAULTY)
    before = open(path).read()
    for spec in (path, path + ":kernel"):
        r = cli("plan", spec, "--input", "x=4x128x512:fp32", "--rewrite", path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "kernel's own source" in r.stderr, r.stderr
    assert open(path).read() == before
