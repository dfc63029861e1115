"""Build step of ``pip install .``: compiles the extension scratchplan._core with CMake (the same
CMakeLists as every other build: the library plus python/bindings), then lets setuptools package
it with the pure-Python files of python/scratchplan. Metadata lives in pyproject.toml.

Environment: SCRATCHPLAN_CMAKE_ARGS (extra configure arguments), CMAKE_BUILD_PARALLEL_LEVEL
(default 2), CMAKE_CXX_COMPILER_LAUNCHER (e.g. ccache) are honoured. SCRATCHPLAN_BUILD_DIR=DIR
reuses an existing configured CMake tree (e.g. build/release) instead of configuring a new one:
only the extension target is brought up to date there (the pytest of the install uses it so CI
does not compile the library twice).
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        reuse = os.environ.get("SCRATCHPLAN_BUILD_DIR")
        build = os.path.abspath(reuse or os.path.join(self.build_temp, "cmake"))
        os.makedirs(build, exist_ok=True)
        if not reuse:
            self.configure(build)
        env = dict(os.environ)
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.run(["cmake", "--build", build, "--target", "scratchplan_core"], check=True, env=env)
        built = os.path.join(build, "python", "scratchplan")
        so = [f for f in os.listdir(built) if f.startswith("_core") and f.endswith((".so", ".pyd"))]
        if not so:
            raise RuntimeError(f"CMake built no extension in {built} (are python3-dev and pybind11-dev installed?)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, so[0]), target)

    def configure(self, build):
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython3_EXECUTABLE={sys.executable}", "-DSCRATCHPLAN_TESTS=OFF",
                     "-DSCRATCHPLAN_BENCH=OFF", "-DSCRATCHPLAN_PYTHON=ON"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("SCRATCHPLAN_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)


setup(ext_modules=[Extension("scratchplan._core", sources=[])], cmdclass={"build_ext": CMakeBuild})
