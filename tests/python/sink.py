"""A Python test sink. For every capsule: count it, check it is the
source's buffer (the first 8 bytes hold the address the source wrote
there; see tests/nodes/gen.c), and check the order (bytes 8..16: seq).

configuration:
  summary: PATH     {"count":N,"same_address":N,"ctypes_same":N,...} at close
  check: false      also check each payload against the CRC-32 source.py
                    writes at bytes 16..24 (of bytes 24..): "intact", "corrupted"
  probe: false      also check that a memoryview kept past its callback
                    raises, that a slice of it stays readable, and that
                    zflow.keep() holds a capsule past the callback
"""
import struct
import zlib

import zflow
from common import buffer_address, write_summary


class Sink(zflow.Node):
    def __init__(self, context, configuration):
        self.summary = configuration.get("summary", "")
        self.probe = configuration.get("probe", False)
        self.check = configuration.get("check", False)
        self.intact = self.corrupted = 0
        self.count = self.same = self.ctypes_same = self.bytes = 0
        self.last_seq = self.out_of_order = 0
        self.saved = self.slice = None
        self.raised_after = self.slice_ok = self.kept_ok = 0
        self.kept = []
        self.port_names = set()

    def on_input(self, port, data):
        self.port_names.add(port)
        self.count += 1
        self.bytes += len(data)
        if data.readonly is not True:
            raise AssertionError("on_input data must be read-only")
        if len(data) >= 16:
            addr, seq = struct.unpack_from("<QQ", data, 0)
            if addr == zflow.address(data):
                self.same += 1
            if addr == buffer_address(data):
                self.ctypes_same += 1
            if seq <= self.last_seq:
                self.out_of_order += 1
            self.last_seq = seq
        if self.check:
            crc, = struct.unpack_from("<Q", data, 16)
            if zlib.crc32(data[24:]) == crc:
                self.intact += 1
            else:
                self.corrupted += 1
        if self.probe:
            self.check_probes()
            self.saved = data  # released when this call returns
            self.slice = data[8:16]  # a view of its own: keeps the bytes
            self.slice_seq = bytes(self.slice)
            if self.count <= 3:
                self.kept.append((zflow.keep(data), bytes(data[:16])))

    def check_probes(self):
        if self.saved is not None:
            try:
                self.saved[0]
            except ValueError:
                self.raised_after += 1
            if bytes(self.slice) == self.slice_seq:
                self.slice_ok += 1
        for cap, first in self.kept:
            if bytes(memoryview(cap)[:16]) == first and not cap.released:
                self.kept_ok += 1

    def close(self):
        if self.probe:
            self.check_probes()
        for cap, _ in self.kept:
            cap.release()
        write_summary(
            self.summary,
            count=self.count,
            bytes=self.bytes,
            same_address=self.same,
            ctypes_same=self.ctypes_same,
            last_seq=self.last_seq,
            out_of_order=self.out_of_order,
            raised_after=self.raised_after,
            slice_ok=self.slice_ok,
            kept_ok=self.kept_ok,
            ports=len(self.port_names),
            intact=self.intact,
            corrupted=self.corrupted,
        )
