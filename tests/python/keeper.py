"""A Python test sink that keeps every capsule it receives (zflow.keep) in a
module-level list, past its own fini: the stop report must name them as
pinned capsules still held by Python objects, not as a pool leak."""
import zflow

KEPT = []


class Keeper(zflow.Node):
    def on_input(self, port, data):
        KEPT.append(zflow.keep(data))
