"""korch from Python: run ONNX models and korch plans, and optimise models.

    import korch
    report = korch.optimize("model.onnx", "model.plan")    # korch optimize
    sess = korch.InferenceSession("model.plan")             # ONNX Runtime's interface
    outputs = sess.run(None, {"input": x})

A thin layer over the C library's public API (include/korch.h) through
ctypes: nothing is implemented twice. docs/python.md is the reference.
"""
from ._errors import (FileError, InternalError, InvalidArgumentError, InvalidModelError, KorchError,
                      KorchRuntimeError, OutOfMemoryError, ParseError, ShapeError, UnsupportedError)
from ._lib import library_path, library_version
from .session import InferenceSession, NodeArg
from .tools import OptimizeReport, check, info, optimize

# One source of truth: the C library's version (CMakeLists.txt's project
# VERSION, compiled in); setup.py gives the package the same number.
__version__ = library_version()

__all__ = ["InferenceSession", "NodeArg", "optimize", "OptimizeReport", "check", "info", "KorchError",
           "InvalidArgumentError", "FileError", "ParseError", "InvalidModelError", "UnsupportedError", "ShapeError",
           "OutOfMemoryError", "KorchRuntimeError", "InternalError", "library_path", "library_version",
           "__version__"]
