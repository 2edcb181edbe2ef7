"""Element types: the ONNX TensorProto numbering korch uses (korch_dtype),
with NumPy's dtype and ONNX Runtime's type string for each."""
import numpy as np

# korch_dtype -> (numpy dtype or None, ONNX Runtime's NodeArg.type)
_TYPES = {
    1: (np.dtype(np.float32), "tensor(float)"),
    2: (np.dtype(np.uint8), "tensor(uint8)"),
    3: (np.dtype(np.int8), "tensor(int8)"),
    4: (np.dtype(np.uint16), "tensor(uint16)"),
    5: (np.dtype(np.int16), "tensor(int16)"),
    6: (np.dtype(np.int32), "tensor(int32)"),
    7: (np.dtype(np.int64), "tensor(int64)"),
    8: (None, "tensor(string)"),
    9: (np.dtype(np.bool_), "tensor(bool)"),
    10: (np.dtype(np.float16), "tensor(float16)"),
    11: (np.dtype(np.float64), "tensor(double)"),
    12: (np.dtype(np.uint32), "tensor(uint32)"),
    13: (np.dtype(np.uint64), "tensor(uint64)"),
    16: (None, "tensor(bfloat16)"),  # no NumPy dtype (docs/precision.md)
}


def numpy_dtype(code):
    return _TYPES.get(code, (None, None))[0]


def type_string(code):
    return _TYPES.get(code, (None, "tensor(undefined)"))[1]


def decode_name(raw):
    """Names from a model are untrusted bytes: decoded as UTF-8, and bytes
    that are not UTF-8 kept as surrogate escapes (os.fsdecode's convention),
    so the name still round-trips."""
    return raw.decode("utf-8", "surrogateescape")
