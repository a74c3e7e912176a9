"""Helpers shared by the test node scripts (imported from their folder:
the host puts a script's folder on sys.path)."""
import ctypes
import json
import os


class _PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.py_object),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get = ctypes.pythonapi.PyObject_GetBuffer
_get.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get.restype = ctypes.c_int
_rel = ctypes.pythonapi.PyBuffer_Release
_rel.argtypes = [ctypes.POINTER(_PyBuffer)]
_rel.restype = None


def buffer_address(obj):
    """Where obj's bytes are, through CPython's buffer API directly (ctypes):
    a check that does not trust zflow.address."""
    b = _PyBuffer()
    if _get(obj, ctypes.byref(b), 0) != 0:
        raise BufferError("no buffer")
    try:
        return b.buf
    finally:
        _rel(ctypes.byref(b))


def write_summary(path, **values):
    """One line of JSON, replaced atomically (a reader never sees half)."""
    if path:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(values, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
