"""detect (Python): the same operator as detect.c, as a Python node.

It reads each frame in place -- `frame` is a read-only memoryview over the
camera's buffer, no byte is copied -- and sends a small detection record
written into a capsule from the pool (self.alloc).

configuration (fault injection, as detect.c):
  hang_on_frame: 0        hang when this frame arrives (0: never)
  hang_every_frames: 0    hang on every Nth frame (0: never)
  hang_for: forever       how long a hang lasts ("1.5s", "250ms", or "forever")
  fail_from_frame: 0      raise for frames in
  fail_to_frame: 0        [fail_from_frame, fail_to_frame] (0: never)
"""
import struct
import time

import zflow

FRAME_MAGIC = 0x7A66667261656D31  # "zfframe1"
HEADER = struct.Struct("<QQQQ")  # frame_header: magic, seq, checksum, bytes
DETECTION = struct.Struct("<QQQII")  # detection: seq, checksum, timestamp, objects, brightness
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def seconds(text):
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * UNITS[unit]
    raise ValueError(f"hang_for: '{text}' is not a duration (e.g. 1.5s, 250ms)")


class Detect(zflow.Node):
    def __init__(self, context, configuration):
        self.hang_on = configuration.get("hang_on_frame", 0)
        self.hang_every = configuration.get("hang_every_frames", 0)
        self.fail_from = configuration.get("fail_from_frame", 0)
        self.fail_to = configuration.get("fail_to_frame", 0)
        hang_for = configuration.get("hang_for", "forever")
        self.hang_s = None if hang_for == "forever" else seconds(hang_for)
        self.frames = 0

    def on_input(self, port, frame):
        if len(frame) < HEADER.size:
            raise ValueError(f"not a frame ({len(frame)} bytes)")
        magic, seq, checksum, nbytes = HEADER.unpack_from(frame)
        if magic != FRAME_MAGIC:
            raise ValueError(f"not a frame ({len(frame)} bytes)")
        self.frames += 1
        if (self.hang_on and seq == self.hang_on) or (self.hang_every and seq % self.hang_every == 0):
            self.hang()
        if self.fail_from and self.fail_from <= seq <= self.fail_to:
            raise RuntimeError(f"injected failure on frame {seq}")
        # "Detect": sample one byte per 4 KiB page of the frame, in place
        # (a strided slice of the memoryview: a view, not a copy).
        pixels = frame[HEADER.size : HEADER.size + nbytes : 4096]
        count = len(pixels)
        brightness = sum(pixels) // count if count else 0
        out = self.alloc(DETECTION.size)
        DETECTION.pack_into(out, 0, seq, checksum, frame.obj.timestamp, seq % 4, brightness)
        self.send("detection", out)

    def hang(self):
        if self.hang_s is None:
            while True:
                time.sleep(1)  # a deadlock, a stuck GPU call
        time.sleep(self.hang_s)
