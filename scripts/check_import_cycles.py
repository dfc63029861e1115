#!/usr/bin/env python3
"""Fails when the modules of a Python package import each other in a cycle.

Usage: check_import_cycles.py [PACKAGE_DIR]   (default: python/scratchplan of this repository)

Every ``import`` statement counts, at module level and inside functions alike: a deferred
(function-level) import hides the cycle from the interpreter's import order but not from the
reader, and it is how the cycles this check was written against were hidden. ``if
TYPE_CHECKING:`` blocks count too. An edge goes to the most specific module that exists in the
package (``from . import x`` to the submodule ``x`` when there is one, else to the package). An
import of one of the module's own parent packages adds no edge: the parents are initialised before
the module anyway, and what it takes from them is either a name their ``__init__`` defines or a
submodule this check cannot see (the compiled extension ``_core``). Imports of other packages are ignored.
Exit status 0 when acyclic, 1 with one line per cycle otherwise, 2 on a file that does not parse.
"""
from __future__ import annotations

import ast
import os
import sys


def modules(root):
    """{dotted name: path} for every .py file under the package folder `root`."""
    base = os.path.basename(os.path.normpath(root))
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join([base] + rel)] = os.path.join(d, f)
    return out


def imports(name, path, known):
    """The modules of `known` that module `name` (file `path`) imports, in order of appearance."""
    with open(path, encoding="utf-8") as f:
        try:
            tree = ast.parse(f.read(), path)
        except SyntaxError as e:
            print(f"{path}:{e.lineno}: does not parse: {e.msg}")
            sys.exit(2)
    is_pkg = os.path.basename(path) == "__init__.py"
    here = name if is_pkg else name.rpartition(".")[0]
    out = []

    def add(target):
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name and not name.startswith(target + "."):
            out.append(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                pkg = ".".join(parts[: len(parts) - (node.level - 1)])
                mod = f"{pkg}.{node.module}" if node.module else pkg
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                add(sub if sub in known else mod)
    return out


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                                      "scratchplan")
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        print(f"{root}: expected a package folder (with __init__.py)")
        return 2
    known = modules(root)
    graph = {m: sorted(set(imports(m, p, known))) for m, p in known.items()}
    found = cycles(graph)
    for comp in found:
        inside = set(comp)
        edges = "; ".join(f"{m} -> {', '.join(t for t in graph[m] if t in inside)}" for m in comp)
        print(f"import cycle among {len(comp)} modules: {edges}")
    if not found:
        print(f"{len(known)} modules, no import cycle")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
