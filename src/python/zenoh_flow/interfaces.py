"""Zenoh-Flow 0.5's `zenoh_flow.interfaces`: the node base classes."""
from zenoh_flow import Operator, Sink, Source

__all__ = ["Operator", "Source", "Sink"]
