"""zenoh-flow-python 0.6's `zenoh_flow_python.nodes`."""
from zenoh_flow import Operator, Sink, Source

__all__ = ["Operator", "Source", "Sink"]
