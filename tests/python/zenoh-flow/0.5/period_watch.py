# A Zenoh-Flow 0.5 operator in the shape of zenoh-flow-examples'
# period-miss-detector: each iteration waits for the first of an input and a
# timer (asyncio.wait, FIRST_COMPLETED), forwards "in" for an input and sends
# "tick" when no input came for `period` seconds (longer than the node's
# hang_timeout: the timer must not hold a worker).
import asyncio
from typing import Any, Dict

from zenoh_flow import Inputs, Outputs
from zenoh_flow.interfaces import Operator
from zenoh_flow.types import Context


class PeriodWatch(Operator):
    def __init__(
        self, context: Context, configuration: Dict[str, Any], inputs: Inputs, outputs: Outputs
    ):
        self.period = float((configuration or {}).get("period", 1.5))
        self.values = inputs.take("In", int, lambda buf: int.from_bytes(buf, "big"))
        self.out = outputs.take("Out", str, lambda s: bytes(s, "utf-8"))

    async def tick(self):
        await asyncio.sleep(self.period)
        await self.out.send("tick")

    async def value(self):
        msg = await self.values.recv()
        await self.out.send(f"in {msg.data}")

    async def iteration(self) -> None:
        tasks = [asyncio.create_task(self.value()), asyncio.create_task(self.tick())]
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in pending:
            t.cancel()

    def finalize(self) -> None:
        return None


def register():
    return PeriodWatch
