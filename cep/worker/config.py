"""Worker settings: declared once here, layered defaults < conf/worker.yaml < CEP_* env < flags.

cfg = load_config(overrides={"worker.mode": "standalone"})
cfg["receivers.http_port"], cfg.source("receivers.http_port")
"""

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from cep.policy import POLICY_SETTINGS
from cep.security.curve import CURVE_SETTINGS
from cep.worker.exceptions import WorkerConfigError
from cep.worker.ha.settings import HA_SETTINGS, check_ha
from cep.protocol.exceptions import SettingsError
from cep.protocol.settings import Schema, Setting, Settings

if TYPE_CHECKING:
    from cep.policy import HostPolicy

MODES = ("distributed", "standalone")
ROLES = ("receiver", "publisher")

WORKER_SCHEMA = Schema(
    "worker",
    [
        Setting("worker", "id", str, "", "worker id; empty means <hostname>:<http port>"),
        Setting(
            "worker",
            "mode",
            str,
            "distributed",
            "distributed (plans on Spark via the "
            "manager) or standalone (plans in-process with the engine)",
            MODES,
        ),
        Setting("worker", "roles", list, ["receiver", "publisher"], "receiver, publisher or both"),
        Setting(
            "worker",
            "advertised_host",
            str,
            "",
            "host other machines reach this worker at; empty means the first non-loopback IPv4",
        ),
        Setting("worker", "tenant", int, -1234, "tenant of locally loaded plans (standalone)"),
        Setting(
            "worker",
            "state_dir",
            str,
            "var/worker",
            "where the worker remembers its publisher "
            "ports, so a restarted worker rebinds them and publisher bolts reconnect",
        ),
        Setting(
            "managers",
            "urls",
            list,
            ["http://127.0.0.1:9763"],
            "manager REST addresses; the worker uses whichever answers",
        ),
        Setting(
            "managers",
            "registries",
            list,
            [],
            "registry addresses (tcp://host:port), same "
            "order as managers.urls; empty means the address each manager reports at "
            "GET /api/v1/manager",
        ),
        Setting(
            "managers",
            "cluster_secret_file",
            str,
            "",
            "file of the manager's cluster secret "
            "(<manager data>/security/cluster-secret), sent on plan sync; empty: "
            "$CEP_CLUSTER_SECRET",
        ),
        Setting("managers", "poll_interval", float, 2.0, "seconds between deployment polls (<= 5)"),
        Setting("managers", "timeout", float, 2.0, "seconds to wait for one manager answer"),
        Setting(
            "managers",
            "self_undeploy",
            bool,
            True,
            "undeploy the distributed plans (events "
            "get 503) when no manager answered for transport.heartbeat_interval x "
            "managers.max_retries s; redeploy them when one answers",
        ),
        Setting(
            "managers",
            "max_retries",
            int,
            6,
            "heartbeat intervals without any manager "
            "answer before the worker undeploys its distributed plans; 0 = never",
        ),
        Setting(
            "receivers",
            "http_host",
            str,
            "127.0.0.1",
            "bind address of the HTTP receiver, "
            "status API and publisher services (another address than loopback is logged as a "
            "warning: no authentication yet beyond ingest keys)",
        ),
        Setting("receivers", "http_port", int, 9090, "HTTP port; 0 picks a free port"),
        Setting(
            "receivers", "zmq_host", str, "127.0.0.1", "bind address of the ZeroMQ msgpack receiver"
        ),
        Setting(
            "receivers",
            "max_body_bytes",
            int,
            16 * 1024 * 1024,
            "largest HTTP request body (413 beyond it)",
        ),
        Setting(
            "receivers",
            "max_json_depth",
            int,
            32,
            "deepest JSON nesting of an HTTP body (400 beyond it)",
        ),
        Setting(
            "receivers",
            "max_events",
            int,
            100_000,
            "most events in one HTTP request (413 beyond it)",
        ),
        Setting(
            "receivers",
            "ingest_keys",
            list,
            [],
            "per-tenant ingest keys as tenant=key; a "
            "tenant listed here needs the key in X-CEP-Ingest-Key or Authorization: Bearer "
            "(401 without it)",
        ),
        Setting(
            "receivers",
            "zmq_port",
            int,
            9091,
            "ZeroMQ receiver port; 0 picks a free port, -1 disables",
        ),
        Setting(
            "transport",
            "buffer_events",
            int,
            100000,
            "events buffered per imported stream "
            "while its receiver spout is unreachable; more are refused",
        ),
        Setting("transport", "batch_size", int, 1000, "events per frame sent to a receiver spout"),
        Setting("transport", "flush_ms", float, 5.0, "longest wait before a partial frame is sent"),
        Setting(
            "transport",
            "reconnect_interval",
            float,
            1.0,
            "seconds between spout lookups while disconnected",
        ),
        Setting(
            "transport",
            "heartbeat_interval",
            float,
            5.0,
            "seconds between publisher registrations (the registry heartbeat)",
        ),
        Setting(
            "standalone",
            "plans",
            list,
            [],
            "plan files or folders (*.siddhiql) run in standalone mode; re-read when they change",
        ),
        Setting(
            "sinks",
            "default",
            str,
            "log",
            "sink for exported streams without @sink: log or file",
            ("log", "file"),
        ),
        Setting(
            "sinks",
            "dir",
            str,
            "var/out",
            "folder of default file sinks (<dir>/<plan>/<stream>.jsonl)",
        ),
        Setting(
            "delivery",
            "default",
            str,
            "at-least-once",
            "output delivery of sinks that "
            "name none (@sink(delivery=...)): at-least-once (replayed results counted as "
            "duplicates), exactly-once (file and Redis sinks: committed at checkpoints; other "
            "sinks stay at-least-once), at-most-once (fastest, no duplicate state)",
            ("at-least-once", "exactly-once", "at-most-once"),
        ),
        Setting(
            "delivery",
            "dedup",
            bool,
            True,
            "at-least-once sinks drop the duplicates they "
            "count (false: write them again, as Flink's at-least-once does)",
        ),
        Setting(
            "delivery",
            "marks",
            str,
            "fsync",
            "where the duplicate marks of at-least-once output are kept: fsync (on disk under "
            "<worker.data_dir>/marks, a group commit fdatasyncs them before the publisher bolt "
            "is answered: a worker restart, even a machine crash, does not write an answered "
            "result twice), os (on disk, written to the OS before the answer: survives a "
            "worker crash), off (in memory: a worker restart forgets them)",
            ("fsync", "os", "off"),
        ),
        Setting(
            "worker",
            "data_dir",
            str,
            "",
            "where the worker keeps its data (the receivers' "
            "write-ahead logs under <data_dir>/wal/<tenant>/<plan>/<stream>/); empty means "
            "<worker.state_dir>/<worker id>",
        ),
        Setting(
            "wal",
            "enabled",
            bool,
            True,
            "log every accepted event before answering 200 or "
            "taking a ZeroMQ frame; off means at-most-once delivery, the fastest",
        ),
        Setting(
            "wal",
            "durability",
            str,
            "os",
            "when an accepted batch counts as logged: fsync "
            "(fdatasync before the answer: survives a machine crash), os (written to the OS: "
            "survives a worker crash), none (a memory buffer written within 0.2 s: fastest)",
            ("fsync", "os", "none"),
        ),
        Setting(
            "wal",
            "segment_bytes",
            int,
            64 * 1024 * 1024,
            "size at which a log segment file is closed and a new one started",
        ),
        Setting(
            "wal",
            "max_bytes",
            int,
            1024 * 1024 * 1024,
            "most uncommitted log bytes per "
            "imported stream; beyond it HTTP answers 503 and ZeroMQ stops reading "
            "(back-pressure); 0 = no cap",
        ),
        Setting(
            "wal",
            "max_age_s",
            float,
            3600.0,
            "oldest uncommitted data a log may hold before "
            "the receivers push back the same way; 0 = no cap",
        ),
        *POLICY_SETTINGS,  # files.roots (default <state_dir>/tenants/{tenant}/files), limits.*
        *CURVE_SETTINGS,  # security.curve, security.curve_dir (CEP_CURVE_DIR too)
        *HA_SETTINGS,  # ha.*: the standalone active/passive pair (cep/worker/ha)
    ],
)


