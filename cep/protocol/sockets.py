"""Closing a bound ZeroMQ socket so that its port is free when the call returns.

`zmq_close` only hands the socket to libzmq's reaper: the I/O thread closes the listening
file descriptor a moment later (milliseconds, longer on a loaded machine). Until then the port
is still taken, so a plan restarted at once cannot bind its remembered port again, and a
worker that reports a plan stopped or failed still holds that plan's listener.
`close_bound` waits for libzmq's own notice that the socket is gone."""

import logging
import time
from typing import Any

import zmq
from zmq.utils.monitor import recv_monitor_message

log = logging.getLogger(__name__)


def close_bound(sock: Any, timeout: float = 2.0) -> bool:
    """Close `sock` (linger 0) and return once libzmq has closed its listeners, at most
    `timeout` seconds later; True when it confirmed that. Call it from the socket's thread."""
    if sock.closed:
        return True
    # the monitor outlives the socket: libzmq reports MONITOR_STOPPED when it destroys the
    # socket, after every listener of it has closed its file descriptor
    monitor = sock.get_monitor_socket(zmq.EVENT_MONITOR_STOPPED)
    try:
        sock.close(0)
        end = time.monotonic() + timeout
        while monitor.poll(max(0, int((end - time.monotonic()) * 1000))):
            if recv_monitor_message(monitor)["event"] == zmq.EVENT_MONITOR_STOPPED:
                return True
        log.warning(
            "ZeroMQ socket closed, but its listeners not confirmed closed in %.1f s", timeout
        )
        return False
    finally:
        monitor.close(0)
