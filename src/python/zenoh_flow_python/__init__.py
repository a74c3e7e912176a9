"""zenoh_flow_python: zenoh-flow-python 0.6's module name for the zenoh_flow
compatibility package (`from zenoh_flow_python import *`)."""
from zenoh_flow import *  # noqa: F401,F403
from zenoh_flow import __all__  # noqa: F401

from . import nodes  # noqa: F401,E402
