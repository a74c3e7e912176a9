"""send_copy: what send() costs for each kind of object, 10 MiB by default.

A source node (bench/python/send_copy.yaml: send_copy.py -> a Python sink
that drops what it gets). Each produce() sends one object of each kind, made
and filled before the clock starts, and times the send() call alone:

  alloc      a view from self.alloc(), filled (zero copy: handed over)
  bytes      an immutable bytes object (zero copy: pinned)
  bytearray  one bytearray, reused every round (copied once at send)
  memcpy     no send: ctypes.memmove of the same size between two buffers,
             the raw cost of the copy the bytearray's send makes

At close it logs (info) the median and p90 per kind in microseconds, and
the bytearray's median as a ratio to alloc's and to memcpy's (same run).

    build/apps/zfctl/zfctl run bench/python/send_copy.yaml --log info \
        --var SIZE=10485760 --var ROUNDS=100 --duration 60s

configuration: size (bytes, default 10 MiB), rounds (default 100).
"""
import ctypes
import time

import zflow


class SendCopy(zflow.Node):
    def __init__(self, context, configuration):
        self.size = int(configuration.get("size", 10 << 20))
        self.rounds = int(configuration.get("rounds", 100))
        self.done = 0
        self.times = {"alloc": [], "bytes": [], "bytearray": [], "memcpy": []}
        self.reused = bytearray(b"\x5a" * self.size)  # the sender's, reused
        self.src = bytearray(b"\x33" * self.size)
        self.dst = bytearray(self.size)
        self.frozen = bytes(self.src)

    def _timed(self, kind, call):
        t = time.perf_counter_ns()
        call()
        self.times[kind].append(time.perf_counter_ns() - t)

    def produce(self):
        if self.done >= self.rounds:
            return
        self.done += 1
        view = self.alloc(self.size)
        view[:] = self.src  # filled before the clock starts
        self._timed("alloc", lambda: self.send("out", view))
        frozen = bytes(self.frozen) if self.done > 1 else self.frozen  # a new object each round
        self._timed("bytes", lambda: self.send("out", frozen))
        self.reused[0] = self.done & 0xFF
        self._timed("bytearray", lambda: self.send("out", self.reused))
        dst, src = zflow.address(self.dst), zflow.address(self.src)
        self._timed("memcpy", lambda: ctypes.memmove(dst, src, self.size))
        if self.done == self.rounds:
            self.report()

    def report(self):
        med = {}
        for kind, t in self.times.items():
            t = sorted(t)
            med[kind] = t[len(t) // 2]
            self.log(f"{kind}: {self.size} bytes, p50 {med[kind] / 1000:.1f} us, "
                     f"p90 {t[len(t) * 9 // 10] / 1000:.1f} us ({len(t)} sends)")
        self.log(f"bytearray / alloc: {med['bytearray'] / max(med['alloc'], 1):.0f}x; "
                 f"bytearray / memcpy: {med['bytearray'] / max(med['memcpy'], 1):.2f}x; "
                 f"copies counted: {self.context.copies} ({self.context.copied_bytes} bytes)")
