import zflow


class Broken(zflow.Node:
    pass
