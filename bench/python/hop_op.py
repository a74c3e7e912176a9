"""pyhop's Python operator: forwards each capsule (the same one: no copy),
as bench/nodes/bench_op.c does in C."""
import zflow


class Hop(zflow.Node):
    def on_input(self, port, data):
        self.send(0, data)
