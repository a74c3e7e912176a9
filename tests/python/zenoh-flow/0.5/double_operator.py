# A Zenoh-Flow 0.5 operator: doubles each value it receives, sent as text.
from typing import Any, Dict

from zenoh_flow import Inputs, Outputs
from zenoh_flow.interfaces import Operator
from zenoh_flow.types import Context


class Doubler(Operator):
    def __init__(
        self, context: Context, configuration: Dict[str, Any], inputs: Inputs, outputs: Outputs
    ):
        self.values = inputs.take("In", int, lambda b: int.from_bytes(b, "big"))
        # text out, as zenoh-flow-examples' getting-started greets
        self.doubled = outputs.take("Out", str, lambda s: bytes(s, "utf-8"))

    async def iteration(self) -> None:
        msg = await self.values.recv()
        await self.doubled.send(str(2 * msg.data))

    def finalize(self) -> None:
        return None


def register():
    return Doubler
