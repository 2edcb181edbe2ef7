"""Exceptions: one KorchError subclass per korch_status (include/korch.h).

Each carries the C library's message (naming the tensor, node or file at
fault) and the status name. Where a Python built-in means the same thing,
the class derives from it too, so `except ValueError` or `except OSError`
also catch korch's argument and file errors."""


class KorchError(Exception):
    """A korch call failed. .status is the korch_status name
    (e.g. "KORCH_ERR_INVALID_ARGUMENT"), str(e) the library's message."""

    status = "KORCH_ERR"

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __str__(self):
        return self.message


class InvalidArgumentError(KorchError, ValueError):
    status = "KORCH_ERR_INVALID_ARGUMENT"


class FileError(KorchError, OSError):
    status = "KORCH_ERR_IO"

    def __init__(self, message, status=None):
        KorchError.__init__(self, message, status)


class ParseError(KorchError):
    status = "KORCH_ERR_PARSE"


class InvalidModelError(KorchError):
    status = "KORCH_ERR_INVALID_MODEL"


class UnsupportedError(KorchError):
    status = "KORCH_ERR_UNSUPPORTED"


class ShapeError(KorchError):
    status = "KORCH_ERR_SHAPE"


class OutOfMemoryError(KorchError, MemoryError):
    status = "KORCH_ERR_OUT_OF_MEMORY"


class KorchRuntimeError(KorchError, RuntimeError):
    status = "KORCH_ERR_RUNTIME"


class InternalError(KorchError):
    status = "KORCH_ERR_INTERNAL"


# in korch_status order: the index is the status value
_BY_STATUS = [None, InvalidArgumentError, FileError, ParseError, InvalidModelError, UnsupportedError, ShapeError,
              OutOfMemoryError, KorchRuntimeError, InternalError]


def error_class(status):
    if 0 < status < len(_BY_STATUS):
        return _BY_STATUS[status]
    return KorchError


def raise_status(status, name, message):
    """name: korch_status_name (e.g. "I/O error"), used when the library left
    no message; .status is the enum's name."""
    name = name.decode() if isinstance(name, bytes) else name
    message = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    cls = error_class(status)
    raise cls(message or name, cls.status if cls is not KorchError else "korch_status %d" % status)
