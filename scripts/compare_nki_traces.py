"""Byte-for-byte comparison of the NKI tracer's output between two copies of the Python package
(issue 55: the tracer made faster without a change of what it records).

    python3 scripts/compare_nki_traces.py --before OLD_PYROOT --after NEW_PYROOT [--library DIR] [--pytest]

OLD_PYROOT / NEW_PYROOT are folders holding the `scratchplan` package (build/release/python, or a
copy of it taken before a change). For every kernel -- examples/nki/*.py, the Python kernels of
python/tests/nki_kernels.py under both import spellings, the unseen kernels of
python/tests/nki_unseen, the generated speed kernel of bench/tables_nki_library.py, and, with
--library DIR (the folder holding `nkilib_src/`), every call of that benchmark at each logical core
-- it compares the trace JSON of `tracer.py trace` (stdout, stderr, exit status) and the output of
`scratchplan nki check --json` (the CLI given by --cli, its tracer taken from each package through
$SCRATCHPLAN_PYTHONPATH). --pytest also runs the NKI tests (`pytest python/tests -k nki`, but the
memo's own test, which needs the memo) under each package, recording every in-process trace()
result (or its error), and compares the two records and the tests' verdicts.
Prints one line per difference and a summary; exits 1 if any output differs."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
PY = "/usr/bin/python3"


def kernels(tmp, library):
    """(label, spec, args, cwd) of every kernel traced; generated sources written under tmp."""
    import tables_nki_library as lib
    from compare_nki_plans import tutorial_kernels
    out = [(label, spec, args, None) for label, spec, args in tutorial_kernels(tmp)]
    unseen = os.path.join(ROOT, "python", "tests", "nki_unseen")
    for overlap in ("False", "True"):
        out.append((f"unseen/pkg/kern.py:scale_rows overlap={overlap}", "pkg/kern.py:scale_rows",
                    ["--input", "x=300x512:bf16", "--arg", "tile=(128, 256)", "--arg", "scale=0.25", "--arg",
                     "acc_dtype=nl.float32", "--arg", f"overlap={overlap}"], unseen))
    out += [("unseen/newapi.py", "newapi.py", ["--input", "a_t=512x128:bf16", "--input", "b=512x512:bf16", "--arg", "n_k=4"],
             unseen),
            ("unseen/oldapi.py bf16", "oldapi.py", ["--input", "x=96x64:bf16", "--arg", "dtype=nl.bfloat16"], unseen),
            ("unseen/oldapi.py fp16", "oldapi.py", ["--input", "x=128x64:fp16", "--arg", "width=64", "--arg",
                                                    "dtype=nl.float16"], unseen)]
    speed = os.path.join(tmp, "speed.py")
    with open(speed, "w") as f:
        f.write(lib.SPEED_KERNEL)
    for n in (1, 7, 1000):
        out.append((f"speed n={n}", speed + ":kernel", ["--input", "x=128x512:fp32", "--arg", f"n={n}"], None))
    if library:
        for spec, _how, call, lncs in lib.CALLS:
            for lnc in lncs:
                for core in range(lnc):
                    extra = ["--lnc", str(lnc), "--core", str(core)] if lnc > 1 else []
                    out.append((f"library {spec} lnc={lnc} core={core}", lib.L + spec, lib.split(call) + extra, library))
    return out


def run(cmd, cwd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=1800, env=env)
    return {"stdout": r.stdout, "stderr": r.stderr, "status": r.returncode}


PLUGIN = '''
import functools, json, os, re
_out = open(os.environ["COMPARE_TRACE_DUMP"], "w")
_test = ["?"]

def _norm(s):
    return re.sub(r"/tmp/pytest-of-[^/]+/pytest-[0-9]+/", "TMP/", s)

def pytest_configure(config):
    import scratchplan.nki as nki
    from scratchplan.nki import tracer, tracing
    from scratchplan.nki.tracing import launch
    real = launch.trace

    @functools.wraps(real)
    def trace(*a, **kw):
        try:
            r = real(*a, **kw)
        except BaseException as e:
            _out.write(_test[0] + " ERROR " + _norm(type(e).__name__ + ": " + str(e)) + "\\n")
            raise
        _out.write(_test[0] + " " + _norm(json.dumps(r)) + "\\n")
        return r
    for m in (nki, tracer, tracing, launch):
        m.trace = trace

def pytest_runtest_setup(item):
    _test[0] = item.nodeid

def pytest_unconfigure(config):
    _out.close()
'''


def pytest_record(pyroot, cli, tmp, tag):
    """The tests see a build tree: the package under TREE/python, the CLI beside it as TREE/scratchplan
    (its tracer taken from that package through $SCRATCHPLAN_PYTHONPATH)."""
    plugin_dir = os.path.join(tmp, "plugin")
    os.makedirs(plugin_dir, exist_ok=True)
    with open(os.path.join(plugin_dir, "compare_trace_plugin.py"), "w") as f:
        f.write(PLUGIN)
    tree = os.path.join(tmp, f"tree_{tag}")
    os.makedirs(tree)
    os.symlink(pyroot, os.path.join(tree, "python"))
    os.symlink(cli, os.path.join(tree, "scratchplan"))
    dump = os.path.join(tmp, f"pytest_{tag}.txt")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(tree, "python"), plugin_dir]), COMPARE_TRACE_DUMP=dump,
               SCRATCHPLAN_PYTHONPATH=pyroot, SCRATCHPLAN_BUILD=tree)
    r = subprocess.run([PY, "-m", "pytest", os.path.join(ROOT, "python", "tests"), "-q", "-p", "no:cacheprovider",
                        "-k", "nki and not trace_memo", "-p", "compare_trace_plugin"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=3600)
    with open(dump) as f:
        lines = f.read().splitlines()
    return r.returncode, r.stdout.strip().splitlines()[-1:] if r.stdout.strip() else [], lines


def hardware_args(cli):
    sys.path.insert(0, os.path.join(os.path.dirname(cli), "python"))
    from scratchplan import _core
    return ["--hardware-json", _core.nki_builtin_hardware("trn2"), "--hardware-defaults", _core.nki_builtin_hardware("trn1")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="folder holding the scratchplan package before the change")
    ap.add_argument("--after", required=True, help="folder holding the scratchplan package after the change")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "release", "scratchplan"))
    ap.add_argument("--library", default=None, help="folder holding nkilib_src/ (AWS's nki-library src/)")
    ap.add_argument("--pytest", action="store_true", help="also compare every trace() of the NKI tests")
    ap.add_argument("--pytest-only", action="store_true", help="only compare the traces of the NKI tests")
    a = ap.parse_args()
    a.before, a.after, a.cli = os.path.abspath(a.before), os.path.abspath(a.after), os.path.abspath(a.cli)
    a.library = os.path.abspath(a.library) if a.library else None
    hw = hardware_args(a.cli)
    runs = differ = 0

    def compare(label, what, b, c):
        nonlocal runs, differ
        runs += 1
        bad = sorted(k for k in set(b) | set(c) if b.get(k) != c.get(k))
        if bad:
            differ += 1
            print(f"DIFFERS {label} {what}: {', '.join(bad)}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        ks = [] if a.pytest_only else kernels(tmp, a.library)
        for label, spec, args, cwd in ks:
            lib = cwd is not None and a.library is not None and cwd == a.library
            traced = []
            for pyroot in (a.before, a.after):
                tracer = os.path.join(pyroot, "scratchplan", "nki", "tracer.py")
                traced.append(run([PY, tracer, "trace", spec, *args, *(hw if lib else hw[2:])], cwd))
            compare(label, "trace", *traced)
            chk = [a for a in args if a not in ("--core",)]
            if "--core" in args:  # nki check traces every core itself
                i = args.index("--core")
                if args[i + 1] != "0":
                    continue
                chk = args[:i] + args[i + 2:]
            checked = []
            for pyroot in (a.before, a.after):
                env = dict(os.environ, SCRATCHPLAN_PYTHONPATH=pyroot)
                checked.append(run([a.cli, "nki", "check", spec, *chk, "--json", "--time-limit", "900"]
                                   + (["--hardware", "trn2"] if lib else []), cwd, env))
            compare(label, "check --json", *checked)
        print(f"{len(ks)} kernel traces: {runs} comparisons, {differ} differ", flush=True)
        if a.pytest or a.pytest_only:
            rb, sb, lb = pytest_record(a.before, a.cli, tmp, "before")
            ra, sa, la = pytest_record(a.after, a.cli, tmp, "after")
            diff = [i for i in range(max(len(lb), len(la))) if (lb[i:i + 1] or [None]) != (la[i:i + 1] or [None])]
            for i in diff[:20]:
                print(f"DIFFERS pytest trace #{i}: {(lb[i] if i < len(lb) else '-')[:160]}", flush=True)
            print(f"pytest -k nki: {len(lb)} / {len(la)} traces recorded (status {rb} {sb} / {ra} {sa}), {len(diff)} differ")
            differ += len(diff) + (rb != ra or sb != sa)
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
