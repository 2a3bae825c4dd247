"""ZeroMQ CURVE on the cluster's links: keys, socket setup and the ZAP handler.

One cluster key pair. Every component of the cluster (manager, workers, topology drivers and
tasks) holds its secret key; servers use it as their CURVE server key, clients present it as
their own key, and the ZAP handler of each process lets in only clients that present the
cluster public key. A party without the cluster secret key can neither complete a handshake
nor read the traffic. The worker's ZeroMQ event receiver also lets in client keys the operator
listed in ``<curve dir>/clients/*.key`` (domain ``ingest``), so senders outside the cluster get
their own key pair and need only the cluster *public* key.

    keys = create_or_load(data_dir / "security" / "curve")   # manager, first start
    keys = load(curve_dir)                                     # worker (--curve-dir)
    start_authenticator(ctx, keys)                             # once per context with servers
    server(sock, keys); sock.bind(...)                         # before bind
    client(sock, keys); sock.connect(...)                      # before connect

Every helper is a no-op when ``keys`` is None (CURVE off).
"""

import hashlib
import hmac
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from cep.security.exceptions import CurveKeyError
from cep.protocol.settings import Setting

CLUSTER = "cluster"  # ZAP domain of cluster links: the cluster key only
INGEST = "ingest"  # ZAP domain of the worker's ZeroMQ receiver: cluster key + listed clients
CERT_NAME = "cluster"
ENV_DIR = "CEP_CURVE_DIR"


@dataclass(frozen=True)
class CurveKeys:
    """The cluster key pair (z85 bytes) and the client public keys allowed on `ingest`."""

    public: bytes
    secret: bytes = field(repr=False)
    clients: frozenset = frozenset()

    def to_dict(self):
        return {"public": self.public.decode("ascii"), "secret": self.secret.decode("ascii")}

    @classmethod
    def from_dict(cls, data):
        if not data:
            return None
        return cls(data["public"].encode("ascii"), data["secret"].encode("ascii"))


@dataclass(frozen=True)
class LinkSecurity:
    """What a process needs on its ZeroMQ links: CURVE keys (None: off) and the cluster secret
    that registry requests carry (None: none; required by a registry given one, CURVE off).
    `brokers`: the named broker connections a topology's components use, as sorted
    (name, url) pairs (the NATS transport's server: its URL may hold a password, so it
    travels here, in the private launch options, while the topology spec names it only)."""

    curve: CurveKeys = None
    secret: str = field(default=None, repr=False)
    brokers: tuple = field(default=(), repr=False)

    def to_options(self):
        """A plain dict for a topology's launch options (never a command line)."""
        return {
            "curve": self.curve.to_dict() if self.curve else None,
            "secret": self.secret,
            "brokers": dict(self.brokers),
        }

    @classmethod
    def from_options(cls, data):
        if not data:
            return cls()
        brokers = tuple(sorted((data.get("brokers") or {}).items()))
        return cls(CurveKeys.from_dict(data.get("curve")), data.get("secret"), brokers)


OFF = LinkSecurity()

CURVE_SETTINGS = [  # declared once, in the manager's and the worker's settings
    Setting(
        "security",
        "curve",
        bool,
        False,
        "ZeroMQ CURVE (authentication and encryption) "
        "on every cluster link: registry, worker <-> spouts, publisher bolts -> workers, "
        "task links, the worker's ZeroMQ receiver (off: plain TCP, for loopback)",
    ),
    Setting(
        "security",
        "curve_dir",
        str,
        "",
        "folder of the cluster key pair (cluster.key, "
        "cluster.key_secret 0600; clients/*.key: outside senders allowed on the worker's "
        "ZeroMQ receiver). Manager: empty is <data_dir>/security/curve, created at first "
        "start. Worker: a copy of the manager's folder (also --curve-dir, CEP_CURVE_DIR; "
        "giving one turns CURVE on)",
    ),
]


def create_or_load(curve_dir):
    """The cluster key pair under curve_dir, created at first use (secret file 0600)."""
    curve_dir = Path(curve_dir)
    secret_file = curve_dir / f"{CERT_NAME}.key_secret"
    if not secret_file.exists():
        curve_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(curve_dir, 0o700)
        old = os.umask(0o077)
        try:
            zmq.auth.create_certificates(str(curve_dir), CERT_NAME)
        finally:
            os.umask(old)
    os.chmod(secret_file, 0o600)
    return load(curve_dir)


def load(curve_dir):
    """The cluster key pair from curve_dir (its `cluster.key_secret`), with the client keys
    in `clients/*.key`; CurveKeyError naming the file when it is missing or unreadable."""
    curve_dir = Path(curve_dir)
    secret_file = curve_dir / f"{CERT_NAME}.key_secret"
    try:
        public, secret = zmq.auth.load_certificate(str(secret_file))
    except (OSError, ValueError) as exc:
        raise CurveKeyError(
            f"cannot read the cluster CURVE key {secret_file}: {exc} (copy "
            f"the manager's <data dir>/security/curve/ here)"
        ) from None
    if not secret:
        raise CurveKeyError(f"{secret_file} holds no secret key")
    return CurveKeys(public, secret, _client_keys(curve_dir / "clients"))


