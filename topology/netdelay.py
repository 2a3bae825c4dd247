"""Delay every packet of one network namespace by a fixed time, both ways: a slow machine.

This kernel has no netem qdisc (`tc ... netem delay` answers "qdisc kind is unknown"), so the
rig delays packets in user space: iptables sends the namespace's incoming and outgoing
packets to netfilter queue 0 (`NFQUEUE --queue-bypass`: while no program listens they pass),
and this program, run inside the namespace, holds each one for the delay before it accepts
it, in arrival order. It speaks nfnetlink_queue directly (a netlink socket; messages as in
linux/netfilter/nfnetlink_queue.h), so it needs no C library.

    ip netns exec NS python -m topology.netdelay DELAY_MS

It stops (accepting what it holds) on SIGTERM."""

import collections
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
MSG_PACKET, MSG_VERDICT, MSG_CONFIG = 0, 1, 2
CFG_CMD, CFG_PARAMS = 1, 2
CMD_BIND = 1
COPY_META = 1
ATTR_PACKET_HDR, ATTR_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
QUEUE = 0


def _attr(kind: int, payload: bytes) -> bytes:
    head = struct.pack("=HH", 4 + len(payload), kind)
    return head + payload + b"\0" * (-(4 + len(payload)) % 4)


def _message(kind: int, flags: int, seq: int, family: int, attrs: bytes) -> bytes:
    body = struct.pack("=BBH", family, 0, socket.htons(QUEUE)) + attrs
    return (
        struct.pack(
            "=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, NLM_F_REQUEST | flags, seq, 0
        )
        + body
    )


def _packet_ids(data: bytes):
    """The packet ids of the queued-packet messages in one netlink read."""
    at = 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if length < 16:
            return
        if kind == (NFNL_SUBSYS_QUEUE << 8) | MSG_PACKET:
            pos, end = at + 20, at + length
            while pos + 4 <= end:
                alen, atype = struct.unpack_from("=HH", data, pos)
                if alen < 4:
                    break
                if atype & 0x7FFF == ATTR_PACKET_HDR:
                    yield struct.unpack_from(">I", data, pos + 4)[0]
                    break
                pos += (alen + 3) & ~3
        elif kind == NLMSG_ERROR:
            code = struct.unpack_from("=i", data, at + 16)[0]
            if code:
                raise OSError(-code, f"nfnetlink_queue refused a request: {code}")
        at += (length + 3) & ~3


def run(delay_s: float) -> None:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    # bind queue 0 (family unspecified), copy only the metadata: the verdict needs the id
    sock.send(
        _message(
            MSG_CONFIG,
            NLM_F_ACK,
            1,
            0,
            _attr(CFG_CMD, struct.pack("=BBH", CMD_BIND, 0, socket.htons(2))),
        )
    )
    sock.send(
        _message(MSG_CONFIG, NLM_F_ACK, 2, 0, _attr(CFG_PARAMS, struct.pack(">IB", 0, COPY_META)))
    )
    held = collections.deque()  # (due, packet id) in arrival order
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    seq = 3
    print("ready", flush=True)
    while not stop:
        wait = max(0.0, held[0][0] - time.monotonic()) if held else 0.5
        try:
            readable, _, _ = select.select([sock], [], [], wait)
        except InterruptedError:
            continue
        if readable:
            now = time.monotonic()
            for pid in _packet_ids(sock.recv(1 << 20)):
                held.append((now + delay_s, pid))
        now = time.monotonic()
        while held and (held[0][0] <= now or stop):
            _, pid = held.popleft()
            sock.send(
                _message(
                    MSG_VERDICT,
                    0,
                    seq,
                    0,
                    _attr(ATTR_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, pid)),
                )
            )
            seq += 1
    while held:  # stopping: let everything held through
        _, pid = held.popleft()
        sock.send(
            _message(
                MSG_VERDICT, 0, seq, 0, _attr(ATTR_VERDICT_HDR, struct.pack(">II", NF_ACCEPT, pid))
            )
        )
        seq += 1


if __name__ == "__main__":
    run(float(sys.argv[1]) / 1000.0)
