"""A Python test source. Each payload starts with its own address and a
sequence number (as tests/nodes/gen.c), so a C sink (tests/nodes/count.c)
proves it got the very same bytes.

configuration:
  count: 100        payloads to send
  size: 64          bytes each (>= 16)
  mode: bytearray   bytearray (pinned Python objects) | bytes (immutable,
                    no address inside) | alloc (pool capsules from
                    self.alloc) | numpy (NumPy arrays)
  status: PATH      once everything is sent, each produce writes
                    {"sent":N,"finalized":N}: how many of the objects sent
                    Python has released so far
  summary: PATH     {"sent":N,"finalized":N,"released_after_send":N} at close
"""
import struct
import weakref

import zflow
from common import write_summary


class Payload(bytearray):
    """A bytearray that can be watched with weakref.finalize."""


class Source(zflow.Node):
    def __init__(self, context, configuration):
        self.count = configuration.get("count", 100)
        self.size = configuration.get("size", 64)
        self.mode = configuration.get("mode", "bytearray")
        self.status = configuration.get("status", "")
        self.summary = configuration.get("summary", "")
        self.sent = self.finalized = self.released_after_send = 0
        if self.mode == "numpy":
            import numpy

            self.np = numpy

    def _gone(self):
        self.finalized += 1

    def produce(self):
        if self.sent >= self.count:
            write_summary(self.status, sent=self.sent, finalized=self.finalized)
            return
        self.sent += 1
        if self.mode == "alloc":
            buf = self.alloc(self.size)
            struct.pack_into("<QQ", buf, 0, zflow.address(buf), self.sent)
            self.send("out", buf)  # hands the capsule over: buf is released
            try:
                buf[0]
            except ValueError:
                self.released_after_send += 1
        elif self.mode == "numpy":
            arr = self.np.zeros(self.size // 8, dtype=self.np.uint64)
            arr[0] = arr.ctypes.data
            arr[1] = self.sent
            weakref.finalize(arr, self._gone)
            self.send(0, arr)
        elif self.mode == "bytes":
            self.send("out", struct.pack("<QQ", 0, self.sent) + bytes(self.size - 16))
        else:
            buf = Payload(self.size)
            struct.pack_into("<QQ", buf, 0, zflow.address(buf), self.sent)
            weakref.finalize(buf, self._gone)
            self.send("out", buf)

    def close(self):
        write_summary(
            self.summary,
            sent=self.sent,
            finalized=self.finalized,
            released_after_send=self.released_after_send,
        )
