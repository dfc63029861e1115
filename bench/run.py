#!/usr/bin/env python3
"""Benchmark runner: regenerates the tables of docs/benchmarks.md.

Each module contributes bench/tables_<module>.py with a function `tables(ctx) -> str` that
measures (medians of several runs) and returns markdown. The runner replaces the text between
`<!-- BEGIN <module> -->` and `<!-- END <module> -->` in docs/benchmarks.md, appending a new
section when the markers are missing.

  python3 bench/run.py                 # every module
  python3 bench/run.py mlsys alloc     # only these
  python3 bench/run.py --quick         # fewer repetitions (for smoke runs)
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Context:
    def __init__(self, quick):
        self.root = ROOT
        self.data = os.path.join(ROOT, "tests", "data")
        self.build = os.path.join(ROOT, "build", "release")
        self.cli = os.path.join(self.build, "scratchplan")
        self.bench = os.path.join(self.build, "bench", "scratchplan_bench")
        self.quick = quick
        self.repetitions = 1 if quick else 3

    def run(self, args, **kw):
        return subprocess.run(args, capture_output=True, text=True, **kw)

    def gbench(self, pattern, repetitions):
        """Runs the Google Benchmark binary; returns {run_name: [one dict per repetition]}."""
        r = self.run([self.bench, f"--benchmark_filter={pattern}", "--benchmark_format=json",
                      f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=false"])
        rows = {}
        for b in json.loads(r.stdout)["benchmarks"]:
            if b.get("run_type") == "iteration":
                rows.setdefault(b["run_name"], []).append(b)
        return rows


def to_ms(b, key="real_time"):
    """A Google Benchmark time field in milliseconds."""
    return b[key] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]


def machine_line():
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, {datetime.date.today().isoformat()}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("modules", nargs="*")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    subprocess.run(["cmake", "--preset", "release"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "--preset", "release"], cwd=ROOT, check=True)
    ctx = Context(args.quick)
    bench_dir = os.path.join(ROOT, "bench")
    mods = sorted(f[len("tables_"):-3] for f in os.listdir(bench_dir) if f.startswith("tables_") and f.endswith(".py"))
    if args.modules:
        mods = [m for m in mods if m in args.modules]
    doc_path = os.path.join(ROOT, "docs", "benchmarks.md")
    doc = open(doc_path).read() if os.path.exists(doc_path) else "# Benchmarks\n"
    for m in mods:
        spec = importlib.util.spec_from_file_location(f"tables_{m}", os.path.join(bench_dir, f"tables_{m}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        print(f"== {m}", flush=True)
        body = mod.tables(ctx).rstrip() + f"\n\n_Measured on {machine_line()}._\n"
        block = f"<!-- BEGIN {m} -->\n{body}<!-- END {m} -->"
        pat = re.compile(rf"<!-- BEGIN {re.escape(m)} -->.*?<!-- END {re.escape(m)} -->", re.S)
        if pat.search(doc):
            doc = pat.sub(lambda _: block, doc)
        else:
            doc = doc.rstrip() + "\n\n" + block + "\n"
    tmp = doc_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(doc)
    os.replace(tmp, doc_path)
    print(f"wrote {doc_path}")


if __name__ == "__main__":
    sys.exit(main())
