"""Kernels that misbehave as Python programs (issue 53 items 4, 5, 8 and the shape text of item 10):
their prints never reach the result channel, sys.exit() is one BadInput naming file:line, tracing
is bounded by a time limit in both verbs and in Python, and the import-time names the Neuron SDK
adds (logging.OFF) exist while a kernel file loads."""
import logging
import os
import subprocess
import sys
import threading
import time

import pytest

from scratchplan import BadInput, nki

sys.path.insert(0, os.path.dirname(__file__))
from test_nki_idioms import write  # noqa: E402
from conftest import CLI  # noqa: E402

BODY = """
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
"""

PRINTS = """
import logging, sys
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="kernel-log %(message)s", force=True)

@nki.jit
def kernel(x):
    print("kernel-print", x.shape)
    logging.info("traced")
""" + BODY

EXITS = """
import sys

@nki.jit
def kernel(x):
    if x.shape[0] == 128:
        sys.exit(3)
""" + BODY

EXITS_AT_IMPORT = """
import sys
sys.exit()

@nki.jit
def kernel(x):
""" + BODY

FOREVER = """
@nki.jit
def kernel(x):
    n = 0
    while True:
        n += 1
""" + BODY

# A kernel that swallows every exception inside its endless loop still stops at the limit.
SWALLOWS = """
@nki.jit
def kernel(x):
    while True:
        try:
            y = [0] * 8
        except BaseException:
            pass
""" + BODY

# Course kernel files written for the SDK silence logging at import with a name only the SDK adds.
LOGGING_OFF = """
import logging
logging.disable(logging.OFF)

@nki.jit
def kernel(x):
""" + BODY


def run(*args):
    t0 = time.monotonic()
    r = subprocess.run([CLI, "nki", *args], capture_output=True, text=True, timeout=120)
    return r, time.monotonic() - t0


@pytest.mark.parametrize("verb", ["check", "plan"])
def test_cli_kernel_prints_go_to_stderr_and_the_result_is_intact(tmp_path, verb):
    path = write(tmp_path, "k.py", PRINTS)
    r, _ = run(verb, path, "--input", "x=128x512:bf16", "--json")
    assert r.returncode == 0, r.stderr
    assert "kernel-print" in r.stderr and "kernel-log traced" in r.stderr
    assert "kernel-" not in r.stdout and r.stdout.lstrip().startswith("{")


def test_cli_sys_exit_is_exit_2_naming_the_line(tmp_path):
    path = write(tmp_path, "k.py", EXITS)
    line = (open(path).read().splitlines().index("        sys.exit(3)")) + 1
    r, _ = run("check", path, "--input", "x=128x512:bf16")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"k.py:{line}: the kernel called sys.exit(3)" in r.stderr
    path = write(tmp_path, "m.py", EXITS_AT_IMPORT)
    r, _ = run("plan", path, "--input", "x=128x512:bf16")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "m.py:10: the kernel called sys.exit()" in r.stderr, r.stderr


def test_python_sys_exit_is_bad_input_not_system_exit(tmp_path):
    path = write(tmp_path, "k.py", EXITS)
    with pytest.raises(BadInput, match=r"k\.py:\d+: the kernel called sys\.exit\(3\)"):
        nki.trace(path, "128x512:bf16")
    with pytest.raises(BadInput, match=r"the kernel called sys\.exit\(\)"):
        nki.trace(write(tmp_path, "m.py", EXITS_AT_IMPORT), "128x512:bf16")


@pytest.mark.parametrize("verb, kernel", [("plan", FOREVER), ("check", FOREVER), ("check", SWALLOWS)])
def test_cli_tracing_stops_within_the_time_limit(tmp_path, verb, kernel):
    path = write(tmp_path, "k.py", kernel)
    r, wall = run(verb, path, "--input", "x=128x512:bf16", "--time-limit", "1")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "took longer than the time limit of 1 s" in r.stderr and "k.py" in r.stderr
    assert wall < 2.5, wall  # the CLI stops at 1 s by its own clock; slack for process start on a loaded machine


def test_cli_check_states_its_time_limit_default():
    r = subprocess.run([CLI, "nki", "check", "--help"], capture_output=True, text=True)
    assert "--time-limit" in r.stdout and "default 60" in r.stdout
    r = subprocess.run([CLI, "nki", "plan", "--help"], capture_output=True, text=True)
    assert "default 10" in r.stdout


def test_python_trace_time_limit_in_main_and_other_threads(tmp_path):
    path = write(tmp_path, "k.py", FOREVER)
    t0 = time.monotonic()
    with pytest.raises(BadInput, match=r"k\.py:\d+: tracing took longer than the time limit of 0\.3 s"):
        nki.trace(path, "128x512:bf16", time_limit=0.3)
    assert time.monotonic() - t0 < 2.0
    errors = []

    def other():
        try:
            nki.trace(write(tmp_path, "s.py", SWALLOWS), "128x512:bf16", time_limit=0.3)
        except BadInput as e:
            errors.append(str(e))

    th = threading.Thread(target=other)
    th.start()
    th.join(5)
    assert not th.is_alive() and errors and "time limit of 0.3 s" in errors[0]
    # a clean trace afterwards is not hit by a late alarm
    k = nki.trace(write(tmp_path, "c.py", "@nki.jit\ndef kernel(x):" + BODY), "128x512:bf16", time_limit=0.05 + 5)
    time.sleep(0.2)
    assert k["tensors"]
    with pytest.raises(BadInput, match="time_limit"):
        nki.trace(path, "128x512:bf16", time_limit=-1)


def test_logging_off_exists_while_a_kernel_file_loads(tmp_path):
    path = write(tmp_path, "k.py", LOGGING_OFF)
    before = logging.root.manager.disable
    k = nki.trace(path, "128x512:bf16")
    assert nki.check(k).clean
    assert logging.root.manager.disable == before and not hasattr(logging, "OFF")  # put back
    r, _ = run("check", path, "--input", "x=128x512:bf16")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("text", ["128xx512:bf16", "128x:bf16", "128x512:nope", "0x4:fp32"])
def test_python_shape_text_is_refused_like_the_cli(tmp_path, text):
    path = write(tmp_path, "k.py", "@nki.jit\ndef kernel(x):" + BODY)
    with pytest.raises(BadInput, match="128x|0x4"):
        nki.trace(path, text)
    with pytest.raises(BadInput):
        nki.trace(path, x=text)
