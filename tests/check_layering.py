#!/usr/bin/python3
"""The module layering holds (ctest `layering`): each module of src/ compiles against an include
view of itself and the modules it may use (CMakeLists.txt, SCRATCHPLAN_USES_<module>). For every
pair of modules this preprocesses `#include "<other>/<a header>"` with the module's view: it must
succeed exactly for the modules it may use. Also reads every #include of src/<module>: one of a
module it may not use is named with its file and line (the build would stop there too). And the
alloc engine's building blocks stay internal: outside src/alloc, only tests/ and bench/ may
include "alloc/internal/..." (other modules, the CLI, the Python bindings, fuzzers and tools use
its public headers).

  check_layering.py --compiler c++ --views build/release/module_views --src src \\
      --uses core= alloc=core ...
"""
import argparse
import os
import json
import re
import shlex
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--views", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--uses", nargs="+", required=True, help="module=dep;dep ...")
    ap.add_argument("--compile-commands", help="the build's compile_commands.json: each module's sources are "
                                               "compiled with its view only")
    a = ap.parse_args()
    uses = {}
    for item in a.uses:
        m, _, deps = item.partition("=")
        uses[m] = set(d for d in deps.split(";") if d)
    failures = []
    # 1. What each module's sources include.
    for m, allowed in uses.items():
        for root, _, files in os.walk(os.path.join(a.src, m)):
            for f in files:
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        inc = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                        if inc and inc.group(1) in uses and inc.group(1) != m and inc.group(1) not in allowed:
                            failures.append(f"{path}:{n}: module {m} includes {inc.group(1)}, which it may not use "
                                            f"(it may use: {', '.join(sorted(allowed)) or 'nothing'})")
    # 2. The views the build compiles each module with.
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.cpp")
        for m, allowed in uses.items():
            for other in uses:
                headers = sorted(h for h in os.listdir(os.path.join(a.src, other)) if h.endswith(".h"))
                if not headers:
                    continue
                with open(probe, "w") as fh:
                    fh.write(f'#include "{other}/{headers[0]}"\n')
                r = subprocess.run([a.compiler, "-std=c++20", "-E", "-o", os.devnull, "-I", os.path.join(a.views, m), probe],
                                   capture_output=True, text=True)
                may = other == m or other in allowed
                if may and r.returncode != 0:
                    failures.append(f"module {m} cannot include {other}/{headers[0]}, which it may use: "
                                    + (r.stderr.strip().splitlines() or [""])[0])
                if not may and r.returncode == 0:
                    failures.append(f"module {m} can include {other}/{headers[0]} though it may not use {other}")
    # 3. What the build really passes: a module's sources see its view and no other part of src/.
    if a.compile_commands:
        src = os.path.realpath(a.src)
        with open(a.compile_commands) as fh:
            entries = json.load(fh)
        seen = 0
        for e in entries:
            path = os.path.realpath(os.path.join(e.get("directory", ""), e["file"]))
            rel = os.path.relpath(path, src)
            m = rel.split(os.sep)[0]
            if rel.startswith("..") or m not in uses:
                continue
            seen += 1
            args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
            incs = [x[2:] if x != "-I" else None for x in args if x.startswith("-I")]
            incs += [args[i + 1] for i, x in enumerate(args[:-1]) if x in ("-I", "-isystem")]
            view = os.path.realpath(os.path.join(a.views, m))
            for inc in filter(None, incs):
                full = os.path.abspath(os.path.join(e.get("directory", ""), inc))
                if full.startswith(os.path.abspath(a.views)) and os.path.realpath(full) != view:
                    failures.append(f"{rel} is compiled with another module's view {inc}")
                elif os.path.realpath(full) == src or os.path.realpath(full).startswith(src + os.sep):
                    failures.append(f"{rel} is compiled with {inc}: every module is visible to it")
        if seen == 0:
            failures.append("no source of src/<module> in " + a.compile_commands)
    # 4. The alloc engine's internal headers: src/alloc, tests/ and bench/ only.
    root = os.path.dirname(os.path.abspath(a.src))
    for top in ("src", "python", "fuzz", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            if os.path.abspath(d).startswith(os.path.join(os.path.abspath(a.src), "alloc")):
                continue
            for f in files:
                if not f.endswith((".cpp", ".h", ".hpp", ".cc")):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        if re.match(r'\s*#\s*include\s+"alloc/internal/', line):
                            failures.append(f"{path}:{n}: includes an internal header of the alloc engine "
                                            "(use alloc/problem.h, solver.h, validator.h, io.h)")
    for f in failures:
        print(f)
    print(f"layering: {len(uses)} modules, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
