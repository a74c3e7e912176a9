"""zenoh_flow: Zenoh-Flow's Python node API, on zflow.

A Zenoh-Flow Python node (a .py file with register() returning its class)
runs unchanged on zflow's Python host: `library:` / `uri:` naming the .py in
the descriptor is enough. Both API generations are here:

- zenoh-flow-python 0.6 (`from zenoh_flow_python import *`): Operator,
  Source, Sink; inputs.take_raw(port).recv_async() / try_recv() ->
  LinkMessage (payload(), timestamp()); outputs.take_raw(port).send_async(
  payload) / try_send(payload); Context (data_flow_name, node_id, ...).
- zenoh-flow-python 0.5 (`from zenoh_flow.interfaces import Operator`,
  `from zenoh_flow import Inputs, Outputs`): inputs.take(port, type,
  deserializer).recv() -> Message (.data, get_data()), outputs.take(port,
  type, serializer).send(data), take_raw() -> recv() / send().

Where zflow differs (docs/migrating.md): payload() (and 0.5's raw .data)
is a read-only memoryview over the sender's capsule (zero copy, where
Zenoh-Flow copies into bytes: bytes(payload) makes the copy; 0.5's typed
deserializers get bytes, as in Zenoh-Flow); an operator's or a sink's
`iteration` runs inside the runtime's callback of the message that wakes it
(until it waits for an input or a timer again; a due timer is resumed by a
timer thread of the node's own), a source's `iteration` is one
produce(); timestamps are zflow's (the capsule's, at its first send), and a
timestamp of your own in send_async/try_send is refused.
"""

import asyncio as _asyncio
import collections as _collections
import pathlib as _pathlib
import threading as _threading
import time as _time

import zflow as _zflow

__all__ = [
    "Operator",
    "Source",
    "Sink",
    "Context",
    "Inputs",
    "Outputs",
    "InputRaw",
    "OutputRaw",
    "LinkMessage",
    "Timestamp",
    "InstanceId",
    "RuntimeId",
    "Input",
    "Output",
    "Message",
    "RawInput",
    "RawOutput",
    "RawMessage",
]


# ---- the node base classes ----


class _Node:
    async def iteration(self):
        """Called in a loop while the flow runs (await inputs, send outputs)."""
        raise NotImplementedError(
            f"a Zenoh-Flow {type(self).__mro__[-3].__name__} defines async def iteration(self)"
        )

    def finalize(self):
        """Called once, when the node ends."""
        return None


class Operator(_Node):
    """A node transforming what it receives: __init__(context, configuration,
    inputs, outputs), async iteration(), finalize()."""

    def __init__(self, context, configuration, inputs, outputs):
        pass


class Source(_Node):
    """A node feeding the flow: __init__(context, configuration, outputs)."""

    def __init__(self, context, configuration, outputs):
        pass


class Sink(_Node):
    """A node consuming the flow: __init__(context, configuration, inputs)."""

    def __init__(self, context, configuration, inputs):
        pass


# ---- identifiers, context, timestamps ----


class InstanceId:
    """The unique identifier of a data flow instance (zflow's UUID)."""

    def __init__(self, text):
        self._text = text

    def __str__(self):
        return self._text

    __repr__ = __str__


class RuntimeId(InstanceId):
    """The identifier of the runtime running the node."""


class Context:
    """The execution context of a node (0.6 properties; 0.5 attributes)."""

    def __init__(self, zf_context):
        self._zf = zf_context
        # 0.5's attributes
        self.flow_name = self.data_flow_name
        self.instance_uuid = str(self.data_flow_instance_id)
        self.runtime_name = "zflow"
        self.runtime_uuid = str(self.runtime_id)

    @property
    def data_flow_name(self):
        return getattr(self._zf, "flow", "")

    @property
    def data_flow_instance_id(self):
        return InstanceId(getattr(self._zf, "instance", ""))

    @property
    def runtime_id(self):
        return RuntimeId("zflow")

    @property
    def library_path(self):
        return _pathlib.Path(self._zf.source)

    @property
    def node_id(self):
        return self._zf.id

    def __repr__(self):
        return (
            f"Context(data_flow_name={self.data_flow_name}, instance_id="
            f"{self.data_flow_instance_id}, node_id={self.node_id})"
        )


# zflow stamps with zf_clock_ns (CLOCK_MONOTONIC); Zenoh-Flow gives wall time.
def _wall_ms(mono_ns):
    return (_time.time_ns() - _time.monotonic_ns() + mono_ns) // 1_000_000


class Timestamp:
    """When the message was first sent: `time` in ms since the UNIX epoch."""

    def __init__(self, time_ms, id="zflow"):
        self.time = time_ms
        self.id = id
        self.ntp = time_ms  # 0.5's name

    def __repr__(self):
        return f"Timestamp(time={self.time}, id={self.id})"


