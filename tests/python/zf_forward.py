"""A Zenoh-Flow (zenoh-flow-python 0.6 API) operator, run by zflow through
the zenoh_flow compatibility package: it forwards each payload, checking
that payload() is a zero-copy view (tests/nodes/gen.c writes each buffer's
address in its first 8 bytes) and counting in `summary` at finalize.

configuration:
  summary: PATH   {"received":N,"zero_copy":N,"wall_ms_ok":N,"context_ok":0|1}
  flow: NAME      the flow's name the context must give
"""
import struct
import time
from typing import Any, Dict

from zenoh_flow_python import Context, InputRaw, Inputs, Operator, OutputRaw, Outputs

import zflow
from common import write_summary


class Forward(Operator):
    input: InputRaw
    output: OutputRaw

    def __init__(self, context: Context, configuration: Dict[str, Any], inputs: Inputs,
                 outputs: Outputs):
        self.summary = configuration.get("summary", "")
        self.node_id = context.node_id
        self.input = inputs.take_raw("in")
        self.output = outputs.take_raw("out")
        self.received = self.zero_copy = self.wall_ms_ok = 0
        self.context_ok = int(
            context.data_flow_name == configuration.get("flow")
            and len(str(context.data_flow_instance_id)) == 36
            and context.library_path.name == "zf_forward.py"
        )

    async def iteration(self) -> None:
        message = await self.input.recv_async()
        payload = message.payload()
        self.received += 1
        if struct.unpack_from("<Q", payload)[0] == zflow.address(payload):
            self.zero_copy += 1
        if abs(message.timestamp().time - time.time() * 1000) < 60_000:
            self.wall_ms_ok += 1
        await self.output.send_async(payload)

    def finalize(self) -> None:
        write_summary(self.summary, received=self.received, zero_copy=self.zero_copy,
                      wall_ms_ok=self.wall_ms_ok, context_ok=self.context_ok)


def register():
    return Forward
