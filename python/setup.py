"""Builds the korch package: the Python files, the extension korch._fast,
and libkorch.so next to them.

`pip install ./python` (from the korch repository) runs CMake on the
repository (the library target only) and bundles its libkorch.so into the
package, so the installed package needs nothing but the system libraries
scripts/install-deps.sh installs. It compiles korch/_fast*.c, the C
extension that makes InferenceSession.run one C call (it needs Python's
headers: python3-dev, which install-deps.sh installs); a failure to compile
it fails the install rather than leaving the slower ctypes path in place
unannounced. Environment:

  KORCH_SYSTEM_LIBRARY=1   bundle nothing: the package uses the installed
                           libkorch (pkg-config korch, `make install`) or
                           $KORCH_LIBRARY at run time
  KORCH_LIBRARY_FILE=PATH  bundle this libkorch.so instead of building one
  KORCH_CMAKE_ARGS="..."   extra CMake arguments for the build
  KORCH_NO_EXTENSION=1     do not build korch._fast: session.run goes
                           through ctypes (korch.fast_path is False)

The version is the C library's (CMakeLists.txt, read by version.py).
docs/python.md describes the wheel.
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
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


class BuildExtChecked(build_ext):
    """build_ext that says what is missing before the compiler does."""

    def run(self):
        include = sysconfig.get_paths().get("include") or ""
        if not os.path.exists(os.path.join(include, "Python.h")):
            raise SystemExit("korch setup: no Python.h in %s: korch._fast (the C run path) needs Python's headers; "
                             "install python3-dev (./scripts/install-deps.sh does), or set KORCH_NO_EXTENSION=1 for "
                             "the slower ctypes path" % (include or "this Python's include folder"))
        super().run()


WITH_EXTENSION = os.environ.get("KORCH_NO_EXTENSION") != "1"
# the repository's header (the extension calls the C API through function
# addresses from ctypes: it includes korch.h for the types, links nothing)
EXTENSIONS = [Extension("korch._fast", sources=["korch/_fast.c", "korch/_fast_run.c"],
                        include_dirs=[os.path.join(ROOT, "include")],
                        extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror"],
                        depends=["korch/_fast.h", os.path.join(ROOT, "include", "korch.h")])] if WITH_EXTENSION else []

cmdclass = {"build_py": BuildPyWithLibrary, "build_ext": BuildExtChecked}

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """The wheel holds korch._fast, built for this Python (cp311-cp311),
        and libkorch.so, tied to the platform and to the system libraries
        it links. Without the extension (KORCH_NO_EXTENSION=1) it is tied
        to the platform only (py3-none), or pure with KORCH_SYSTEM_LIBRARY=1."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = not WITH_EXTENSION and os.environ.get("KORCH_SYSTEM_LIBRARY") == "1"

        def get_tag(self):
            python, abi, plat = super().get_tag()
            if WITH_EXTENSION or self.root_is_pure:
                return python, abi, plat
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel

setup(version=korch_version(ROOT), cmdclass=cmdclass, ext_modules=EXTENSIONS)
