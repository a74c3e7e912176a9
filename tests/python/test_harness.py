"""The zflow package outside the runtime (plain python3): `import zflow`
works, and zflow.testing.Harness runs the test node scripts of this folder
with the runtime's rules.

    PYTHONPATH=src/python python3 -m unittest tests/python/test_harness.py
"""
import json
import os
import struct
import sys
import tempfile
import unittest

import zflow
from zflow.testing import Harness

HERE = os.path.dirname(os.path.abspath(__file__))


def script(name):
    return os.path.join(HERE, name)


class PackageTest(unittest.TestCase):
    def test_names(self):
        for name in ("Node", "Error", "Capsule", "Context", "keep", "writable", "address"):
            self.assertTrue(hasattr(zflow, name), name)
        self.assertEqual((zflow.ERROR, zflow.TRACE), (0, 4))
        e = zflow.Error("ZF_ENOMEM", "full")
        self.assertEqual(e.code, "ZF_ENOMEM")

    def test_stubs_declare_every_public_name(self):
        import ast

        stub = os.path.join(os.path.dirname(zflow.__file__), "__init__.pyi")
        with open(stub) as f:
            tree = ast.parse(f.read())
        declared = set()
        for n in tree.body:
            if isinstance(n, (ast.ClassDef, ast.FunctionDef)):
                declared.add(n.name)
            elif isinstance(n, ast.AnnAssign):
                declared.add(n.target.id)
        self.assertEqual(set(zflow.__all__) - declared, set())


class Quiet(zflow.Node):
    """An operator doing nothing by itself: the tests call its context."""

    def __init__(self, context, configuration):
        pass

    def on_input(self, port, data):
        pass


class HarnessTest(unittest.TestCase):
    def test_sent_capsules_cannot_be_written(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("NumPy is not installed (apt-get install python3-numpy)")
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "guard.json")
            h = Harness(script("guard.py"), outputs=["out"],
                        configuration={"count": 3, "summary": summary})
            self.assertEqual(len(h.produce(5)), 6)  # alloc() capsules and NumPy arrays
            h.close()
            with open(summary) as f:
                got = json.load(f)
        self.assertEqual(got.pop("sent"), 3)
        # memoryview(capsule) of a sent Capsule: refused from Python 3.12
        # (__buffer__); before, the sent Capsule is emptied instead
        after = got.pop("capsule_after")
        self.assertEqual(after, 3 if sys.version_info >= (3, 12) else 0)
        self.assertEqual(got, dict.fromkeys(got, 3))  # every other refusal, every time
        self.assertEqual(len(got), 9)

    def test_alloc_view_is_given_up_by_send(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "src.json")
            h = Harness(script("source.py"), outputs=["out"],
                        configuration={"count": 4, "size": 32, "mode": "alloc", "summary": summary})
            h.produce(4)
            h.close()
            with open(summary) as f:
                got = json.load(f)
        self.assertEqual(got["released_after_send"], 4)
        self.assertEqual([struct.unpack_from("<Q", s.data, 8)[0] for s in h.sent], [1, 2, 3, 4])
        self.assertEqual([s.seq for s in h.sent], [1, 2, 3, 4])

    def test_relay_modes(self):
        payload = struct.pack("<QQ", 1, 2) + bytes(16)
        for mode, byte15 in (("forward", 0), ("mutate", 0xFF), ("copy", 0)):
            h = Harness(script("relay.py"), inputs=["in"], outputs=["out"],
                        configuration={"mode": mode})
            sent = h.feed("in", payload)
            self.assertEqual(len(sent), 1, mode)
            self.assertEqual(sent[0].data[15], byte15, mode)
        h = Harness(script("relay.py"), inputs=["in"], outputs=["out"],
                    configuration={"mode": "slice"})
        self.assertEqual(h.feed("in", payload)[0].data, payload[:16])
        h = Harness(script("relay.py"), inputs=["in"], outputs=["out"],
                    configuration={"fail_every": 2})
        h.feed("in", payload)
        with self.assertRaisesRegex(ValueError, "boom on capsule 2"):
            h.feed("in", payload)

    def test_sink_probes(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "sink.json")
            h = Harness(script("sink.py"), inputs=["in"],
                        configuration={"summary": summary, "probe": True})
            for seq in range(1, 6):
                h.feed("in", struct.pack("<QQ", 0, seq) + bytes(48), seq=seq)
            h.close()
            with open(summary) as f:
                got = json.load(f)
        self.assertEqual(got["count"], 5)
        self.assertEqual(got["out_of_order"], 0)
        # as in the runtime (test_python.c): 4 later calls + close
        self.assertEqual(got["raised_after"], 5)  # data kept past its call raises
        self.assertEqual(got["slice_ok"], 5)
        self.assertEqual(got["kept_ok"], 3 * 5 - 3)  # 3 kept, checked at each call

    def test_writable_objects_are_counted_as_copies(self):
        h = Harness(Quiet, inputs=["in"], outputs=["out"])
        ctx = h.context
        h.node.send("out", b"frozen")  # nothing can write it: not copied
        h.node.send("out", memoryview(b"frozen"))
        h.node.send("out", h.node.alloc(8))
        self.assertEqual((ctx.copies, ctx.copied_bytes), (0, 0))
        buf = bytearray(b"12345678")
        h.node.send("out", buf)
        buf[0] = 0x30  # still the sender's: what was sent is unchanged
        h.node.send("out", memoryview(bytearray(4)).toreadonly())  # the bytearray writes
        self.assertEqual((ctx.copies, ctx.copied_bytes), (2, 12))
        self.assertEqual(h.sent[3].data, b"12345678")
        try:
            import numpy
        except ImportError:
            return
        h.node.send("out", numpy.frombuffer(b"abcd", dtype=numpy.uint8))  # read-only over bytes
        owned = numpy.zeros(4, dtype=numpy.uint8)
        owned.setflags(write=False)  # can be made writable again: copied
        h.node.send("out", owned)
        self.assertEqual(ctx.copies, 3)
        self.assertTrue(owned.flags.owndata)

    def test_context_errors(self):
        h = Harness(Quiet, inputs=["in"], outputs=["out"])
        with self.assertRaisesRegex(ValueError, "has no output port 'nope'"):
            h.node.send("nope", b"x")
        with self.assertRaisesRegex(TypeError, "bytes-like objects"):
            h.node.send("out", 3.5)
        out = h.node.alloc(8)
        h.full = True
        self.assertFalse(h.node.try_send(0, out))
        out[0] = 1  # untouched by the refused try_send
        h.full = False
        self.assertTrue(h.node.try_send(0, out))
        with self.assertRaises(ValueError):
            out[0]
        h.node.log("hello", "warning")
        self.assertEqual(h.logs, [("warn", "hello")])
        h.close()
        with self.assertRaises(zflow.Error):
            h.node.send("out", b"late")


