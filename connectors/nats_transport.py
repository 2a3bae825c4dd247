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
the operator's settings, never in a plan or a topology spec); none named:
`nats://127.0.0.1:4222`, loopback. TLS: a `tls://` URL, with its CA and client certificate
as URL options (split_tls)."""

import logging
import re
from typing import Mapping, Optional

from cep.policy.exceptions import PolicyViolation

log = logging.getLogger(__name__)
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
    split_tls(url, connection)  # its TLS options must be known ones
    return url


TLS_OPTIONS = ("ca", "cert", "key")


def split_tls(url: str, connection: str = "") -> tuple:
    """(URL without its query, {option: file}) of a transport connection. TLS is configured
    in the named connection's URL: `tls://[user:pw@]host:port?ca=CA.pem[&cert=C.pem&key=K.pem]`
    (`ca`: the CA that signed the server's certificate, else the system's; `cert`/`key`: a
    client certificate for a server that verifies clients; files on every machine that
    connects: manager, workers, Spark executors). PolicyViolation for another option, a
    client key without its certificate, or TLS files on a nats:// URL."""
    from urllib.parse import parse_qsl

    base, sep, query = url.partition("?")
    if not sep:
        return url, {}
    where = f"the NATS transport's connection {connection!r}" if connection else "a NATS URL"
    options = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in TLS_OPTIONS:
            raise PolicyViolation(
                f"{where}: unknown option {key!r} (known: {', '.join(TLS_OPTIONS)})"
            )
        if not value:
            raise PolicyViolation(f"{where}: option {key!r} names no file")
        options[key] = value
    if "key" in options and "cert" not in options:
        raise PolicyViolation(f"{where}: key= needs cert= (the client certificate)")
    if base.split("://", 1)[0].lower() != "tls":
        raise PolicyViolation(f"{where}: ca=, cert= and key= need a tls:// URL")
    return base, options


def tls_context(options: Mapping[str, str]):
    """An ssl.SSLContext verifying the server with `ca` (else the system's CAs) and
    presenting `cert`/`key` when given; PolicyViolation naming a file that cannot be read."""
    import ssl

    try:
        ctx = ssl.create_default_context(cafile=options.get("ca"))
        if options.get("cert"):
            ctx.load_cert_chain(options["cert"], options.get("key"))
    except (OSError, ssl.SSLError) as exc:
        raise PolicyViolation(f"NATS transport TLS files {dict(options)}: {exc}") from None
    return ctx


def component_url(config: Mapping, security=None) -> str:
    """The server URL a topology component (receiver spout, publisher bolt) connects to.

    The topology spec (written under Spark's state dir, read by every executor) names the
    connection only (`nats_connection`); its URL, credentials included, comes with the
    topology's private launch options (`security.brokers`, cep/security/curve.py), as the
    CURVE keys and the cluster secret do. A spec's own `nats_url` (library use and tests
    without a manager) is taken as it is. PolicyViolation when the named connection did not
    come with the launch options."""
    if config.get("nats_url"):
        return str(config["nats_url"])
    name = config.get("nats_connection") or ""
    if not name:
        return DEFAULT_URL
    brokers = dict(getattr(security, "brokers", None) or ())
    if name not in brokers:
        raise PolicyViolation(
            f"the NATS transport's connection {name!r} did not come with the topology's "
            f"launch options (the manager resolves it in connections.brokers)"
        )
    return transport_url(name, brokers)


async def connect(url: str, name: str, connect_timeout: float = 5, reconnect: bool = True):
    """A nats-py connection that reconnects for ever (the transport outlives a server
    restart; `reconnect=False`: one that fails instead)."""
    import nats
    import nats.errors

    url, tls = split_tls(url)
    extra: dict = {"tls": tls_context(tls)} if url.lower().startswith("tls://") else {}
    failures: list = []
    if not reconnect:  # the caller reports the failure: no traceback logged per attempt

        async def quiet(exc):
            failures.append(exc)
            log.debug("%s: %s: %s", name, type(exc).__name__, exc)

        extra["error_cb"] = quiet
    try:
        return await nats.connect(
            servers=[url],
            name=name,
            connect_timeout=connect_timeout,
            # nats-py tries a server max_reconnect_attempts + 1 times (0: for ever)
            max_reconnect_attempts=-1 if reconnect else 1,
            reconnect_time_wait=0.5,
            allow_reconnect=reconnect,
            **extra,
        )
    except nats.errors.NoServersError:
        if failures:  # why the attempts failed, not only that they did
            raise failures[-1] from None
        raise


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


async def delete_plan_streams(js, tenant, plan: str) -> list:
    """Delete the plan's inflow and outflow streams (their durable consumers go with them);
    the names of those that existed. For a plan that was removed, never for one that is
    restarted: its unread input is in the inflow stream."""
    import nats.js.errors

    deleted = []
    for name in (inflow_stream(tenant, plan), outflow_stream(tenant, plan)):
        try:
            await js.delete_stream(name)
        except nats.js.errors.NotFoundError:
            continue
        deleted.append(name)
    return deleted


ACTIVE_S = 10.0  # a consumer delivered within this long, or waiting on a pull, is reading
SAMPLE_S = 2.0  # how often a worker's inflow and publisher service read their stream's state


async def stream_report(js, name: str, prefix: str = "") -> dict:
    """What a transport stream holds and how far its consumers (those named `prefix...`)
    read it: `messages` stored, `published` (the last sequence: every message the stream
    took), `consumers`, `reading` (consumers with a pull request waiting or a delivery in
    the last ACTIVE_S s), `pending` (the most messages one consumer has not acknowledged:
    not delivered yet or delivered and unacknowledged) and `acked` (the lowest
    acknowledgement floor, a stream sequence). `exists` False when there is no such stream."""
    import datetime

    import nats.js.errors

    try:
        info = await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        return {"stream": name, "exists": False}
    consumers = []
    while True:  # the server lists 256 consumers a page
        page = await js.consumers_info(name, offset=len(consumers))
        consumers.extend(page)
        if len(page) < 256:
            break
    ours = [c for c in consumers if c.name.startswith(prefix)]
    now = datetime.datetime.now(datetime.timezone.utc)

    def reading(c) -> bool:
        last = c.delivered.last_active if c.delivered else None
        recent = last is not None and (now - last).total_seconds() < ACTIVE_S
        return recent or bool(c.num_waiting)

    return {
        "stream": name,
        "exists": True,
        "messages": int(info.state.messages),
        "published": int(info.state.last_seq),
        "consumers": len(ours),
        "reading": sum(1 for c in ours if reading(c)),
        "pending": max(((c.num_pending or 0) + (c.num_ack_pending or 0) for c in ours), default=0),
        "acked": min((c.ack_floor.stream_seq if c.ack_floor else 0 for c in ours), default=0),
    }
