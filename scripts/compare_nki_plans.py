"""Byte-for-byte comparison of `scratchplan nki plan` between two builds (issue 56: the NKI planner
moved onto the allocation engine without a change of behaviour).

    python3 scripts/compare_nki_plans.py --before OLD/scratchplan --after NEW/scratchplan [JSON_DIR ...]

Runs both binaries on every kernel -- examples/nki (JSON and Python), the Python kernels of
python/tests/nki_kernels.py under both import spellings, the unseen kernels of
python/tests/nki_unseen, and every *.json in the JSON_DIRs given (e.g. kernels written by
nki::generate_kernel_json) -- with each output of `nki plan` (report, --json, -o, --svg, --trace, --addresses,
--rewrite for Python kernels) under the planner's options (--in-order, --single, --keep-direct,
--max-buffers 3), and `nki check` (report, --json, --svg, --trace) of each kernel and of its plan,
and compares stdout, stderr, the exit status and every file written. The time
limit is generous so that the search is never cut short (a cut depends on the machine's speed).
Prints one line per difference and a summary; exits 1 if any output differs."""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

OPTIONS = [[], ["--in-order"], ["--single"], ["--keep-direct"], ["--max-buffers", "3"]]


def tutorial_kernels(tmp):
    """(label, spec, extra args) of the bundled examples and the test kernels of nki_kernels.py in
    both import spellings; sources written under tmp (compare_nki_traces.py uses them too)."""
    import nki_kernels
    out = [("examples/double_buffer.py", os.path.join(ROOT, "examples/nki/double_buffer.py"), ["--input", "x=2048x512:bf16"]),
           ("examples/lifetime_conflict.py", os.path.join(ROOT, "examples/nki/lifetime_conflict.py"),
            ["--input", "x=8x128x512:bf16"])]
    for name, (body, inputs, grid, _direct) in sorted(nki_kernels.KERNELS.items()):
        for header_name, header in sorted(nki_kernels.HEADERS.items()):
            path = os.path.join(tmp, f"{name}_{header_name}.py")
            with open(path, "w") as f:
                f.write(header + body)
            args = [a for i in inputs for a in ("--input", i)] + (["--grid", grid] if grid else [])
            out.append((f"nki_kernels/{name}/{header_name}", path, args))
    return out


def python_kernels(tmp):
    """(label, spec, extra args) of the Python kernels; sources written under tmp."""
    out = tutorial_kernels(tmp)
    unseen = os.path.join(ROOT, "python", "tests", "nki_unseen")
    out += [("unseen/pkg/kern.py:scale_rows", os.path.join(unseen, "pkg/kern.py") + ":scale_rows", ["--input", "x=300x512:bf16"]),
            ("unseen/oldapi.py", os.path.join(unseen, "oldapi.py"), ["--input", "x=96x64:bf16"])]
    return out


def run(cli, kernel, args, outdir, verb="plan"):
    """stdout, stderr, status and the files written by one run."""
    os.makedirs(outdir, exist_ok=True)
    files = {"-o": "kernel.json", "--svg": "plan.svg", "--trace": "trace.json", "--addresses": "addresses.json"}
    if verb == "check":
        files = {"--svg": "check.svg", "--trace": "trace.json"}
    cmd = [cli, "nki", verb, kernel, "--time-limit", "600"] + args
    written = [a for f, n in files.items() for a in (f, os.path.join(outdir, n))]
    if "--json" not in args:
        cmd += written
        if ".py" in kernel and verb == "plan":
            cmd += ["--rewrite", os.path.join(outdir, "rewritten.py")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    out = {"stdout": r.stdout.replace(outdir, "OUT"), "stderr": r.stderr.replace(outdir, "OUT"), "status": str(r.returncode)}
    for n in sorted(os.listdir(outdir)):
        with open(os.path.join(outdir, n), "rb") as f:
            out[n] = f.read().replace(outdir.encode(), b"OUT")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--no-python", action="store_true", help="JSON kernels only")
    ap.add_argument("json_dirs", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = [(os.path.relpath(p, ROOT), p, []) for p in sorted(glob.glob(os.path.join(ROOT, "examples/nki/*.json")))
                   if not os.path.basename(p).startswith("hardware")]
        for d in a.json_dirs:
            kernels += [(os.path.basename(p), p, []) for p in sorted(glob.glob(os.path.join(d, "*.json")))]
        if not a.no_python:
            kernels += python_kernels(tmp)
        runs = differ = 0
        planned = set()
        def compare(label, what, b, c):
            nonlocal differ
            bad = sorted(k for k in set(b) | set(c) if b.get(k) != c.get(k))
            if bad:
                differ += 1
                print(f"DIFFERS {label} {what}: {', '.join(bad)}", flush=True)

        for label, path, args in kernels:
            # nki check: the report, --json, --svg and --trace
            for fmt in ([], ["--json"]):
                b = run(a.before, path, args + fmt, os.path.join(tmp, "b", str(runs)), "check")
                c = run(a.after, path, args + fmt, os.path.join(tmp, "a", str(runs)), "check")
                runs += 1
                compare(label, "check " + " ".join(fmt), b, c)
            for opt in OPTIONS:
                for fmt in ([], ["--json"]):
                    extra = args + opt + fmt
                    b = run(a.before, path, extra, os.path.join(tmp, "b", str(runs)))
                    c = run(a.after, path, extra, os.path.join(tmp, "a", str(runs)))
                    runs += 1
                    if b["status"] == "0":
                        planned.add(label)
                    compare(label, " ".join(opt + fmt), b, c)
                    if "kernel.json" in b and not opt and not fmt:  # the planned kernel, checked
                        k = os.path.join(tmp, f"planned{runs}.json")
                        with open(k, "wb") as f:
                            f.write(b["kernel.json"])
                        compare(label, "check of the plan", run(a.before, k, [], os.path.join(tmp, "b", f"{runs}c"), "check"),
                                run(a.after, k, [], os.path.join(tmp, "a", f"{runs}c"), "check"))
        print(f"{len(kernels)} kernels ({len(planned)} planned), {runs} comparisons (plus checks of plans), {differ} differ")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
