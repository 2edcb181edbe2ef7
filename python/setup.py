"""Builds the korch package: the Python files, and libkorch.so next to them.

`pip install ./python` (from the korch repository) runs CMake on the
repository (the library target only) and bundles its libkorch.so into the
package, so the installed package needs nothing but the system libraries
scripts/install-deps.sh installs. Environment:

  KORCH_SYSTEM_LIBRARY=1   bundle nothing: the package uses the installed
                           libkorch (pkg-config korch, `make install`) or
                           $KORCH_LIBRARY at run time
  KORCH_LIBRARY_FILE=PATH  bundle this libkorch.so instead of building one
  KORCH_CMAKE_ARGS="..."   extra CMake arguments for the build

The version is the C library's (CMakeLists.txt, read by version.py).
docs/python.md describes the wheel.
"""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from version import korch_version  # noqa: E402

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: no wheels either
    bdist_wheel = None


def build_library(build_temp):
    """libkorch.so from the repository's CMake (Release, the library only)."""
    if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
        raise SystemExit("korch setup: no korch repository at %s to build libkorch.so from; set "
                         "KORCH_SYSTEM_LIBRARY=1 to use an installed libkorch (make install)" % ROOT)
    build = os.path.join(os.path.abspath(build_temp), "korch-cmake")
    configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"]
    configure += shlex.split(os.environ.get("KORCH_CMAKE_ARGS", ""))
    jobs = str(os.cpu_count() or 1)
    try:
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "--target", "korch", "-j", jobs], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("korch setup: building libkorch.so with CMake failed (%s); run ./scripts/install-deps.sh "
                         "first" % e)
    return os.path.join(build, "libkorch.so.0")


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if os.environ.get("KORCH_SYSTEM_LIBRARY") == "1":
            return
        src = os.environ.get("KORCH_LIBRARY_FILE") or build_library(self.get_finalized_command("build").build_temp)
        dst = os.path.join(self.build_lib, "korch", "libkorch.so.0")
        shutil.copyfile(os.path.realpath(src), dst)  # the file, not the symlink
        os.chmod(dst, 0o755)


cmdclass = {"build_py": BuildPyWithLibrary}

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """The wheel holds libkorch.so: tied to the platform (and to the
        system libraries it links), not to a Python version (ctypes)."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = os.environ.get("KORCH_SYSTEM_LIBRARY") == "1"

        def get_tag(self):
            python, abi, plat = super().get_tag()
            return ("py3", "none", plat) if not self.root_is_pure else (python, abi, plat)

    cmdclass["bdist_wheel"] = PlatformWheel

setup(version=korch_version(ROOT), cmdclass=cmdclass)
