"""zflow: nodes of a zflow dataflow, written in Python.

Inside the runtime, `import zflow` is the module of the Python host
(libzflow-python.so): capsules are the runtime's, views are zero-copy. This
package is what `import zflow` finds everywhere else -- a plain `python3`,
a test runner, a type checker -- so that a node script imports, and can be
unit-tested with zflow.testing.Harness. It has the same names and the same
rules (read-only received data, send() gives a writable capsule up, a sent
capsule cannot be written); its capsules are ordinary Python memory.
"""

import ctypes as _ctypes
import sys as _sys
import time as _time

from zflow._support import DEBUG, ERROR, INFO, TRACE, WARN, Error, Node  # noqa: F401


def _source_version():
    """The version in a source checkout: include/zflow/version.h, the one
    place it is written (an installed package has zflow/_version.py, made
    from the same header by CMake)."""
    import pathlib
    import re

    header = pathlib.Path(__file__).resolve().parents[3] / "include" / "zflow" / "version.h"
    try:
        text = header.read_text()
    except OSError:
        return "unknown"
    parts = [re.search(r"^#define ZF_VERSION_%s +(\d+)$" % p, text, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts) if all(parts) else "unknown"


try:
    from zflow._version import __version__
except ImportError:
    __version__ = _source_version()
__all__ = [
    "Capsule",
    "Context",
    "Node",
    "Error",
    "keep",
    "writable",
    "address",
    "ERROR",
    "WARN",
    "INFO",
    "DEBUG",
    "TRACE",
]


class Capsule(bytearray):
    """A capsule outside the runtime: its bytes (a bytearray) and metadata.

    memoryview(capsule) reads it in place. In the runtime a Capsule is a
    reference to a pool block; here it owns its bytes."""

    def __init__(self, data=b"", seq=0, timestamp=None, writable=False):
        super().__init__(data)
        self.seq = seq
        self.timestamp = _time.monotonic_ns() if timestamp is None else timestamp
        self.readonly = not writable
        self.released = False

    @property
    def address(self):
        return address(self)

    @property
    def refcount(self):
        return 0 if self.released else 1

    def release(self):
        """Give this capsule up. Its bytes are dropped when no view of them
        is left (outside the runtime they were copied where they went)."""
        self.released = True
        self.readonly = True
        try:
            del self[:]  # nothing can write or read what was sent
        except BufferError:
            pass  # views still hold the bytes: they stay as they are

    def __buffer__(self, flags):  # Python 3.12+: no new view once released
        if self.released:
            raise ValueError(
                "this zflow capsule was released (sent, or released by its holder): its bytes "
                "are no longer accessible"
            )
        return super().__buffer__(flags)

    def keep(self):
        return keep(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        if self.released:
            return "<zflow.Capsule (released)>"
        return f"<zflow.Capsule {len(self)} bytes, seq {self.seq}{', writable' if not self.readonly else ''}>"


# ---- CPython's buffer bookkeeping, read through ctypes (3.8 .. 3.12) ----
# How many views a bytearray has exported, and what a memoryview has: the
# same checks the runtime's host makes before giving a writable capsule up.

_P = _ctypes.sizeof(_ctypes.c_void_p)


class _PyBuffer(_ctypes.Structure):
    _fields_ = [
        ("buf", _ctypes.c_void_p),
        ("obj", _ctypes.c_void_p),
        ("len", _ctypes.c_ssize_t),
        ("itemsize", _ctypes.c_ssize_t),
        ("readonly", _ctypes.c_int),
        ("ndim", _ctypes.c_int),
        ("format", _ctypes.c_char_p),
        ("shape", _ctypes.c_void_p),
        ("strides", _ctypes.c_void_p),
        ("suboffsets", _ctypes.c_void_p),
        ("internal", _ctypes.c_void_p),
    ]


# Prototypes of our own (ctypes.pythonapi.X is one object shared with any
# other user, who may set other argtypes on it).
_get_buffer = _ctypes.PYFUNCTYPE(
    _ctypes.c_int, _ctypes.py_object, _ctypes.POINTER(_PyBuffer), _ctypes.c_int
)(("PyObject_GetBuffer", _ctypes.pythonapi))
_release_buffer = _ctypes.PYFUNCTYPE(None, _ctypes.POINTER(_PyBuffer))(
    ("PyBuffer_Release", _ctypes.pythonapi)
)


def _ssize_at(addr):
    return _ctypes.c_ssize_t.from_address(addr).value


def _bytearray_exports(b):
    # PyByteArrayObject: PyObject_VAR_HEAD, ob_alloc, ob_bytes, ob_start, ob_exports
    return _ssize_at(id(b) + 3 * _P + 3 * _P)


def _memoryview_exports(mv):
    # PyMemoryViewObject: PyObject_VAR_HEAD, mbuf, hash, flags (int), exports
    base = id(mv)
    mbuf = _ctypes.c_void_p.from_address(base + 3 * _P).value
    own = _ssize_at(base + 6 * _P)
    # _PyManagedBufferObject: PyObject_HEAD, flags (int), exports
    views = _ssize_at(mbuf + 3 * _P) if mbuf else 1
    return own, views


def address(obj):
    """Where a buffer's bytes are (an int); no copy is made."""
    b = _PyBuffer()
    if _get_buffer(obj, _ctypes.byref(b), 0) != 0:
        raise TypeError(f"a bytes-like object is required, not '{type(obj).__name__}'")
    try:
        return b.buf
    finally:
        _release_buffer(_ctypes.byref(b))


def _capsule_of(obj):
    """(capsule, view) when obj is a Capsule or a view of one, else (None, None)."""
    if isinstance(obj, Capsule):
        return obj, None
    if isinstance(obj, memoryview) and isinstance(obj.obj, Capsule):
        return obj.obj, obj
    return None, None


def _writable_alone(cap, view):
    """A writable capsule is given up only when nothing else can write it."""
    if cap.readonly:
        return
    others = _bytearray_exports(cap)
    if view is not None:
        own, views = _memoryview_exports(view)
        others += own + views - 2
    if others > 0:
        raise BufferError(
            f"cannot send this capsule: {others} other view(s) of it (a slice, a memoryview, a "
            "NumPy array...) can still write it, and a sent capsule must be read-only for its "
            "sender; delete them (or call .release() on them) before send()"
        )


def _take(obj, give_up):
    """The bytes that `send(port, obj)` sends, and give the Python side up as
    the runtime does (a writable capsule's view is released)."""
    cap, view = _capsule_of(obj)
    if cap is not None:
        if cap.released:
            raise ValueError(
                "this zflow capsule was released (sent, or released by its holder): its bytes "
                "are no longer accessible"
            )
        if view is not None and (view.nbytes != len(cap) or address(view) != address(cap)):
            if not cap.readonly:
                raise BufferError(
                    "cannot send a part of a writable capsule (from alloc()): the rest would "
                    "stay writable by its sender; alloc() the size you send, or send the whole "
                    "view"
                )
            return bytes(view), cap.seq
        _writable_alone(cap, view)
        data = bytes(cap)
        if give_up and (not cap.readonly or view is None):
            if view is not None:
                view.release()
            cap.release()
        return data, cap.seq
    try:
        with memoryview(obj) as m:
            if not m.c_contiguous:
                raise BufferError(
                    "zflow sends C-contiguous buffers only: make one, e.g. bytes(x) or "
                    "numpy.ascontiguousarray(x) (a copy, yours to decide)"
                )
            data = m.tobytes()
    except TypeError:
        raise TypeError(
            "zflow sends bytes-like objects (bytes, bytearray, memoryview, array.array, NumPy "
            f"arrays, zflow.Capsule), not '{type(obj).__name__}'"
        ) from None
    return data, 0


def _immutable(obj, depth=0):
    """As the runtime's host decides: True when nothing in Python can write
    obj's bytes (bytes; a read-only capsule; a read-only memoryview or NumPy
    array over such an owner). Those are sent without a copy; anything else
    is copied once at send (counted in context.copies)."""
    if depth > 64:
        return False
    if isinstance(obj, Capsule):
        return obj.readonly
    if isinstance(obj, bytes):  # a subclass exporting other bytes is not
        return getattr(type(obj), "__buffer__", None) is getattr(bytes, "__buffer__", None)
    if isinstance(obj, memoryview):
        return obj.readonly and _immutable(obj.obj, depth + 1)
    np = _sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        # an array owning its data can be made writable again (setflags)
        return not obj.flags.writeable and obj.base is not None and _immutable(obj.base, depth + 1)
    return False


def _sent_by_copy(obj):
    """True when send(port, obj) copies obj (it is not a capsule, nor a view
    of a whole capsule, and something can write it)."""
    cap, view = _capsule_of(obj)
    if cap is not None and (view is None or (view.nbytes == len(cap) and address(view) == address(cap))):
        return False
    return not _immutable(obj)


def keep(data):
    """A Capsule holding on_input's data past the callback.

    Outside the runtime it is a copy (same bytes, seq and timestamp); in the
    runtime, one more reference to the same bytes."""
    cap, view = _capsule_of(data)
    if cap is None:
        raise TypeError(
            "zflow.keep() takes the data given to on_input (or a zflow.Capsule), not "
            f"'{type(data).__name__}'; other objects are kept by keeping a reference to them"
        )
    if not cap.readonly:
        raise BufferError(
            "keep() shares a capsule, and this one is writable (from alloc()): it is yours "
            "already; keep the view itself, or send it"
        )
    return Capsule(bytes(view if view is not None else cap), cap.seq, cap.timestamp)


def writable(data):
    """A writable view of data's bytes (copy on write); data is given up."""
    cap, view = _capsule_of(data)
    if cap is None:
        raise TypeError(
            "zflow.writable() takes a capsule's view (on_input's data, alloc()) or a "
            f"zflow.Capsule, not '{type(data).__name__}'"
        )
    if not cap.readonly:
        return view if view is not None else memoryview(cap)
    copy = Capsule(bytes(view if view is not None else cap), cap.seq, cap.timestamp, True)
    return memoryview(copy)


class Context:
    """What a node can do outside the runtime: the same calls as the
    runtime's Context, answered by a zflow.testing.Harness."""

    def __init__(self, harness, id, kind, inputs, outputs, source, configuration, flow="",
                 instance=""):
        self._harness = harness
        self.flow = flow  # the flow's name
        self.instance = instance  # the instance's UUID
        self.id = id
        self.kind = kind
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.source = source
        self.configuration = configuration
        self.copies = 0  # writable objects sent by copy, as the runtime counts them
        self.copied_bytes = 0

    @property
    def stopping(self):
        return self._harness.stopping

    def _port(self, port):
        if isinstance(port, bool) or not isinstance(port, (int, str)):
            raise TypeError(f"a port is a name (str) or an index (int), not '{type(port).__name__}'")
        if isinstance(port, int):
            if 0 <= port < len(self.outputs):
                return self.outputs[port]
            raise ValueError(
                f"node '{self.id}' has no output port {port} (it has {len(self.outputs)}: "
                f"{self.outputs!r})"
            )
        if port in self.outputs:
            return port
        raise ValueError(f"node '{self.id}' has no output port '{port}' (it has: {self.outputs!r})")

    def send(self, port, data):
        self._harness._send(self._port(port), data)

    def try_send(self, port, data):
        name = self._port(port)
        if self._harness.full:
            if _sent_by_copy(data):
                self._count_copy(memoryview(data).nbytes)
            return False  # data untouched (a writable object was copied all the same)
        self._harness._send(name, data)
        return True

    def _count_copy(self, nbytes):
        self.copies += 1
        self.copied_bytes += nbytes

    def alloc(self, size):
        if self._harness.closed:
            raise Error("ZF_ECLOSED", "this node has finished (its close() ran): it can no longer send")
        if size < 0:
            raise ValueError(f"alloc(size): size must be >= 0, not {size}")
        return memoryview(Capsule(bytes(size), writable=True))

    def log(self, message, level="info"):
        names = {ERROR: "error", WARN: "warn", INFO: "info", DEBUG: "debug", TRACE: "trace"}
        lv = names.get(level, level)
        if lv == "warning":
            lv = "warn"
        if lv not in names.values():
            raise ValueError(
                "log level: 'error', 'warn', 'info', 'debug', 'trace' or zflow.ERROR..zflow.TRACE, "
                f"not {level!r}"
            )
        self._harness.logs.append((lv, str(message)))

    def __repr__(self):
        return f"<zflow.Context {self.id} ({self.kind}) inputs={self.inputs!r} outputs={self.outputs!r}>"
