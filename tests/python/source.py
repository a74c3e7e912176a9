"""A Python test source. Each payload starts with its own address, a
sequence number (as tests/nodes/gen.c) and the CRC-32 of the rest, so a C
sink (tests/nodes/count.c) proves it got the very same bytes, and a sink.py
with `check: true` that it got what was sent (not what was written after).

configuration:
  count: 100        payloads to send
  size: 64          bytes each (>= 24)
  mode: bytearray   what is sent. Zero copy (nothing can write it):
                      bytes       immutable bytes (pinned)
                      readonly    a read-only memoryview of bytes (pinned)
                      numpy_ro    a read-only NumPy array over bytes (pinned)
                      alloc       pool capsules from self.alloc
                    copied once at send (something could still write it):
                      bytearray   a bytearray
                      array       an array.array
                      numpy       a writable NumPy array
                      numpy_view  a NumPy array, a view of it made before the
                                  send (write_after writes through the view)
                      ro_bytearray  memoryview(bytearray).toreadonly(): read
                                  only, but the bytearray writes
  write_after: false  after each send, overwrite the payload's body through
                    what the sender still holds (the object, or the view)
  status: PATH      once everything is sent, each produce writes
                    {"sent":N,"finalized":N}: how many of the objects sent
                    Python has released so far
  summary: PATH     at close: {"sent":N,"finalized":N,"released_after_send":N,
                    "copies":N,"copied_bytes":N,"written_after":N,
                    "write_refused":N} (copies: context.copies, the objects
                    the host copied at send)
"""
import array
import ctypes
import struct
import weakref
import zlib

import zflow
from common import write_summary

HEADER = struct.Struct("<QQQ")  # address, seq, crc32 of the body


class Payload(bytearray):
    """A bytearray that can be watched with weakref.finalize."""


def body(seq, size):
    return bytes([seq & 0xFF]) * (size - HEADER.size)


class Source(zflow.Node):
    def __init__(self, context, configuration):
        self.count = configuration.get("count", 100)
        self.size = configuration.get("size", 64)
        self.mode = configuration.get("mode", "bytearray")
        self.write_after = configuration.get("write_after", False)
        self.status = configuration.get("status", "")
        self.summary = configuration.get("summary", "")
        self.sent = self.finalized = self.released_after_send = 0
        self.written_after = self.write_refused = 0
        if self.mode.startswith("numpy"):
            import numpy

            self.np = numpy

    def _gone(self):
        self.finalized += 1

    def _frozen(self, seq):
        """Immutable bytes holding their own address (written in place with
        ctypes before anyone else sees them: a test's trick, so that count.c
        can check them)."""
        b = HEADER.pack(0, seq, zlib.crc32(body(seq, self.size))) + body(seq, self.size)
        ctypes.memmove(zflow.address(b), struct.pack("<Q", zflow.address(b)), 8)
        return b

    def _writable(self, seq):
        """(object to send, the object weakref watches, what the sender can
        still write through after the send)."""
        data = HEADER.pack(0, seq, zlib.crc32(body(seq, self.size))) + body(seq, self.size)
        if self.mode == "array":
            obj = watched = array.array("B", data)
            raw = memoryview(obj)
        elif self.mode in ("numpy", "numpy_view"):
            obj = watched = self.np.frombuffer(data, dtype=self.np.uint8).copy()  # writable, its own
            raw = memoryview(obj)
        else:
            watched = Payload(data)
            raw = memoryview(watched)
            obj = raw.toreadonly() if self.mode == "ro_bytearray" else watched
        raw[:8] = struct.pack("<Q", zflow.address(obj))
        later = obj[HEADER.size :] if self.mode == "numpy_view" else raw[HEADER.size :]
        return obj, watched, later

    def produce(self):
        if self.sent >= self.count:
            write_summary(self.status, sent=self.sent, finalized=self.finalized)
            return
        self.sent += 1
        seq = self.sent
        if self.mode == "alloc":
            buf = self.alloc(self.size)
            buf[:] = HEADER.pack(zflow.address(buf), seq, zlib.crc32(body(seq, self.size))) + body(
                seq, self.size
            )
            self.send("out", buf)  # hands the capsule over: buf is released
            try:
                buf[0]
            except ValueError:
                self.released_after_send += 1
            return
        if self.mode in ("bytes", "readonly", "numpy_ro"):
            obj = self._frozen(seq)
            if self.mode == "readonly":
                obj = memoryview(obj)
            elif self.mode == "numpy_ro":
                obj = self.np.frombuffer(obj, dtype=self.np.uint8)
            if self.mode != "bytes":  # bytes cannot be watched with a weakref
                weakref.finalize(obj, self._gone)
            self.send("out", obj)
            if self.write_after:
                try:
                    memoryview(obj).cast("B")[HEADER.size] ^= 0xFF
                except (TypeError, ValueError):
                    self.write_refused += 1  # nothing can write it
            return
        obj, watched, later = self._writable(seq)
        weakref.finalize(watched, self._gone)
        self.send("out", obj)
        if self.write_after:
            later[:] = b"\xee" * len(later) if isinstance(later, memoryview) else 0xEE
            self.written_after += 1

    def close(self):
        write_summary(
            self.summary,
            sent=self.sent,
            finalized=self.finalized,
            released_after_send=self.released_after_send,
            copies=self.context.copies,
            copied_bytes=self.context.copied_bytes,
            written_after=self.written_after,
            write_refused=self.write_refused,
        )