class LinkMessage:
    """A message received on an InputRaw: payload() and timestamp()."""

    __slots__ = ("_capsule", "_ts")

    def __init__(self, capsule, ts_ns):
        self._capsule = capsule
        self._ts = ts_ns

    def payload(self):
        """The bytes, as a read-only memoryview over the sender's capsule (no
        copy: bytes(message.payload()) makes one)."""
        return memoryview(self._capsule)

    def timestamp(self):
        return Timestamp(_wall_ms(self._ts))

    # 0.5's RawMessage
    @property
    def data(self):
        return memoryview(self._capsule)

    @property
    def ts(self):
        return _wall_ms(self._ts)

    @property
    def is_watermark(self):
        return False


RawMessage = LinkMessage


class Message:
    """0.5's typed message: the deserialized data and its timestamp."""

    def __init__(self, data, ts, watermark=False):
        self.data = data
        self.ts = ts
        self._watermark = watermark

    def get_data(self):
        return self.data

    def get_ts(self):
        return self.ts

    def is_watermark(self):
        return self._watermark


# ---- inputs and outputs ----


class InputRaw:
    """A Zenoh-Flow input: messages in the order they arrived."""

    def __init__(self, node, port):
        self._node = node
        self._port = port
        self._queue = _collections.deque()
        self._waiter = None

    def port_id(self):
        return self._port

    def _deliver(self, data):
        c = _zflow.keep(data)  # valid past the callback: one more reference
        self._queue.append(LinkMessage(c, c.timestamp))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def recv_async(self):
        """The next message; waits (the iteration is suspended until one
        arrives)."""
        while not self._queue:
            self._waiter = self._node._loop.create_future()
            await self._waiter
        return self._queue.popleft()

    def try_recv(self):
        """The next message, or None when there is none."""
        return self._queue.popleft() if self._queue else None

    recv = recv_async  # 0.5's name


RawInput = InputRaw


class OutputRaw:
    """A Zenoh-Flow output: bytes-like payloads, sent without copy."""

    def __init__(self, node, port):
        self._node = node
        self._port = port

    def port_id(self):
        return self._port

    @staticmethod
    def _no_timestamp(ts):
        if ts is not None:
            raise _zflow.Error(
                "ZF_EINVAL",
                "zflow stamps a capsule when it is first sent; a timestamp of your own "
                "travels in the payload",
            )

    async def send_async(self, payload, timestamp_ms=None):
        self._no_timestamp(timestamp_ms)
        self._node._ctx.send(self._port, payload)

    def try_send(self, payload, timestamp_ms=None):
        self._no_timestamp(timestamp_ms)
        if not self._node._ctx.try_send(self._port, payload):
            raise _zflow.Error("ZF_EAGAIN", f"output '{self._port}' is full")

    send = send_async  # 0.5's name


RawOutput = OutputRaw


class Input:
    """0.5's typed input: recv() -> Message with deserializer(bytes).

    The deserializer gets `bytes`, as Zenoh-Flow gives it: Zenoh-Flow's own
    examples call .decode() or protobuf's ParseFromString on it, which a
    memoryview lacks. That is the one copy of this API (deserializing makes
    a new object anyway); take_raw() and payload() are the zero-copy paths."""

    def __init__(self, raw, input_type, deserializer):
        self._raw = raw
        self._type = input_type
        self._deserializer = deserializer

    async def recv(self):
        m = await self._raw.recv_async()
        payload = m.payload()
        data = self._deserializer(bytes(payload)) if len(payload) else None
        return Message(data, m.ts)

    def port_id(self):
        return self._raw.port_id()


class Output:
    """0.5's typed output: send(data) sends serializer(data)."""

    def __init__(self, raw, output_type, serializer):
        self._raw = raw
        self._type = output_type
        self._serializer = serializer

    async def send(self, data, ts=None):
        await self._raw.send_async(self._serializer(data), ts)

    def port_id(self):
        return self._raw.port_id()


class _Ports:
    def __init__(self, ports, what):
        self._ports = ports
        self._what = what

    def _get(self, port_id):
        try:
            return self._ports[port_id]
        except KeyError:
            raise KeyError(
                f"no {self._what} '{port_id}' (the descriptor declares: "
                f"{', '.join(self._ports) or 'none'})"
            ) from None

    def take_raw(self, port_id):
        return self._get(port_id)

    def __repr__(self):
        return f"{type(self).__name__}({list(self._ports)})"


class Inputs(_Ports):
    def take(self, port_id, input_type, deserializer):
        return Input(self._get(port_id), input_type, deserializer)


class Outputs(_Ports):
    def take(self, port_id, output_type, serializer):
        return Output(self._get(port_id), output_type, serializer)


