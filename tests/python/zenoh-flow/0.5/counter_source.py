# A Zenoh-Flow 0.5 source (zenoh_flow.interfaces): counts up from
# configuration "start", one value per "every" seconds, big-endian bytes
# ("limit" values, if given).
import asyncio
from typing import Any, Dict

from zenoh_flow import Outputs
from zenoh_flow.interfaces import Source
from zenoh_flow.types import Context


def to_bytes(n: int) -> bytes:
    return n.to_bytes(max(1, (n.bit_length() + 7) // 8), "big")


class Counter(Source):
    def __init__(self, context: Context, configuration: Dict[str, Any], outputs: Outputs):
        configuration = configuration or {}
        self.n = int(configuration.get("start", 0))
        self.sent = 0
        self.every = float(configuration.get("every", 0.2))
        self.limit = configuration.get("limit")  # values to send (None: no end)
        self.out = outputs.take("Count", int, to_bytes)

    async def iteration(self) -> None:
        await asyncio.sleep(self.every)
        if self.limit is not None and self.sent >= self.limit:
            return
        self.n += 1
        self.sent += 1
        await self.out.send(self.n)

    def finalize(self) -> None:
        return None


def register():
    return Counter