def _client_keys(folder):
    if not folder.is_dir():
        return frozenset()
    return frozenset(zmq.auth.load_certificates(str(folder)))


def worker_keys(cfg, env=None):
    """The worker's keys: load(security.curve_dir or $CEP_CURVE_DIR) when CURVE is on or a
    folder is given; None when off."""
    env = os.environ if env is None else env
    curve_dir = cfg["security.curve_dir"] or env.get(ENV_DIR, "")
    if not (cfg["security.curve"] or curve_dir):
        return None
    if not curve_dir:
        raise CurveKeyError(
            "security.curve is on but no key folder is given (security."
            "curve_dir, --curve-dir or CEP_CURVE_DIR)"
        )
    return load(curve_dir)


def manager_keys(settings, data_dir):
    """The manager's keys: created at first start under security.curve_dir (default
    <data_dir>/security/curve) whether CURVE is on or not; returned only when it is on."""
    keys = create_or_load(settings["security.curve_dir"] or Path(data_dir) / "security" / "curve")
    return keys if settings["security.curve"] else None


def server(sock, keys, domain=CLUSTER):
    """Make sock a CURVE server in a ZAP domain (call before bind); no-op without keys."""
    if keys is None:
        return sock
    sock.setsockopt_string(zmq.ZAP_DOMAIN, _domain(domain, keys))
    sock.curve_secretkey = keys.secret
    sock.curve_publickey = keys.public
    sock.curve_server = True
    return sock


def client(sock, keys, server_key=None):
    """Make sock a CURVE client with the cluster key (call before connect); no-op without."""
    if keys is None:
        return sock
    sock.curve_secretkey = keys.secret
    sock.curve_publickey = keys.public
    sock.curve_serverkey = server_key or keys.public
    return sock


class _Allowed:
    """A ZAP credentials provider: a fixed set of z85 client public keys."""

    def __init__(self, keys):
        self.keys = frozenset(keys)

    def callback(self, domain, key):
        return key in self.keys


def _domain(domain, keys):
    """The ZAP domain of a server socket: its kind and its cluster public key, so a process
    holding two key pairs (tests, tools) admits each server's own cluster only."""
    return f"{domain}/{keys.public.decode('ascii')}"


_AUTHS = {}
_LOCK = threading.Lock()


def _authenticator(ctx):
    """The context's ZAP handler, started once (call under _LOCK)."""
    entry = _AUTHS.get(id(ctx))
    if entry is None or entry[0] is not ctx:
        auth = ThreadAuthenticator(ctx)
        auth.start()
        entry = _AUTHS[id(ctx)] = (ctx, auth)
    return entry[1]


def start_authenticator(ctx, keys):
    """Start (once per context) the ZAP handler, and let it admit the cluster key of `keys`
    on its servers (and the listed clients on `ingest`); returns it, or None without keys."""
    if keys is None:
        return None
    with _LOCK:
        auth = _authenticator(ctx)
        auth.configure_curve_callback(_domain(CLUSTER, keys), _Allowed({keys.public}))
        auth.configure_curve_callback(_domain(INGEST, keys), _Allowed({keys.public, *keys.clients}))
        return auth


PLAIN_USER = "publisher-bolt"


def plan_token(secret, tenant, plan):
    """The password a plan's publisher bolts present to the workers' publisher ports when
    CURVE is off: derived from the cluster secret, so it differs per plan and needs no
    distribution (the manager's tasks and the workers both hold the secret)."""
    return hmac.new(
        secret.encode(), f"publisher/{tenant}/{plan}".encode(), hashlib.sha256
    ).hexdigest()


def plain_server(sock, ctx, domain, password):
    """Make sock a PLAIN server of `domain` that admits only `password` (ZAP; call before
    bind). Without CURVE this keeps other plans' bolts and local users off a publisher port;
    the password crosses loopback in clear, which is why CURVE is required beyond it."""
    with _LOCK:
        _authenticator(ctx).configure_plain(domain, {PLAIN_USER: password})
    sock.setsockopt_string(zmq.ZAP_DOMAIN, domain)
    sock.plain_server = True
    return sock


def plain_client(sock, password):
    sock.plain_username = PLAIN_USER.encode()
    sock.plain_password = password.encode()
    return sock


def stop_authenticator(ctx):
    """Stop the context's ZAP handler (before ctx.destroy()); no-op when none runs."""
    with _LOCK:
        entry = _AUTHS.pop(id(ctx), None)
    if entry is not None and entry[0] is ctx:
        entry[1].stop()