class ZenohFlowTest(unittest.TestCase):
    """Zenoh-Flow nodes (register()) through the harness, as the host runs them."""

    EXAMPLES = os.path.join(HERE, "zenoh-flow")

    def test_05_operator(self):
        h = Harness(os.path.join(self.EXAMPLES, "0.5", "double_operator.py"), inputs=["In"],
                    outputs=["Out"])
        for v in (1, 300, 70000):
            sent = h.feed("In", v.to_bytes((v.bit_length() + 7) // 8, "big"))
            self.assertEqual([bytes(s.data).decode() for s in sent], [str(2 * v)])
        h.close()

    def test_05_source_and_sink(self):
        src = Harness(os.path.join(self.EXAMPLES, "0.5", "counter_source.py"),
                      outputs=["Count"], configuration={"start": 41, "every": 0})
        sent = src.produce()
        self.assertEqual(int.from_bytes(sent[0].data, "big"), 42)
        sink = Harness(os.path.join(self.EXAMPLES, "0.5", "print_sink.py"), inputs=["Value"])
        self.assertEqual(sink.feed("Value", b"84"), [])  # text, as the operator sends
        with self.assertRaises(ValueError):  # odd: the sink's own check
            sink.feed("Value", b"3")
        sink.close()
        src.close()

    def test_06_operator(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "zf.json")
            h = Harness(script("zf_forward.py"), inputs=["in"], outputs=["out"],
                        configuration={"summary": summary, "flow": "f"}, flow="f")
            buf = bytearray(16)
            sent = h.feed("in", buf)
            self.assertEqual(len(sent), 1)
            h.close()
            with open(summary) as f:
                got = json.load(f)
        self.assertEqual(got["received"], 1)
        self.assertEqual(got["wall_ms_ok"], 1)
        self.assertEqual(got["zero_copy"], 0)  # its first 8 bytes are 0, not an address
        self.assertEqual(got["context_ok"], 1)

    def test_two_inputs_with_asyncio_gather(self):
        # Zenoh-Flow's documented way to wait on several inputs
        src = (
            "import asyncio\n"
            "from zenoh_flow_python import Operator\n"
            "class Join(Operator):\n"
            "    def __init__(self, context, configuration, inputs, outputs):\n"
            "        self.a, self.b = inputs.take_raw('a'), inputs.take_raw('b')\n"
            "        self.out = outputs.take_raw('out')\n"
            "    async def iteration(self):\n"
            "        ma, mb = await asyncio.gather(self.a.recv_async(), self.b.recv_async())\n"
            "        await self.out.send_async(bytes(ma.payload()) + bytes(mb.payload()))\n"
            "    def finalize(self):\n"
            "        pass\n"
            "def register():\n"
            "    return Join\n"
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "join.py")
            with open(path, "w") as f:
                f.write(src)
            h = Harness(path, inputs=["a", "b"], outputs=["out"])
            self.assertEqual(h.feed("a", b"1"), [])
            self.assertEqual(h.feed("a", b"2"), [])  # queued
            self.assertEqual([s.data for s in h.feed("b", b"x")], [b"1x"])
            self.assertEqual([s.data for s in h.feed("b", b"y")], [b"2y"])
            h.close()

    def test_register_must_return_a_class(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.py")
            with open(path, "w") as f:
                f.write("def register():\n    return 42\n")
            with self.assertRaisesRegex(TypeError, "register\\(\\) must return the node's class"):
                Harness(path, inputs=["in"])


if __name__ == "__main__":
    unittest.main()
