"""Names and connections of the NATS JetStream transport of plan topologies
(`topology.transport: nats`, the seed's messaging layer).

With it a plan's inflow (CEP worker -> receiver spout) and outflow (publisher bolt -> CEP
worker) go through JetStream instead of point-to-point ZeroMQ:

- inflow: subject `cep.in.<tenant>.<plan>.<stream>` of JetStream stream
  `CEP_IN_<tenant>_<plan>`; the worker publishes each batch (a cep/protocol/frames.py event
  frame) with a `Nats-Msg-Id` (cep/worker/nats_inflow.py); each receiver spout task reads it
  through a durable consumer and keeps the stream sequence in the checkpoints
  (receivers/nats_spout.py);
- outflow: subject `cep.out.<tenant>.<plan>` of stream `CEP_OUT_<tenant>_<plan>`; publisher
  bolts publish their output frames with message ids from the batch's identity
  (publishers/nats_bolt.py), the worker's publisher side reads them through a durable
  consumer and hands them to the plan's sinks (publishers/nats_service.py).

The server is a named connection of `connections.brokers` (its URL and credentials stay in
the operator's settings, never in a plan); none named: `nats://127.0.0.1:4222`, loopback."""

import re
from typing import Mapping, Optional

from cep.policy.exceptions import PolicyViolation

DEFAULT_URL = "nats://127.0.0.1:4222"
KINDS = ("zmq", "nats")
SCHEMES = ("nats", "tls")
MSG_ID = "Nats-Msg-Id"
MAX_AGE_S = 24 * 3600.0  # how long the transport's streams keep a message
DUPLICATE_WINDOW_S = 120.0  # JetStream drops a message id seen within this window


def _token(value) -> str:
    """A subject token: no `.`, `*`, `>` or white space."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(value))


def inflow_subject(tenant, plan: str, stream: str) -> str:
    return f"cep.in.{_token(tenant)}.{_token(plan)}.{_token(stream)}"


def inflow_filter(tenant, plan: str) -> str:
    """Every imported stream of a plan."""
    return f"cep.in.{_token(tenant)}.{_token(plan)}.>"


def inflow_stream(tenant, plan: str) -> str:
    return f"CEP_IN_{_token(tenant)}_{_token(plan)}"


def outflow_subject(tenant, plan: str) -> str:
    return f"cep.out.{_token(tenant)}.{_token(plan)}"


def outflow_stream(tenant, plan: str) -> str:
    return f"CEP_OUT_{_token(tenant)}_{_token(plan)}"


def consumer_name(*parts) -> str:
    """A durable consumer name (no `.`, `*`, `>`)."""
    return "_".join(_token(p) for p in parts)


def check_kind(kind: str) -> str:
    """The transport kind, lower case; ValueError naming the ones that exist."""
    kind = str(kind or "zmq").strip().lower()
    if kind not in KINDS:
        raise ValueError(f"transport {kind!r} is not one of {', '.join(KINDS)}")
    return kind


def transport_url(connection: Optional[str], brokers: Optional[Mapping[str, str]]) -> str:
    """The NATS server URL of the transport: the named `connections.brokers` entry, or the
    loopback default when none is named. PolicyViolation for an unknown name or a connection
    that is not NATS."""
    if not connection:
        return DEFAULT_URL
    brokers = brokers or {}
    if connection not in brokers:
        known = ", ".join(sorted(brokers)) or "none are configured"
        raise PolicyViolation(
            f"the NATS transport's connection {connection!r} is not a "
            f"configured broker connection (connections.brokers: {known})"
        )
    url = brokers[connection]
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise PolicyViolation(
            f"the NATS transport needs a nats:// or tls:// connection; "
            f"{connection!r} is {scheme}://"
        )
    return url


async def connect(url: str, name: str):
    """A nats-py connection that reconnects for ever (the transport outlives a server
    restart)."""
    import nats

    return await nats.connect(
        servers=[url],
        name=name,
        connect_timeout=5,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        allow_reconnect=True,
    )


async def ensure_stream(js, name: str, subjects: list) -> None:
    """Create the file-backed JetStream stream `name` for `subjects` when it does not exist
    (messages kept MAX_AGE_S; message ids deduplicated within DUPLICATE_WINDOW_S)."""
    import nats.js.errors
    from nats.js.api import StorageType, StreamConfig

    try:
        await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        await js.add_stream(
            StreamConfig(
                name=name,
                subjects=subjects,
                max_age=MAX_AGE_S,
                storage=StorageType.FILE,
                duplicate_window=DUPLICATE_WINDOW_S,
            )
        )
