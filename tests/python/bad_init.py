import zflow


class FailsAtInit(zflow.Node):
    def __init__(self, context, configuration):
        raise RuntimeError("cannot open the device " + configuration.get("device", "?"))

    def on_input(self, port, data):
        pass
