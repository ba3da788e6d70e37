"""`pip install .` for the shardflow Python package (docs/python.md, "Building and importing").

Offline, with Debian's packages only: the extension module is built by the project's CMake
(pybind11-dev, python3-dev and the C++ dependencies from scripts/bootstrap.sh), into
SHARDFLOW_CMAKE_BUILD_DIR (default build/, so a tree the README's build made is reused and only
what changed is rebuilt). There is no pyproject.toml on purpose: pip then builds with the
installed setuptools instead of downloading build tools into an isolated environment.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    """Builds the `_shardflow` target with CMake and copies the module where setuptools wants it."""

    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("SHARDFLOW_CMAKE_BUILD_DIR", os.path.join(ROOT, "build")))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            # A tree already configured (the README's build) is built as it was configured.
            configure = ["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                         f"-DPython_EXECUTABLE={os.path.realpath(sys.executable)}", "-DSHARDFLOW_PYTHON=ON"]
            subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        jobs = str(os.cpu_count() or 2)
        subprocess.run(["cmake", "--build", build_dir, "--target", "_shardflow", "--parallel", jobs], check=True)
        built = os.path.join(build_dir, "python", "shardflow", os.path.basename(self.get_ext_filename(ext.name)))
        if not os.path.exists(built):
            sys.exit(f"shardflow: {built} was not built: {build_dir} is configured for another Python than "
                     f"{sys.executable} (set SHARDFLOW_CMAKE_BUILD_DIR to a new folder)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


setup(
    name="shardflow",
    version="0.1.0",
    description="MindSpore's distributed-parallel training on shardflow's C++ actor runtime",
    package_dir={"": "python"},
    packages=["shardflow", "shardflow.common", "shardflow.communication", "shardflow.dataset",
              "shardflow.dataset.transforms", "shardflow.dataset.vision", "shardflow.nn", "shardflow.ops",
              "shardflow.train"],
    ext_modules=[Extension("shardflow._shardflow", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
