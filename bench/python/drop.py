"""A Python sink that drops what it gets (bench/python/send_copy.yaml)."""
import zflow


class Drop(zflow.Node):
    def on_input(self, port, data):
        pass
