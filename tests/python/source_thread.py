"""A Python source sending from a thread of its own (no produce): started
in __init__, joined in close(). Sends run outside the runtime's callbacks,
so they wait for room with the GIL released. Each payload is a bytearray,
copied once at send (the thread could write it again): count.c sees it moved.

configuration:
  count: 100
  size: 64
"""
import struct
import threading
import time

import zflow


class ThreadSource:
    def __init__(self, context, configuration):
        self.context = context
        self.count = configuration.get("count", 100)
        self.size = configuration.get("size", 64)
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        # The thread starts in __init__, while the runtime still initializes
        # the nodes after this one: give it time (the runtime may schedule a
        # receiver before its init has run; see the report of issue 6).
        time.sleep(0.2)
        for seq in range(1, self.count + 1):
            if self.context.stopping:
                return
            buf = bytearray(self.size)
            struct.pack_into("<QQ", buf, 0, zflow.address(buf), seq)
            try:
                self.context.send("out", buf)
            except zflow.Error as e:
                if e.code == "ZF_ECLOSED":
                    return
                raise

    def close(self):
        self.thread.join()


zflow_node = ThreadSource  # no produce(): named explicitly
