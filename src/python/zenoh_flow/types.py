"""Zenoh-Flow 0.5's `zenoh_flow.types`."""
from zenoh_flow import Context, Input, Inputs, Message, Output, Outputs, Timestamp

__all__ = ["Context", "Input", "Inputs", "Message", "Output", "Outputs", "Timestamp"]
