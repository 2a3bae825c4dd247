"""cep.protocol.sockets.close_bound: when it returns, the socket's listening ports are closed
(plain `close()` leaves them to libzmq's I/O thread, which closes them a moment later), so the
same port can be bound again at once; counted from the operating system (psutil)."""

import psutil
import zmq

from cep.protocol.sockets import close_bound


def listening():
    return {
        c.laddr.port
        for c in psutil.Process().net_connections("tcp")
        if c.status == psutil.CONN_LISTEN
    }


def test_every_listener_is_closed_when_close_bound_returns_and_the_port_binds_again():
    ctx = zmq.Context.instance()
    for _ in range(100):
        sock = ctx.socket(zmq.PULL)
        ports = [sock.bind_to_random_port("tcp://127.0.0.1") for _ in range(2)]
        assert set(ports) <= listening()
        assert close_bound(sock) is True and sock.closed
        assert not set(ports) & listening()
        again = ctx.socket(zmq.PULL)
        again.bind(f"tcp://127.0.0.1:{ports[0]}")  # would raise EADDRINUSE if still listening
        again.close(0)
    assert close_bound(sock) is True  # already closed: nothing to wait for
