"""Unit-test a zflow Python node with plain python3, without the runtime.

    from zflow.testing import Harness

    h = Harness("detect.py", kind="operator", inputs=["frame"], outputs=["detection"],
                configuration={"threshold": 0.5})
    sent = h.feed("frame", frame_bytes)      # calls on_input; what it sent
    assert sent[0].port == "detection"
    h.close()                                # calls close()

The node is found and built as the runtime does (zflow_node, or the one
class with on_input/produce; Class(context, configuration)); `data` is a
read-only memoryview released when the callback returns; alloc() views are
given up by send(), and a send while another view could still write the
capsule raises BufferError; a writable object sent (a bytearray, a writable
NumPy array) is counted in context.copies, as the runtime copies it. What a
node sends is recorded as bytes (a copy: the harness checks behaviour, not
zero copy).
"""

import os as _os
import time as _time
import uuid as _uuid

import zflow
from zflow import _support

__all__ = ["Harness", "Sent"]


class Sent:
    """One message a node sent: port name, bytes, sequence number."""

    __slots__ = ("port", "data", "seq")

    def __init__(self, port, data, seq):
        self.port = port
        self.data = data
        self.seq = seq

    def __repr__(self):
        return f"Sent(port={self.port!r}, {len(self.data)} bytes, seq={self.seq})"


class Harness:
    """Runs one node: feed(port, data) / produce() call it, `sent` collects
    what it sends, `logs` what it logs, close() ends it.

    node: a script path (loaded as the runtime loads it) or a node class (or
    factory). kind: "source", "operator" or "sink" (default: from the ports).
    full: set True to make try_send() answer False (a full link). flow: the
    flow's name the node sees (context.flow); each harness is an instance
    of its own (context.instance, a new UUID)."""

    def __init__(self, node, kind=None, inputs=(), outputs=(), configuration=None, id=None,
                 flow="test"):
        inputs, outputs = tuple(inputs), tuple(outputs)
        if kind is None:
            kind = "operator" if inputs and outputs else "sink" if inputs else "source"
        if kind not in ("source", "operator", "sink"):
            raise ValueError(f"kind: 'source', 'operator' or 'sink', not {kind!r}")
        self.sent = []
        self.logs = []
        self.full = False
        self.stopping = False
        self.closed = False
        self._seq = {}
        source = ""
        if isinstance(node, (str, _os.PathLike)):
            source = _os.path.realpath(_os.fspath(node))
            modname = "zflow_node_" + _os.path.splitext(_os.path.basename(source))[0].replace("-", "_")
            with open(source, "rb") as f:  # read once and run as read, as the runtime does
                code = f.read()
            self.module, factory, _ = _support._load(source, modname, kind, code)
        else:
            self.module, factory = None, node
        if id is None:
            id = _os.path.splitext(_os.path.basename(source))[0] if source else getattr(
                factory, "__name__", "node"
            )
        config = {} if configuration is None else dict(configuration)
        self.context = zflow.Context(self, id, kind, inputs, outputs, source, config, flow,
                                     str(_uuid.uuid4()))
        self.node = factory(self.context, config)
        if isinstance(self.node, zflow.Node):
            # the runtime's Node.__new__ keeps them even without super().__init__
            self.node.context, self.node.configuration = self.context, config

    def _send(self, port, data):
        if self.closed:
            raise zflow.Error("ZF_ECLOSED", "this node has finished (its close() ran): it can no longer send")
        copied = zflow._sent_by_copy(data)  # before _take gives a capsule up
        payload, _ = zflow._take(data, give_up=True)
        if copied:
            self.context._count_copy(len(payload))
        seq = self._seq.get(port, 0) + 1  # per output port, as the runtime numbers them
        self._seq[port] = seq
        self.sent.append(Sent(port, payload, seq))

    def _since(self, start):
        return self.sent[start:]

    def feed(self, port, data, seq=0, timestamp=None):
        """Call on_input(port, view) with a read-only view over a capsule
        holding `data`'s bytes; the messages it sent."""
        if port not in self.context.inputs:
            raise ValueError(f"node '{self.context.id}' has no input '{port}' (it has: {self.context.inputs!r})")
        start = len(self.sent)
        view = memoryview(zflow.Capsule(bytes(data), seq, timestamp)).toreadonly()
        try:
            self.node.on_input(port, view)
        finally:
            view.release()  # as the runtime: data is valid during the call only
        return self._since(start)

    def produce(self, times=1):
        """Call produce() `times` times; the messages sent."""
        start = len(self.sent)
        for _ in range(times):
            self.node.produce()
        return self._since(start)

    def close(self):
        """Call close() (if the node has one); sends are refused afterwards."""
        self.stopping = True
        close = getattr(self.node, "close", None)
        try:
            if callable(close):
                close()
        finally:
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.closed:
            self.close()


def now_ns():
    """The clock the runtime stamps capsules with (monotonic nanoseconds)."""
    return _time.monotonic_ns()
