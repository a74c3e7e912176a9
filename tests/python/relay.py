"""A Python test operator.

configuration:
  mode: forward     forward (the received capsule itself) | mutate
                    (zflow.writable: in place if unique, else a copy; flips
                    byte 15) | copy (bytes(data): a Python copy, pinned)
                    | slice (data[:len // 2]: a view of the capsule, pinned)
                    | mutate_part (zflow.writable(data[8:]): always a copy, a
                    part's bytes are every holder's; flips byte 15, checks
                    that data did not change, else raises)
  fail_every: 0     raise ValueError for every Nth capsule
"""
import zflow


class Relay(zflow.Node):
    def __init__(self, context, configuration):
        self.mode = configuration.get("mode", "forward")
        self.fail_every = configuration.get("fail_every", 0)
        self.seen = 0
        if context.outputs != ("out",) or context.inputs != ("in",):
            raise ValueError(f"unexpected ports {context.inputs} {context.outputs}")

    def on_input(self, port, data):
        self.seen += 1
        if self.fail_every and self.seen % self.fail_every == 0:
            self.explode()
        if self.mode == "mutate":
            w = zflow.writable(data)
            w[15] ^= 0xFF
            self.send("out", w)
        elif self.mode == "mutate_part":
            w = zflow.writable(data[8:])
            before = data[15]
            w[7] ^= 0xFF
            if data[15] != before:
                raise AssertionError("zflow.writable(data[8:]) wrote the received capsule")
            self.send("out", w)
        elif self.mode == "copy":
            self.send("out", bytes(data))
        elif self.mode == "slice":
            self.send("out", data[: len(data) // 2])
        else:
            self.send("out", data)

    def explode(self):
        raise ValueError(f"boom on capsule {self.seen}")
