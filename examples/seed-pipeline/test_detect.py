"""Unit tests of detect.py with plain python3 (no runtime): the zflow
package's test harness feeds it frames and collects what it sends.

    PYTHONPATH=src/python python3 -m unittest examples/seed-pipeline/test_detect.py
"""
import os
import struct
import unittest

from zflow.testing import Harness

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "detect.py")
MAGIC = 0x7A66667261656D31
HEADER = struct.Struct("<QQQQ")
DETECTION = struct.Struct("<QQQII")


def frame(seq, payload, checksum=0xC0FFEE, magic=MAGIC):
    return HEADER.pack(magic, seq, checksum, len(payload)) + payload


def detect(**configuration):
    return Harness(SCRIPT, inputs=["frame"], outputs=["detection"], configuration=configuration)


class DetectTest(unittest.TestCase):
    def test_one_detection_per_frame(self):
        h = detect()
        # one byte per 4 KiB page is sampled: pages of 10, 20, 30, 40
        payload = b"".join(bytes([v]) * 4096 for v in (10, 20, 30, 40))
        sent = h.feed("frame", frame(6, payload), timestamp=123456789)
        self.assertEqual(len(sent), 1)
        self.assertEqual(sent[0].port, "detection")
        seq, checksum, ts, objects, brightness = DETECTION.unpack(sent[0].data)
        self.assertEqual((seq, checksum, ts), (6, 0xC0FFEE, 123456789))
        self.assertEqual(objects, 6 % 4)
        self.assertEqual(brightness, (10 + 20 + 30 + 40) // 4)
        h.feed("frame", frame(7, payload))
        self.assertEqual([s.seq for s in h.sent], [1, 2])
        self.assertEqual(h.node.frames, 2)
        h.close()

    def test_not_a_frame_is_an_error(self):
        h = detect()
        with self.assertRaisesRegex(ValueError, "not a frame"):
            h.feed("frame", b"short")
        with self.assertRaisesRegex(ValueError, "not a frame"):
            h.feed("frame", frame(1, b"x" * 64, magic=1))
        self.assertEqual(h.sent, [])

    def test_injected_failures(self):
        h = detect(fail_from_frame=3, fail_to_frame=4)
        h.feed("frame", frame(2, b"\0" * 4096))
        for seq in (3, 4):
            with self.assertRaisesRegex(RuntimeError, f"injected failure on frame {seq}"):
                h.feed("frame", frame(seq, b"\0" * 4096))
        h.feed("frame", frame(5, b"\0" * 4096))
        self.assertEqual(len(h.sent), 2)

    def test_finite_hang(self):
        h = detect(hang_on_frame=2, hang_for="20ms")
        self.assertAlmostEqual(h.node.hang_s, 0.02)
        h.feed("frame", frame(2, b"\0" * 16))
        self.assertEqual(len(h.sent), 1)
        with self.assertRaisesRegex(ValueError, "not a duration"):
            detect(hang_for="soon")

    def test_the_frame_is_read_only_and_valid_during_the_call_only(self):
        seen = []

        class Spy:
            def __init__(self, context, configuration):
                pass

            def on_input(self, port, data):
                seen.append((data, data.readonly, bytes(data)))

        h = Harness(Spy, inputs=["frame"])
        h.feed("frame", b"abc")
        data, readonly, content = seen[0]
        self.assertTrue(readonly)
        self.assertEqual(content, b"abc")
        with self.assertRaises(ValueError):
            data[0]  # released when on_input returned


if __name__ == "__main__":
    unittest.main()
