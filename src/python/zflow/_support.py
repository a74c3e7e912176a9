# The part of the `zflow` module written in Python. libzflow-python.so
# embeds this file at build time and runs it in the module's namespace,
# next to the C types Capsule and Context and the functions keep, writable
# and address (module.c). Outside the runtime, the pure-Python package
# (zflow/__init__.py) imports it as zflow._support. See docs/python.md.
"""zflow: nodes of a zflow dataflow, written in Python.

A node script defines one class (or names it with `zflow_node = TheClass`):

    import zflow

    class Relay(zflow.Node):
        def __init__(self, context, configuration):
            self.gain = configuration.get("gain", 1)

        def on_input(self, port, data):      # operators and sinks
            self.send("out", data)           # the same capsule: no copy

        def produce(self):                   # sources
            ...

        def close(self):                     # optional, at the end
            ...

`data` is a read-only memoryview over the capsule, valid during the call.
"""

import importlib.machinery as _importlib_machinery
import importlib.util as _importlib_util
import os as _os
import sys as _sys
import traceback as _traceback

ERROR, WARN, INFO, DEBUG, TRACE = range(5)


class Error(Exception):
    """A zflow call failed. `code` is the error's name ("ZF_ECLOSED", ...).

    Escaping a callback, it becomes that error code for the runtime (an
    error counted like any other, except ZF_ECLOSED while stopping)."""

    def __init__(self, code, message=""):
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code


class Node:
    """Optional base class of a Python node.

    The runtime calls `YourClass(context, configuration)`. Node keeps both
    as `self.context` and `self.configuration` (even if your __init__ does
    not call super().__init__) and gives the node `self.send(port, data)`,
    `self.try_send(port, data)`, `self.alloc(size)`, `self.log(message,
    level="info")` and `self.id`, all forwarded to the context."""

    _FORWARDED = ("send", "try_send", "alloc", "log")

    def __new__(cls, context=None, configuration=None, *args, **kwargs):
        self = super().__new__(cls)
        self.context = context
        self.configuration = {} if configuration is None else configuration
        if context is not None:
            # The context's own bound methods, unless the class overrides
            # them: no Python frame per call.
            for name in Node._FORWARDED:
                if getattr(cls, name) is getattr(Node, name):
                    setattr(self, name, getattr(context, name))
        return self

    def __init__(self, context=None, configuration=None):
        pass

    def send(self, port, data):
        """Send bytes-like `data` on output `port` (a name or an index)."""
        return self.context.send(port, data)

    def try_send(self, port, data):
        """As send, but False (data untouched) when a link is full."""
        return self.context.try_send(port, data)

    def alloc(self, size):
        """A writable memoryview over a new capsule from the pool."""
        return self.context.alloc(size)

    def log(self, message, level="info"):
        """One line through the runtime's logger."""
        return self.context.log(message, level)

    @property
    def id(self):
        return self.context.id


def _node_classes(module, modname):
    """Classes defined in the script itself that look like nodes."""
    return [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and v.__module__ == modname
        and v is not Node
        and (callable(getattr(v, "on_input", None)) or callable(getattr(v, "produce", None)))
    ]


def _load(path, modname, kind, code):
    """Run `code`, the text of the node script `path` (its real path, as the
    runtime opened and checked it), as module `modname`; find its node.

    Only the real file's folder goes on sys.path (for its sibling modules),
    and the text runs as read: a link swapped or a module planted beside a
    link cannot change what runs. Returns (module, factory, has_produce). The
    node is the module's `zflow_node` (a class, or any callable returning
    the node object) if it has one, else the one class defined in the script
    with an on_input or a produce method."""
    name = _os.path.basename(path)
    folder = _os.path.dirname(path)
    if folder not in _sys.path:
        _sys.path.insert(0, folder)  # the script's siblings are importable
    spec = _importlib_machinery.ModuleSpec(modname, None, origin=path)
    spec.has_location = True
    module = _importlib_util.module_from_spec(spec)
    module.__file__ = path
    _sys.modules[modname] = module
    try:
        exec(compile(code, path, "exec"), module.__dict__)
    except BaseException:
        _sys.modules.pop(modname, None)
        raise
    try:
        explicit = getattr(module, "zflow_node", None)
        if explicit is None and callable(getattr(module, "register", None)):
            # A Zenoh-Flow node: register() returns its class; the zenoh_flow
            # compatibility package runs it as a zflow node.
            import zenoh_flow

            explicit = zenoh_flow._zflow_node(module.register(), kind, name)
        if explicit is not None:
            if not callable(explicit):
                raise TypeError(
                    f"{name}: zflow_node must be the node class (or a callable returning the "
                    f"node object), not {type(explicit).__name__}"
                )
            factory = explicit
        else:
            found = _node_classes(module, modname)
            if not found:
                raise TypeError(
                    f"{name} defines no node class: expected a class with "
                    f"on_input(self, port, data) or produce(self), or zflow_node = TheClass"
                )
            if len(found) > 1:
                names = ", ".join(sorted(c.__name__ for c in found))
                raise TypeError(
                    f"{name} defines several node classes ({names}): name the one to run "
                    f"with zflow_node = TheClass"
                )
            factory = found[0]
        has_produce = True
        if isinstance(factory, type):
            cname = factory.__name__
            if kind == "source":
                has_produce = callable(getattr(factory, "produce", None))
                if not has_produce and explicit is None:
                    raise TypeError(
                        f"{name}: {cname} is used as a source, which needs produce(self) "
                        f"(a source sending from a thread of its own: zflow_node = {cname})"
                    )
            elif not callable(getattr(factory, "on_input", None)):
                article = "an" if kind == "operator" else "a"
                raise TypeError(
                    f"{name}: {cname} is used as {article} {kind}, which needs "
                    f"on_input(self, port, data)"
                )
        return module, factory, has_produce
    except BaseException:
        _sys.modules.pop(modname, None)
        raise


def _describe(exc):
    """(one line, full traceback) of an exception raised by node code."""
    frames = [
        f
        for f in _traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(("<frozen", "<zflow>"))
    ]
    if isinstance(exc, SyntaxError):
        where = f"{_os.path.basename(exc.filename or '?')}:{exc.lineno}"
        line = f"{type(exc).__name__}: {exc.msg} ({where})"
    else:
        line = "".join(_traceback.format_exception_only(type(exc), exc)).strip()
        line = " | ".join(part.strip() for part in line.splitlines() if part.strip())
    if frames:
        line += " [at " + " <- ".join(
            f"{_os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in reversed(frames)
        ) + "]"
    full = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
    return line, full
