"""Installation, offline: ``pip install --no-build-isolation .`` into a fresh venv (Debian's
setuptools backend; pyproject.toml + setup.py driving CMake) and ``cmake --install`` (library,
headers, CMake package config, CLI, Python package), each used from outside the source tree.

The pip test reuses the release build tree (SCRATCHPLAN_BUILD_DIR) so CI compiles the library
once; SCRATCHPLAN_TEST_FULL_INSTALL=1 makes it configure and build from scratch as a user's
install does (several minutes on 2 cores)."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD, ROOT

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
CHECK = ("import scratchplan as sp, sys; r = sp.alloc.pack([4, 4], [0, 0], [1, 1]); "
         "assert r.height == 8, r; "
         "assert sp.lx.plan(sp.program.example(sp.program.example_names()[0]), cores=2, time_limit=0.2).hbm_bytes >= 0; "
         "print(sp.__file__)")


def clean_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return env


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=1800, **kw)
    assert r.returncode == 0, f"{args}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def test_pip_install_in_a_venv(tmp_path):
    venv = tmp_path / "venv"
    run([PY, "-m", "venv", "--system-site-packages", str(venv)])
    env = clean_env()
    if os.environ.get("SCRATCHPLAN_TEST_FULL_INSTALL") != "1":
        env["SCRATCHPLAN_BUILD_DIR"] = BUILD
    run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", "--no-deps", "-q", ROOT],
        env=env, cwd=str(tmp_path))
    out = run([str(venv / "bin" / "python"), "-c", CHECK], env=clean_env(), cwd=str(tmp_path))
    assert out.stdout.strip().startswith(str(venv)), out.stdout  # the installed copy, not the tree
    # type stubs and the marker ship with the package
    pkg = os.path.dirname(out.stdout.strip())
    assert os.path.exists(os.path.join(pkg, "py.typed"))
    run([str(venv / "bin" / "pip"), "uninstall", "-y", "-q", "scratchplan"], env=clean_env())


def test_cmake_install_and_find_package(tmp_path):
    prefix = tmp_path / "prefix"
    run(["cmake", "--install", BUILD, "--prefix", str(prefix)])
    cli = prefix / "bin" / "scratchplan"
    assert cli.exists() and (prefix / "bin" / "mlsys").exists()
    for module in ("core", "alloc", "layout", "program", "workdiv", "mlsys", "nki", "lx"):  # one library per module
        assert glob.glob(str(prefix / "lib*" / f"libscratchplan_{module}.a")), module
    assert (prefix / "include" / "scratchplan" / "alloc" / "solver.h").exists()
    assert glob.glob(str(prefix / "lib*" / "cmake" / "scratchplan" / "scratchplanConfig.cmake"))
    r = run([str(cli), "layout", "--size", "5,100,150", "--dtype", "fp16", "--json"], cwd=str(tmp_path))
    assert '"device_size"' in r.stdout
    # The Python package from the prefix.
    site = glob.glob(str(prefix / "lib" / "python3*" / "*-packages"))
    assert site, os.listdir(prefix / "lib")
    env = clean_env()
    env["PYTHONPATH"] = site[0]
    out = run([PY, "-c", CHECK], env=env, cwd=str(tmp_path))
    assert out.stdout.strip().startswith(site[0])
    # A C++ project that finds the installed library.
    proj = tmp_path / "consumer"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.25)
        project(consumer LANGUAGES CXX)
        set(CMAKE_CXX_STANDARD 20)
        find_package(scratchplan REQUIRED)
        add_executable(consumer main.cpp)
        target_link_libraries(consumer PRIVATE scratchplan::scratchplan)
        """))
    (proj / "main.cpp").write_text(textwrap.dedent("""\
        #include <iostream>
        #include "alloc/solver.h"
        int main() {
          sp::alloc::Problem p;
          p.capacity = 100;
          for (int i = 0; i < 3; ++i) {
            sp::alloc::Buffer b;
            b.id = std::to_string(i); b.size = 10 * (i + 1); b.start = i; b.end = i + 3;
            p.buffers.push_back(b);
          }
          auto r = sp::alloc::solve(p, sp::alloc::SolveOptions{});
          if (!r) return 1;
          std::cout << r->height << "\\n";
          return r->feasible ? 0 : 1;
        }
        """))
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", "-S", str(proj), "-B", str(proj / "build"), f"-DCMAKE_PREFIX_PATH={prefix}", *gen])
    run(["cmake", "--build", str(proj / "build")])
    out = run([str(proj / "build" / "consumer")])
    assert out.stdout.strip() == "60"