def load_config(
    overrides: Optional[Mapping[str, Any]] = None,
    path: Union[str, Path, None] = None,
    env: Optional[Mapping[str, str]] = None,
    conf_dir: Union[str, Path, None] = None,
) -> Settings:
    """Load and check the worker settings; raises WorkerConfigError naming the bad setting."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    try:
        cfg = WORKER_SCHEMA.load(conf_dir=conf_dir, env=env, overrides=overrides, path=path)
    except SettingsError as exc:
        raise WorkerConfigError(str(exc)) from None
    _check(cfg)
    return cfg


def _check(cfg: Settings) -> None:
    bad_roles = [r for r in cfg["worker.roles"] if r not in ROLES]
    if bad_roles or not cfg["worker.roles"]:
        raise WorkerConfigError(
            f"setting worker.roles ({cfg.source('worker.roles')}): "
            f"{cfg['worker.roles']!r} must name receiver and/or publisher"
        )
    if not 0 < cfg["managers.poll_interval"] <= 5:
        raise WorkerConfigError(
            f"setting managers.poll_interval "
            f"({cfg.source('managers.poll_interval')}): must be in (0, 5] s"
        )
    if cfg["worker.mode"] == "distributed" and not cfg["managers.urls"]:
        raise WorkerConfigError(
            "distributed mode needs at least one manager address "
            "(managers.urls, CEP_MANAGERS_URLS or --manager)"
        )
    regs = cfg["managers.registries"]
    if regs and len(regs) != len(cfg["managers.urls"]):
        raise WorkerConfigError(
            f"managers.registries has {len(regs)} addresses but managers.urls "
            f"has {len(cfg['managers.urls'])}; give one per manager or none"
        )
    check_ha(cfg)
    try:
        from receivers.limits import parse_ingest_keys

        parse_ingest_keys(cfg["receivers.ingest_keys"])
    except ValueError as exc:
        raise WorkerConfigError(str(exc)) from None
    for name in (
        "transport.buffer_events",
        "transport.batch_size",
        "receivers.max_body_bytes",
        "receivers.max_json_depth",
        "receivers.max_events",
        "wal.segment_bytes",
    ):
        if cfg[name] < 1:
            raise WorkerConfigError(f"setting {name} ({cfg.source(name)}): must be >= 1")


def host_policy(cfg: Settings) -> "HostPolicy":
    """The worker's HostPolicy (cep.policy); file roots default to
    <worker.state_dir>/tenants/{tenant}/files."""
    from urllib.parse import urlsplit

    from cep.policy import HostPolicy

    managers = [urlsplit(u).port for u in cfg["managers.urls"]]
    policy: HostPolicy = HostPolicy.from_settings(
        cfg, os.path.abspath(cfg["worker.state_dir"])
    ).with_reserved(cfg["receivers.http_port"], cfg["receivers.zmq_port"], *managers)
    policy.apply_script_limits()  # the plans this worker runs follow its script settings
    return policy


def wal_dir(cfg: Settings, worker_id: str) -> str:
    """Root of the worker's write-ahead logs: <worker.data_dir>/wal, by default
    <worker.state_dir>/<worker id>/wal (two workers sharing a state dir keep apart logs)."""
    if cfg["worker.data_dir"]:
        return os.path.join(os.path.abspath(cfg["worker.data_dir"]), "wal")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in worker_id)
    return os.path.join(os.path.abspath(cfg["worker.state_dir"]), safe, "wal")


def marks_dir(cfg: Settings, worker_id: str) -> str:
    """Root of the duplicate marks files (publishers/marks_log.py): <worker.data_dir>/marks,
    by default <worker.state_dir>/<worker id>/marks, beside the write-ahead logs."""
    return os.path.join(os.path.dirname(wal_dir(cfg, worker_id)), "marks")


def worker_id(cfg: Settings, http_port: Optional[int]) -> str:
    """The configured id, else `<hostname>:<http port>` (stable across restarts)."""
    return cfg["worker.id"] or f"{socket.gethostname()}:{http_port or os.getpid()}"
