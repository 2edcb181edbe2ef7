"""korch.InferenceSession: ONNX Runtime's session interface over the C API's
korch_session (include/korch.h, docs/c-api.md, docs/python.md)."""
import ctypes
import os
import sys
import threading
import weakref

import numpy as np

from . import _lib
from ._errors import InvalidArgumentError, ShapeError, raise_status
from ._types import decode_name, numpy_dtype, type_string

_lib_ = _lib.lib
# korch._fast (_fast.c): run() as one C call. None when it is not built;
# korch.fast_path says which path sessions take, fast_path_info why
_fast, fast_path_info = _lib.load_fast()
# False: sessions created from now on take the ctypes path even with
# korch._fast built (the tests and bench/python compare the two)
_use_fast = True
_c_char = ctypes.c_char
_addressof = ctypes.addressof
_refs = sys.getrefcount
# an array held only by the session's pool: the pool's list slot, and
# getrefcount's own argument
_POOLED_ONLY = 2


def _address(out):
    """The data address of a writable array of at least one byte."""
    return _addressof(_c_char.from_buffer(out))


def _checked_feed(inputs, names, input_feed):
    """input_feed as a dict whose keys are the inputs' names (names, a
    frozenset), or the error that says which are unknown or missing."""
    try:
        keys = input_feed.keys()
    except AttributeError:
        raise InvalidArgumentError("run: input_feed must be a dict {name: array}, got %s"
                                   % type(input_feed).__name__) from None
    if keys != names:
        unknown = [k for k in input_feed if k not in names]
        missing = [a.name for a in inputs if a.name not in input_feed]
        parts = []
        if unknown:
            parts.append("no input named %s" % ", ".join(repr(k) for k in unknown))
        if missing:
            parts.append("input %s not given" % ", ".join(repr(k) for k in missing))
        raise InvalidArgumentError("run: %s; the inputs are %s" % ("; ".join(parts),
                                                                  ", ".join(repr(a.name) for a in inputs)))
    return input_feed if isinstance(input_feed, dict) else dict(input_feed)


def _output_error(outputs, index, output_names):
    """Raises the error naming the output names that are not the model's."""
    def known(n):
        try:
            return n in index
        except TypeError:  # unhashable
            return False
    try:
        bad = [n for n in output_names if not known(n)]
    except TypeError:
        raise InvalidArgumentError("run: output_names must be a list of names or None, got %s"
                                   % type(output_names).__name__) from None
    raise InvalidArgumentError("run: no output named %s; the outputs are %s"
                               % (", ".join(repr(n) for n in bad), ", ".join(repr(a.name) for a in outputs)))


class NodeArg:
    """An input or output, as ONNX Runtime's get_inputs() gives them: .name,
    .shape (list of ints), .type ("tensor(float)"); .dtype is NumPy's."""

    __slots__ = ("name", "shape", "type", "dtype")

    def __init__(self, name, shape, type_, dtype):
        self.name, self.shape, self.type, self.dtype = name, shape, type_, dtype

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _dim_text(name, d):
    """One dimension: 8 -> "8"; a list of values (shape buckets, for
    korch.optimize) [4, 8, 16] -> "{4,8,16}"."""
    if isinstance(d, (list, tuple, range)):
        if not d:
            raise InvalidArgumentError("input_shapes[%r]: an empty list of values for a dimension" % (name,))
        return "{%s}" % ",".join(str(int(v)) for v in d)
    return str(int(d))


def _shape_spec(input_shapes):
    """{"x": (1, 3, 224, 224)} -> b"x=1x3x224x224" (korch_session_options,
    korch_optimize_options). A shape may be a string in the C syntax
    ("1x3x224x224", or with shape buckets "1x{4,8,16}" and "1x{16..512}"),
    and a dimension a list of values: (1, [4, 8, 16]) is "1x{4,8,16}"."""
    if input_shapes is None:
        return None
    if isinstance(input_shapes, (str, bytes)):
        return os.fsencode(input_shapes) if isinstance(input_shapes, str) else input_shapes
    parts = []
    for name, dims in input_shapes.items():
        if ";" in name or "=" in name:
            raise InvalidArgumentError("input_shapes: the name %r cannot be given here (it holds ';' or '=')" % name)
        if isinstance(dims, str):
            if ";" in dims:
                raise InvalidArgumentError("input_shapes[%r]: %r is one shape (it holds ';')" % (name, dims))
            text = dims
        else:
            text = "x".join(_dim_text(name, d) for d in dims)
        parts.append("%s=%s" % (name, text))
    return ";".join(parts).encode("utf-8", "surrogateescape")


def _threads_arg(threads, what="threads"):
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidArgumentError("%s must be a positive int or None, got %r" % (what, threads))
    return threads


