"""Loads libkorch.so and declares the C API (include/korch.h) for ctypes.

Only the public API is used. ctypes.CDLL releases the GIL around every
foreign call, so korch_session_run and korch_optimize run while other Python
threads continue; the log callback of korch_optimize takes the GIL back
(ctypes callbacks do so themselves).

korch._fast (_fast.c), the C extension that runs InferenceSession.run in one
C call, is loaded here too (load_fast); it calls the functions of the library
loaded here, whose addresses it is given.

Where the library comes from, first match wins:
  1. $KORCH_LIBRARY, a path to libkorch.so (tests, development trees);
  2. the copy `pip install ./python` bundled next to this file;
  3. pkg-config's korch (`make install`), then the dynamic loader's search.
"""
import ctypes
import ctypes.util
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings
import subprocess

from ._errors import raise_status

KORCH_MAX_RANK = 8


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * KORCH_MAX_RANK)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("input_shapes", ctypes.c_char_p)]


LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


class OptimizeOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("strategy", ctypes.c_char_p), ("db_path", ctypes.c_char_p),
                ("budget_s", ctypes.c_double), ("input_shapes", ctypes.c_char_p), ("log", LOG_CALLBACK),
                ("log_user", ctypes.c_void_p), ("progress_bar", ctypes.c_int), ("time_limit_s", ctypes.c_double),
                ("estimate", ctypes.c_int), ("no_embed", ctypes.c_int), ("precision", ctypes.c_char_p)]


class OptimizeReport(ctypes.Structure):
    _fields_ = [("strategy", ctypes.c_char * 16), ("predicted_ms", ctypes.c_double), ("kernels", ctypes.c_int),
                ("fused_kernels", ctypes.c_int), ("primitives", ctypes.c_int), ("seconds", ctypes.c_double)]


def _candidates():
    env = os.environ.get("KORCH_LIBRARY")
    if env:
        yield env
        return  # an explicit choice is not second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libkorch.so.0")
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "korch"], capture_output=True, text=True,
                                check=True).stdout.strip()
        if libdir:
            yield os.path.join(libdir, "libkorch.so.0")
    except (OSError, subprocess.CalledProcessError):
        pass
    found = ctypes.util.find_library("korch")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("korch: libkorch.so not found; tried: %s. Install the package with `pip install ./python` "
                      "from the korch repository, run `make install`, or set KORCH_LIBRARY to the library's path"
                      % ("; ".join(tried) or "nothing"))


lib = _load()

_P = ctypes.c_void_p
_STATUS = ctypes.c_int


def _declare(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_declare("korch_last_error", ctypes.c_char_p)
_declare("korch_status_name", ctypes.c_char_p, ctypes.c_int)
_declare("korch_version", ctypes.c_char_p)
_declare("korch_model_load", _STATUS, ctypes.c_char_p, ctypes.POINTER(_P))
_declare("korch_model_free", None, _P)
_declare("korch_model_bucket_count", ctypes.c_int, _P)
_declare("korch_model_bucket_shapes", _STATUS, _P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p))
_declare("korch_session_create", _STATUS, _P, ctypes.POINTER(SessionOptions), ctypes.POINTER(_P))
_declare("korch_session_destroy", None, _P)
_declare("korch_session_input_count", ctypes.c_int, _P)
_declare("korch_session_output_count", ctypes.c_int, _P)
_declare("korch_session_input_info", _STATUS, _P, ctypes.c_int, ctypes.POINTER(TensorInfo))
_declare("korch_session_output_info", _STATUS, _P, ctypes.c_int, ctypes.POINTER(TensorInfo))
_declare("korch_session_set_input", _STATUS, _P, ctypes.c_int, _P, ctypes.c_size_t)
_declare("korch_session_set_output", _STATUS, _P, ctypes.c_int, _P, ctypes.c_size_t)
_declare("korch_session_run", _STATUS, _P)
_declare("korch_optimize", _STATUS, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(OptimizeOptions),
         ctypes.POINTER(OptimizeReport))
# the JSON string is freed by the library: declared as a pointer, not c_char_p
_declare("korch_model_describe", _STATUS, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_P))
_declare("korch_string_free", None, _P)


def check_status(status):
    """Raises the KorchError subclass of a failed call, with the library's
    message (read right after the call: the message is per thread)."""
    if status != 0:
        raise_status(status, lib.korch_status_name(status), lib.korch_last_error())


def library_version():
    return lib.korch_version().decode()


def library_path():
    return lib._name


# korch._fast's constructor version (KORCH_FAST_PROTOCOL in _fast.c)
FAST_PROTOCOL = 1


def _fast_from_path(path):
    loader = importlib.machinery.ExtensionFileLoader("korch._fast", path)
    spec = importlib.util.spec_from_file_location("korch._fast", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["korch._fast"] = module
    return module


def load_fast():
    """(module, detail): korch._fast and the file it came from, or (None,
    why not). First match wins: $KORCH_FAST_MODULE (a path; the tests and
    development trees set it, and a failure to load it is an error), then
    the module `pip install ./python` built into the package. Without it
    session.run goes through ctypes (the fallback, about 45 us slower per
    call on MobileNetV2: bench/python/RESULTS.md)."""
    path = os.environ.get("KORCH_FAST_MODULE")
    try:
        if path:
            try:
                module = _fast_from_path(path)
            except (ImportError, OSError) as e:
                raise ImportError("korch: KORCH_FAST_MODULE=%s cannot be loaded: %s" % (path, e)) from None
        else:
            # import_module, not `from . import _fast`: inside the package's own
            # import, a missing submodule then raises ModuleNotFoundError
            # naming it, not an ImportError about a "partially initialized
            # module" that read like a circular import
            module = importlib.import_module(".._fast", __name__)
    except ModuleNotFoundError as e:
        if path or e.name != "korch._fast":
            raise
        return None, "korch._fast is not built: session.run goes through ctypes (docs/python.md)"
    except ImportError as e:
        if path:
            raise
        # built, but not for this Python or this platform: said aloud
        why = "korch._fast cannot be loaded (%s): session.run goes through ctypes (docs/python.md)" % e
        warnings.warn(why, RuntimeWarning, stacklevel=3)
        return None, why
    if getattr(module, "PROTOCOL", None) != FAST_PROTOCOL:
        raise ImportError("korch: %s is korch._fast protocol %s, this package needs %d: rebuild it (pip install "
                          "./python, or make build)" % (module.__file__, getattr(module, "PROTOCOL", None),
                                                        FAST_PROTOCOL))
    return module, module.__file__


def function_address(name):
    """The address of one of the library's functions (for korch._fast)."""
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
