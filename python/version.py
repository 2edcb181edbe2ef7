"""The package's version is the C library's: CMakeLists.txt's
`project(korch VERSION x.y.z ...)`, the one place it is written (the
library reports it through korch_version(); korch.__version__ asks the
library). setup.py reads it here."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def korch_version(root=ROOT):
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        m = re.search(r"project\(korch\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not m:
        raise RuntimeError("no project(korch VERSION ...) in %s/CMakeLists.txt" % root)
    return m.group(1)
