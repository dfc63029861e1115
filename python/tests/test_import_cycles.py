"""scripts/check_import_cycles.py: the scratchplan package has no import cycle, and the check finds
one when a package has it (module-level or inside a function)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "check_import_cycles.py")
PACKAGE = os.path.join(HERE, "..", "scratchplan")


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout


def write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def test_scratchplan_has_no_import_cycle():
    code, out = run(PACKAGE)
    assert code == 0, out
    assert "no import cycle" in out


def test_detects_a_module_level_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    write(str(pkg), {"__init__.py": "", "a.py": "from .b import f\n", "b.py": "from . import c\n",
                     "c.py": "import pkg.a\n", "d.py": "from .a import f\n"})
    code, out = run(str(pkg))
    assert code == 1
    assert "import cycle among 3 modules" in out and "pkg.a -> pkg.b" in out and "pkg.c -> pkg.a" in out
    assert "pkg.d" not in out  # imports into the cycle, not part of it


def test_detects_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pkg"
    write(str(pkg), {"__init__.py": "", "sub/__init__.py": "",
                     "sub/x.py": "def g():\n    from ..y import h\n    return h\n",
                     "y.py": "from .sub.x import g\n"})
    code, out = run(str(pkg))
    assert code == 1 and "pkg.sub.x -> pkg.y" in out


def test_parent_package_and_outside_imports_are_not_edges(tmp_path):
    pkg = tmp_path / "pkg"
    write(str(pkg), {"__init__.py": "from . import a\n", "a.py": "from . import _core\nimport os, numpy\n"})
    code, out = run(str(pkg))
    assert code == 0, out


def test_unparsable_module_is_one_line(tmp_path):
    pkg = tmp_path / "pkg"
    write(str(pkg), {"__init__.py": "", "bad.py": "def (:\n"})
    code, out = run(str(pkg))
    assert code == 2 and out.count("\n") == 1 and "bad.py:1: does not parse" in out
