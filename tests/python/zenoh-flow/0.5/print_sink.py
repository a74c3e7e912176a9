# A Zenoh-Flow 0.5 sink: prints what it receives, text (it must be even).
from typing import Any, Dict

from zenoh_flow import Inputs
from zenoh_flow.interfaces import Sink
from zenoh_flow.types import Context


class Printer(Sink):
    def __init__(self, context: Context, configuration: Dict[str, Any], inputs: Inputs):
        # Zenoh-Flow hands a deserializer bytes: .decode() (getting-started's)
        self.values = inputs.take("Value", int, lambda buf: int(buf.decode("utf-8")))

    async def iteration(self) -> None:
        msg = await self.values.recv()
        if msg.data % 2:
            raise ValueError(f"odd value {msg.data}: the operator did not run")
        print(f"received {msg.data}")

    def finalize(self) -> None:
        return None


def register():
    return Printer
