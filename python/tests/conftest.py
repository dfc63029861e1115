"""Shared helpers of the pytest suite: where the repository, the build and the CLI are, and how
to run the CLI for a side-by-side comparison with the Python API.

Run from the repository root:  PYTHONPATH=build/release/python /usr/bin/python3 -m pytest python/tests
(without PYTHONPATH the package is taken from $SCRATCHPLAN_BUILD/python, default build/release).
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SCRATCHPLAN_BUILD", os.path.join(ROOT, "build", "release"))
DATA = os.path.join(ROOT, "tests", "data")
EXAMPLES = os.path.join(ROOT, "examples")
CLI = os.path.join(BUILD, "scratchplan")
CLI_PREFIX = "scratchplan: "  # starts every one-line error of the CLI

try:
    import scratchplan  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(BUILD, "python"))


def example(*parts):
    return os.path.join(EXAMPLES, *parts)


def data(*parts):
    return os.path.join(DATA, *parts)


def load(path):
    with open(path) as f:
        return json.load(f)


def cli(*args, stdin=None, cwd=None):
    """Runs the CLI; returns the CompletedProcess (text mode)."""
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, input=stdin, cwd=cwd, timeout=300)


def cli_json(*args):
    """Runs a verb that prints JSON on stdout (``--json`` or ``-o -``) and returns it parsed."""
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def cli_error(*args, stdin=None):
    """The CLI's one-line error for a bad invocation, without the front end's decoration
    ("scratchplan: " before it, " (see --help)" after parser errors): the text BadInput carries."""
    r = cli(*args, stdin=stdin)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith(CLI_PREFIX), line  # one prefix for every error line
    line = line[len(CLI_PREFIX):]
    if line.endswith(" (see --help)"):
        line = line[: -len(" (see --help)")]
    return line


@pytest.fixture(scope="session")
def cli_path():
    if not os.path.exists(CLI):
        pytest.skip(f"CLI not built at {CLI}")
    return CLI
