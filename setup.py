"""Builds the extension amfgate._amfgate with the project's CMake (AMFGATE_PYTHON=ON) in
build/pip and packages it with python/amfgate. See pyproject.toml and docs/python.md."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
VERSION = re.search(r"project\(amfgate VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())[1]


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = ROOT / "build" / "pip"
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            "-DAMFGATE_PYTHON=ON", "-DAMFGATE_TESTS=OFF", "-DAMFGATE_BENCH=OFF",
            f"-DPython3_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "amfgate_python",
                               "-j", str(os.cpu_count() or 1)])
        built = next((build / "python" / "amfgate").glob("_amfgate*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


setup(
    version=VERSION,
    packages=["amfgate"],
    package_dir={"amfgate": "python/amfgate"},
    ext_modules=[Extension("amfgate._amfgate", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
