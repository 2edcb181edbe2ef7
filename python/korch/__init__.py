"""korch from Python: run ONNX models and korch plans, and optimise models.

    import korch
    report = korch.optimize("model.onnx", "model.plan")    # korch optimize
    sess = korch.InferenceSession("model.plan")             # ONNX Runtime's interface
    outputs = sess.run(None, {"input": x})

A thin layer over the C library's public API (include/korch.h) through
ctypes, with session.run in one C call by the extension korch._fast when it
is built (korch.fast_path says so): nothing is implemented twice.
docs/python.md is the reference.
"""
from ._errors import (FileError, InternalError, InvalidArgumentError, InvalidModelError, KorchError,
                      KorchRuntimeError, OutOfMemoryError, ParseError, ShapeError, UnsupportedError)
from ._lib import library_path, library_version
from . import session
from .session import InferenceSession, NodeArg, fast_path_info
from .tools import OptimizeReport, check, info, optimize

# One source of truth: the C library's version (CMakeLists.txt's project
# VERSION, compiled in); setup.py gives the package the same number.
__version__ = library_version()

# True: InferenceSession.run is one C call (the extension korch._fast, built
# by `pip install ./python` and `make build`); False: the ctypes fallback,
# about 45 us slower per call after a MobileNetV2 run (bench/python/RESULTS.md).
# fast_path_info: the extension's file, or why it is not used.
fast_path = session._fast is not None

__all__ = ["InferenceSession", "NodeArg", "optimize", "OptimizeReport", "check", "info", "KorchError",
           "InvalidArgumentError", "FileError", "ParseError", "InvalidModelError", "UnsupportedError", "ShapeError",
           "OutOfMemoryError", "KorchRuntimeError", "InternalError", "library_path", "library_version",
           "fast_path", "fast_path_info", "__version__"]