# ---- running a Zenoh-Flow node as a zflow node ----


class _Driver:
    """One Zenoh-Flow node in a zflow node: its event loop, its ports.

    An operator's or a sink's loop runs inside the callback of each message
    until nothing in it can progress. A task waiting on a timer
    (asyncio.sleep, asyncio.wait(..., timeout)) does not hold the worker:
    the callback returns, and a timer thread of the node's own resumes the
    loop when the timer is due (under the node's lock, so the loop never
    runs twice at once; its sends then wait for room as a thread of the
    node's own does)."""

    def __init__(self, cls, kind, context, configuration):
        self._ctx = context
        self._loop = _asyncio.new_event_loop()
        self._task = None
        self._lock = _threading.RLock()
        self._timer = None
        self._closed = False
        zf = Context(context)
        ins = Inputs({p: InputRaw(self, p) for p in context.inputs}, "input")
        outs = Outputs({p: OutputRaw(self, p) for p in context.outputs}, "output")
        args = {"source": (outs,), "operator": (ins, outs), "sink": (ins,)}[kind]
        self.inputs = ins
        self.node = cls(zf, configuration, *args)

    async def _forever(self):
        while True:
            await self.node.iteration()

    def _run_until_blocked(self):
        """Run the node's loop until nothing in it can progress now: every
        task waits for an input or a timer (or the loop of iterations ended).
        Returns when the next timer is due (loop time), or None. Uses the
        loop's ready queue and timer heap (BaseEventLoop's _ready and
        _scheduled: asyncio has no public 'run until idle')."""
        loop = self._loop
        while True:
            loop.call_soon(loop.stop)
            loop.run_forever()
            if loop._ready:
                continue
            timers = [h.when() for h in loop._scheduled if not h.cancelled()]
            if not timers:
                return None
            due = min(timers)
            if due > loop.time():
                return due
            # due already: let it fire
            loop.call_at(due, loop.stop)
            loop.run_forever()

    def _step(self):
        """Run the loop (lock held); arm the timer for what it waits on next.
        Returns the finished iteration task, if it ended."""
        due = self._run_until_blocked()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if due is not None and not self._closed:
            self._timer = _threading.Timer(max(0.0, due - self._loop.time()), self._wake)
            self._timer.daemon = True
            self._timer.start()
        if self._task is not None and self._task.done():
            task, self._task = self._task, None
            return task
        return None

    def _wake(self):
        """The timer thread: a timer of the loop is due."""
        with self._lock:
            if self._closed or self._task is None:
                return
            task = self._step()
            if task is not None and not task.cancelled() and task.exception() is not None:
                e = task.exception()
                self._ctx.log(
                    f"iteration raised {type(e).__name__}: {e} (resumed by a timer; the next "
                    "message restarts it)",
                    "error",
                )

    def on_input(self, port, data):
        with self._lock:
            self.inputs._ports[port]._deliver(data)
            if self._task is None:
                self._task = self._loop.create_task(self._forever())
            task = self._step()
        if task is not None:
            task.result()  # its exception is the callback's (counted); next message restarts it

    def produce(self):
        self._loop.run_until_complete(self.node.iteration())

    def close(self):
        with self._lock:
            self._closed = True
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            if timer.is_alive() and timer is not _threading.current_thread():
                timer.join()
        with self._lock:
            try:
                self.node.finalize()
            finally:
                # the iteration loop and every task it started (asyncio.wait's)
                tasks = [t for t in _asyncio.all_tasks(self._loop) if not t.done()]
                for t in tasks:
                    t.cancel()
                if tasks:
                    self._loop.run_until_complete(
                        _asyncio.gather(*tasks, return_exceptions=True)
                    )
                self._task = None
                self._loop.close()


def _zflow_node(cls, kind, script=""):
    """The zflow node class running the Zenoh-Flow node class `cls` (what a
    script's register() returns) as a source, operator or sink."""
    if not isinstance(cls, type) or not callable(getattr(cls, "iteration", None)):
        raise TypeError(
            f"{script}: register() must return the node's class (with async def iteration), "
            f"not {cls!r}"
        )

    def init(self, context, configuration):
        self._zenoh_flow = _Driver(cls, kind, context, configuration)

    members = {
        "__init__": init,
        "close": lambda self: self._zenoh_flow.close(),
        "__doc__": f"Zenoh-Flow {kind} {cls.__name__}, run by zflow",
    }
    if kind == "source":
        members["produce"] = lambda self: self._zenoh_flow.produce()
    else:
        members["on_input"] = lambda self, port, data: self._zenoh_flow.on_input(port, data)
    return type(f"ZenohFlow{kind.capitalize()}_{cls.__name__}", (), members)


from zenoh_flow import interfaces, types  # noqa: E402,F401  (0.5's modules)
