"""The listening TCP ports of this process (psutil), and which new ones a worker answers for.

Tests that prove a worker closes every port it opened compare the operating system's listening
sockets before and after. Under pytest-xdist the process has run other test files first, so a
listener that something else opens meanwhile (a server a fixture or an earlier test left
running) must not count against the worker, and one the worker opened must never be excused.
`Listeners` excuses a new listener only when an open socket object on that port is held by a
thread that was running before the worker started (its target or its stack) and not by the
worker; any other new listener counts, including one whose socket was closed but still listens
and one whose socket object the worker dropped without closing it."""

import gc
import socket
import sys
import threading
import types

import psutil
import zmq

# not followed when looking for sockets: shared by everything in the process
_OPAQUE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.CodeType,
    zmq.Context,
)


def listening():
    """This process's listening TCP ports, sorted."""
    proc = psutil.Process()
    conns = (
        proc.net_connections("tcp") if hasattr(proc, "net_connections") else proc.connections("tcp")
    )
    return sorted(c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN)


class Listeners:
    """Create it before the worker starts; `mark()` once the worker is up (its own HTTP and
    ZeroMQ receivers are not what a test counts); `new(worker)` is the set of listening ports
    opened since the mark that the worker answers for."""

    def __init__(self):
        me = threading.current_thread()
        self.threads = [t for t in threading.enumerate() if t is not me]
        self.ports = set(listening())

    def mark(self):
        self.ports = set(listening())
        return self

    def new(self, worker):
        new = set(listening()) - self.ports
        return new - self.foreign(worker) if new else new

    def foreign(self, worker):
        """Ports of open sockets held by the threads that ran before the worker, not by it."""
        mine, _ = _walk([worker])
        frames = sys._current_frames()
        roots = list(self.threads)
        for t in self.threads:  # a running frame's locals are not among its gc referents
            frame = frames.get(t.ident)
            while frame is not None:
                roots.append(frame.f_locals)
                frame = frame.f_back
        _, sockets = _walk(roots, skip=mine)
        return {p for p in map(_port, sockets) if p}


def _walk(roots, skip=frozenset()):
    """(ids of the objects reachable from `roots`, the socket objects among them); modules'
    globals, classes, functions and the ZeroMQ context are not followed."""
    opaque = {id(vars(m)) for m in list(sys.modules.values()) if m is not None}
    seen, sockets, todo = set(), [], list(roots)
    while todo:
        obj = todo.pop()
        key = id(obj)
        if key in seen or key in skip or key in opaque or isinstance(obj, _OPAQUE):
            continue
        seen.add(key)
        if isinstance(obj, (socket.socket, zmq.Socket)):
            sockets.append(obj)
        todo.extend(gc.get_referents(obj))
    return seen, sockets


def _port(sock):
    """The local port of an open Python socket or the bound port of an open ZeroMQ socket."""
    try:
        if isinstance(sock, socket.socket):
            return sock.getsockname()[1] if sock.fileno() != -1 else None
        if not sock.closed:
            endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
            return int(endpoint.rsplit(":", 1)[1]) if endpoint.startswith("tcp://") else None
    except (OSError, ValueError, IndexError, zmq.ZMQError):
        return None
    return None
