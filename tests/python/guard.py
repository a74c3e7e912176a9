"""A Python test source proving that a sent capsule cannot be written by
its sender (docs/python.md, "What is copied"): for each payload
(address and sequence number first, as source.py, so tests/nodes/count.c
checks it arrives in place) it tries every way to keep a writable view past
send() and counts each refusal; then it sends a writable NumPy array, which
is copied at send (context.copies moves) and stays the sender's.

configuration:
  count: 50       payloads to send
  summary: PATH   at close: {"sent":N, and one counter per refusal}
"""
import struct

import numpy

import zflow
from common import write_summary


class Guard(zflow.Node):
    def __init__(self, context, configuration):
        self.count = configuration.get("count", 50)
        self.summary = configuration.get("summary", "")
        self.sent = 0
        self.refused = dict.fromkeys(
            ("numpy", "slice", "part", "second_view", "keep", "try_send", "write_after",
             "numpy_after", "capsule_after", "array_copied"),
            0,
        )

    def _refused(self, what, call, exc):
        try:
            call()
        except exc:
            self.refused[what] += 1

    def produce(self):
        if self.sent >= self.count:
            return
        out = self.alloc(64)
        struct.pack_into("<QQ", out, 0, zflow.address(out), self.sent + 1)
        arr = numpy.frombuffer(out, dtype=numpy.uint8)  # writable: out is
        self._refused("numpy", lambda: self.send("out", out), BufferError)
        self._refused("try_send", lambda: self.try_send("out", out), BufferError)
        arr[20] = 7  # the refused send left everything usable
        del arr
        part = out[0:32]
        self._refused("slice", lambda: self.send("out", out), BufferError)
        self._refused("part", lambda: self.send("out", part), BufferError)
        part.release()
        again = memoryview(out.obj)
        self._refused("second_view", lambda: self.send("out", out), BufferError)
        again.release()
        self._refused("keep", lambda: zflow.keep(out), BufferError)
        capsule = out.obj
        self.send("out", out)  # alone now: handed over
        self.sent += 1

        def write():
            out[20] = 99

        self._refused("write_after", write, ValueError)
        self._refused("numpy_after", lambda: numpy.frombuffer(out, dtype=numpy.uint8), ValueError)
        self._refused("capsule_after", lambda: memoryview(capsule), ValueError)

        # a writable NumPy array is copied once at send (counted): it stays
        # the sender's, and writing it changes nothing that was sent
        arr = numpy.zeros(8, dtype=numpy.uint64)
        arr[0] = arr.ctypes.data
        arr[1] = self.sent + 1000
        copies = self.context.copies
        self.send("out", arr)
        arr[2] = 99  # still the sender's: no error, and the copy sent is not changed
        if self.context.copies == copies + 1:
            self.refused["array_copied"] += 1

    def close(self):
        write_summary(self.summary, sent=self.sent, **self.refused)