class InferenceSession:
    """Runs an ONNX model (korch's reference executor) or a plan made by
    korch.optimize / `korch optimize` (the chosen kernels).

        sess = korch.InferenceSession("model.plan")
        y, = sess.run(None, {"x": x})

    threads: OpenMP threads of each run (None: OpenMP's default, for a plan
    the plan's thread count). input_shapes: {"name": (1, 3, 224, 224)} fixes
    symbolic input dimensions of an ONNX model. providers and sess_options
    are accepted for drop-in use in ONNX Runtime code and ignored, except
    sess_options.intra_op_num_threads when threads is None.

    One session may be shared by threads: its runs take turns (the C
    session is not reentrant). Sessions run concurrently, with the GIL
    released during each run.

    A plan with shape buckets (korch optimize --input-shape 'x=1x{32,64}'):
    each run picks the bucket whose shapes equal the feed's (one C session
    per bucket, made at its first run); a feed no bucket matches is refused
    listing them. get_inputs() shows a dimension the buckets differ in as
    None. input_shapes= fixes one bucket instead."""

    _buckets = None  # a plan with shape buckets: [(shapes dict, spec bytes)]
    _runner = None  # korch._fast's runner of this session's C session (none for the bucket list itself)

    def __init__(self, path_or_plan, threads=None, input_shapes=None, providers=None, sess_options=None, **_ignored):
        if threads is None and sess_options is not None:
            threads = getattr(sess_options, "intra_op_num_threads", 0) or None
        self._path = os.fspath(path_or_plan)
        self._threads = _threads_arg(threads)
        spec = _shape_spec(input_shapes)
        model = ctypes.c_void_p()
        _lib.check_status(_lib_.korch_model_load(os.fsencode(self._path), ctypes.byref(model)))
        kept = False
        try:
            n = _lib_.korch_model_bucket_count(model)
            if n > 1 and spec is None:
                kept = self._open_buckets(model, n)
            else:
                self._open(model, spec)
        finally:
            if not kept:
                _lib_.korch_model_free(model)  # the session holds its own reference

    def _open(self, model, spec):
        opts = _lib.SessionOptions(self._threads, spec)
        handle = ctypes.c_void_p()
        _lib.check_status(_lib_.korch_session_create(model, ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle.value
        self._finalizer = weakref.finalize(self, _lib_.korch_session_destroy, self._handle)
        self._lock = threading.Lock()
        self._inputs = [self._info(_lib_.korch_session_input_info, i)
                        for i in range(_lib_.korch_session_input_count(self._handle))]
        self._outputs = [self._info(_lib_.korch_session_output_info, i)
                         for i in range(_lib_.korch_session_output_count(self._handle))]
        self._input_index = {a.name: i for i, a in enumerate(self._inputs)}
        self._in_names = [a.name for a in self._inputs]
        self._input_names = frozenset(self._in_names)
        self._output_index = {a.name: i for i, a in enumerate(self._outputs)}
        for a in self._outputs:
            if a.dtype is None:
                raise InvalidArgumentError("output \"%s\" is a %s: korch's Python binding has no NumPy type for it"
                                           % (a.name, a.type))
        # per input: (numpy dtype, shape tuple, bytes); per output: (dtype, shape, bytes)
        self._in_spec = [(a.dtype, tuple(a.shape), self._nbytes(a)) for a in self._inputs]
        self._out_spec = [(a.dtype, tuple(a.shape), self._nbytes(a)) for a in self._outputs]
        # the arrays bound to the C session's inputs: kept alive (the session
        # holds their pointers) and rebound only when a different array comes
        self._bound = [None] * len(self._inputs)
        # per output: the array bound to the C session now, and the one bound
        # before it. A run reuses whichever nobody else holds any more
        # (its reference count says so), so a loop that drops or replaces
        # its outputs allocates none and binds none: the Python side of a
        # run then touches a few cache lines instead of NumPy's allocator
        # and a ctypes call per output (bench/python/RESULTS.md, run 3)
        self._out_now = [None] * len(self._outputs)
        self._out_before = [None] * len(self._outputs)
        # the C path: these bindings and pools live in the runner instead
        self._runner = self._make_runner() if _fast is not None and _use_fast else None
        if self._runner is not None:
            # the runner owns the C session now: it may outlive this object
            # (a caller can keep sess.run alone), so it destroys it
            self._finalizer.detach()
            # run is the runner's C method itself: no Python frame between
            # the caller and the C call (3-4 us after a MobileNetV2 run has
            # evicted the interpreter; bench/python/RESULTS.md, run 4)
            self.run = self._runner.run

    def _make_runner(self):
        """korch._fast.Runner over this session: the C API's functions by
        address, each input's (name, kind, item size, shape, bytes), each
        output's numpy.empty arguments, and the Python helpers that raise
        this module's errors (so both paths say the same)."""
        inputs, outputs, out_index = self._inputs, self._outputs, self._output_index
        names = self._input_names

        def conform(i, value):
            return InferenceSession._conform(inputs[i], value)

        def feed_check(feed):
            return _checked_feed(inputs, names, feed)

        def output_error(output_names):
            _output_error(outputs, out_index, output_names)

        fns = tuple(_lib.function_address(n) for n in ("korch_session_set_input", "korch_session_set_output",
                                                       "korch_session_run", "korch_last_error",
                                                       "korch_status_name", "korch_session_destroy"))
        # an input without a NumPy dtype gets kind "x", which no buffer has:
        # conform() then names it
        in_specs = [(a.name, a.dtype.kind if a.dtype is not None else "x", a.dtype.itemsize if a.dtype is not None
                     else 0, shape, nbytes) for a, (_, shape, nbytes) in zip(inputs, self._in_spec)]
        out_specs = [(shape, dtype, nbytes) for dtype, shape, nbytes in self._out_spec]
        helpers = (np.empty, conform, feed_check, output_error, raise_status, InvalidArgumentError)
        return _fast.Runner(self._handle, fns, in_specs, out_specs, dict(out_index), helpers)

    def _bound_inputs(self):
        """Per input, the caller's array bound zero-copy now, or None (tests)."""
        return self._runner.bound_inputs() if self._runner is not None else list(self._bound)

    def _open_buckets(self, model, n):
        """A plan with shape buckets: the bucket list, and the first bucket's
        session (names, dtypes) made now; the others at their first run."""
        self._buckets = []
        for b in range(n):
            text = ctypes.c_char_p()
            _lib.check_status(_lib_.korch_model_bucket_shapes(model, b, ctypes.byref(text)))
            shapes = {}
            for part in text.value.split(b";"):
                name, _, dims = part.rpartition(b"=")
                shapes[decode_name(name)] = () if dims == b"scalar" else tuple(int(d) for d in dims.split(b"x"))
            self._buckets.append((shapes, text.value))
        # kept (mapped once) until close: the buckets' sessions are made from it
        self._model = model.value
        self._model_finalizer = weakref.finalize(self, _lib_.korch_model_free, self._model)
        first = self._child(0, model)
        self._children = {0: first}
        self._lock = threading.Lock()
        self._handle = None
        self._inputs = []
        for a in first._inputs:
            dims = [a.shape[d] if all(a.name in s and len(s[a.name]) == len(a.shape) and s[a.name][d] == a.shape[d]
                                      for s, _ in self._buckets) else None for d in range(len(a.shape))]
            self._inputs.append(NodeArg(a.name, dims, a.type, a.dtype))
        self._outputs = [NodeArg(a.name, [None] * len(a.shape), a.type, a.dtype) if n > 1 else a
                         for a in first._outputs]
        self._input_names = first._input_names
        return True

    def _child(self, index, model):
        child = InferenceSession.__new__(InferenceSession)
        child._path, child._threads = self._path, self._threads
        child._open(model, self._buckets[index][1])
        return child

    def _run_bucket(self, output_names, input_feed):
        try:
            shapes = {k: np.shape(v) for k, v in input_feed.items()}
        except AttributeError:
            raise InvalidArgumentError("run: input_feed must be a dict {name: array}, got %s"
                                       % type(input_feed).__name__) from None
        for b, (want, spec) in enumerate(self._buckets):
            if all(shapes.get(k) == v for k, v in want.items()):
                break
        else:
            given = ";".join("%s=%s" % (k, "x".join(map(str, v))) for k, v in shapes.items())
            raise ShapeError("run: plan %r has no shape bucket for %s; its buckets are %s (inputs must "
                                       "match a bucket exactly: korch does not pad to a larger one)"
                                       % (self._path, given, ", ".join(s.decode("utf-8", "replace")
                                                                        for _, s in self._buckets)))
        with self._lock:
            if self._children is None:
                raise InvalidArgumentError("run: the session is closed")
            child = self._children.get(b)
            if child is None:
                child = self._children[b] = self._child(b, ctypes.c_void_p(self._model))
        return child.run(output_names, input_feed)

    def _info(self, fn, index):
        info = _lib.TensorInfo()
        _lib.check_status(fn(self._handle, index, ctypes.byref(info)))
        return NodeArg(decode_name(info.name), [int(info.dims[d]) for d in range(info.rank)], type_string(info.dtype),
                       numpy_dtype(info.dtype))

    @staticmethod
    def _nbytes(arg):
        n = 1
        for d in arg.shape:
            n *= d
        return n * (arg.dtype.itemsize if arg.dtype is not None else 0)

    # ---- ONNX Runtime's interface ----------------------------------------
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["KorchExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        """Runs once; returns the outputs named (None: all, in model order)
        as NumPy arrays the session will not write again while they (or a
        view of them) are held. Inputs are bound without a copy when they
        are C-contiguous arrays of the input's dtype and shape (anything
        else array-like is copied into one); the dtype and shape must be the
        model's (no conversion, as in ONNX Runtime). One C call
        (korch._fast) when the extension is built: korch.fast_path."""
        if self._buckets is not None:
            return self._run_bucket(output_names, input_feed)
        runner = self._runner
        if runner is not None:
            return runner.run(output_names, input_feed)
        return self._run_ctypes(output_names, input_feed)

    def _run_ctypes(self, output_names, input_feed):
        """run() without korch._fast: the same steps in Python, each C call
        through ctypes."""
        _checked_feed(self._inputs, self._input_names, input_feed)
        copies = None  # inputs converted here: alive until the run is over
        with self._lock:
            h = self._handle
            if h is None:
                raise InvalidArgumentError("run: the session is closed")
            bound, names = self._bound, self._in_names
            for i in range(len(names)):
                arr = input_feed[names[i]]
                if arr is bound[i] and arr is not None:  # (None is an empty slot, not a feed)
                    continue  # bound already; its data may have changed, its address has not
                dtype, shape, nbytes = self._in_spec[i]
                if type(arr) is not np.ndarray or arr.dtype != dtype or arr.shape != shape \
                        or not arr.flags.c_contiguous:
                    arr = self._conform(self._inputs[i], arr)
                bound[i] = None
                _lib.check_status(_lib_.korch_session_set_input(h, i, arr.__array_interface__["data"][0], nbytes))
                if arr is input_feed[names[i]]:
                    bound[i] = arr
                else:
                    copies = (copies or []) + [arr]  # rebound on the next run
            now, before = self._out_now, self._out_before
            for i in range(len(now)):
                if now[i] is not None and _refs(now[i]) == _POOLED_ONLY:
                    continue  # bound, and nobody else holds it: written again in place
                if before[i] is not None and _refs(before[i]) == _POOLED_ONLY:
                    now[i], before[i] = before[i], now[i]  # the older one is free: bind it
                else:
                    dtype, shape, nbytes = self._out_spec[i]
                    before[i] = now[i]
                    now[i] = np.empty(shape, dtype)
                out = now[i]
                # the address through ctypes' buffer view: cheaper than
                # out.ctypes.data (numpy's Python-level _ctypes), which
                # counts when the model's run has evicted the caches
                nbytes = self._out_spec[i][2]
                addr = _address(out) if nbytes else out.__array_interface__["data"][0]
                status = _lib_.korch_session_set_output(h, i, addr, nbytes)
                if status:
                    _lib.check_status(status)
            _lib.check_status(_lib_.korch_session_run(h))
            results = list(now)
        if output_names is None:
            return results
        try:
            return [results[self._output_index[n]] for n in output_names]
        except (KeyError, TypeError):
            _output_error(self._outputs, self._output_index, output_names)

    @staticmethod
    def _conform(arg, value):
        """A C-contiguous array of the input's dtype and shape, or an error
        naming the input. Copies only for layout (and non-array values)."""
        arr = np.asarray(value)
        if arr.dtype != arg.dtype:
            if arg.dtype is None:
                raise InvalidArgumentError("input \"%s\" is a %s: korch's Python binding cannot bind it"
                                           % (arg.name, arg.type))
            raise InvalidArgumentError("input \"%s\" expects %s (%s), got %s" % (arg.name, arg.type, arg.dtype,
                                                                                  arr.dtype))
        if list(arr.shape) != arg.shape:
            raise InvalidArgumentError("input \"%s\" expects shape %s, got %s" % (arg.name, tuple(arg.shape),
                                                                                 tuple(arr.shape)))
        return np.ascontiguousarray(arr)

    # ---- lifetime ----------------------------------------------------------
    def close(self):
        """Releases the session now (otherwise when it is garbage)."""
        if self._buckets is not None:
            with self._lock:
                for child in (self._children or {}).values():
                    child.close()
                self._children = None
                self._model_finalizer()
            return
        if self._runner is not None:
            self._runner.close()  # waits for a run in progress; runs nothing after
        with self._lock:
            self._finalizer()
            self._handle = None
            self._bound = [None] * len(self._inputs)
        self._out_now = [None] * len(self._outputs)
        self._out_before = [None] * len(self._outputs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "korch.InferenceSession(%r, inputs=%r, outputs=%r)" % (self._path, self._inputs, self._outputs)
