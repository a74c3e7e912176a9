# A Zenoh-Flow 0.6 sink (zenoh_flow_python): logs each message's timestamp
# and size, reading the payload in place.
import logging
from typing import Any, Dict

from zenoh_flow_python import *


class LogSink(Sink):
    def __init__(self, context: Context, configuration: Dict[str, Any], inputs: Inputs):
        self.label = configuration["label"]
        self.input = inputs.take_raw("in")

    async def iteration(self) -> None:
        message = await self.input.recv_async()
        data = message.payload()
        logging.info("%s: timestamp %s, %d bytes", self.label, message.timestamp(), len(data))

    def finalize(self) -> None:
        pass


def register():
    return LogSink
