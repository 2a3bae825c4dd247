"""The manager's settings (conf/manager.yaml, CEP_* environment variables, flags)."""

from pathlib import Path
from typing import Any, Mapping, Optional, Union

from cep.policy import POLICY_SETTINGS
from cep.security.curve import CURVE_SETTINGS
from manager.auth.settings import AUTH_SETTINGS
from manager.quotas import QUOTA_SETTINGS
from cep.protocol.settings import Schema, Setting, Settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent

MANAGER = Schema(
    "manager",
    [
        Setting(
            "manager", "data_dir", str, "", "plan files and state (empty: <project>/var/manager)"
        ),
        Setting(
            "manager",
            "advertised_host",
            str,
            "",
            "host spouts and workers reach the manager at (empty: first non-loopback IPv4)",
        ),
        Setting(
            "http",
            "host",
            str,
            "127.0.0.1",
            "address the REST API binds to (beyond "
            "loopback it needs security.auth on, or --insecure)",
        ),
        Setting("http", "port", int, 9763, "REST API port (0: a free port)"),
        Setting(
            "http", "threads", int, 16, "REST API server threads (cheroot): requests served at once"
        ),
        Setting(
            "http",
            "timeout",
            float,
            30.0,
            "seconds a connection may stay silent before "
            "the server drops it (a slow client holds a thread at most this long)",
        ),
        Setting(
            "http",
            "queue",
            int,
            256,
            "connections waiting for a thread before new ones are refused",
        ),
        Setting(
            "http",
            "max_body_bytes",
            int,
            4 * 1024 * 1024,
            "largest REST request body (413 JSON beyond it)",
        ),
        Setting("registry", "bind_host", str, "*", "address the endpoint registry binds to"),
        Setting("registry", "port", int, 8904, "ZeroMQ endpoint registry port (0: a free port)"),
        Setting(
            "registry",
            "liveness",
            float,
            30.0,
            "seconds without a heartbeat after which an endpoint is skipped (with a warning)",
        ),
        Setting(
            "registry",
            "heartbeat_interval",
            float,
            5.0,
            "seconds between heartbeats of spouts and worker publishers",
        ),
        Setting(
            "store",
            "redis_url",
            str,
            "",
            "keep plans in Redis (redis://host:port/db) instead of files under data_dir",
        ),
        Setting("store", "redis_prefix", str, "cep", "key prefix of the Redis plan store"),
        Setting(
            "ha",
            "enabled",
            bool,
            True,
            "managers sharing store.redis_url form a group: one "
            "leader (a lease in Redis), the others follow and take over",
        ),
        Setting(
            "ha",
            "lease_ttl",
            float,
            10.0,
            "seconds the leader lease lasts without a renewal; "
            "a follower takes over within lease_ttl + about 1 s of the leader's death",
        ),
        Setting(
            "manager",
            "id",
            str,
            "",
            "this manager's id in its group (empty: kept in "
            "<data_dir>/manager-id, made at first start)",
        ),
        Setting(
            "manager",
            "advertised_url",
            str,
            "",
            "REST URL other managers send clients to "
            "(empty: http(s)://<advertised host or http.host>:<port>)",
        ),
        Setting("spark", "master", str, "embedded", "`embedded` or spark://host:port"),
        Setting(
            "spark", "state_dir", str, "", "Spark cluster/topology state (empty: spark.yaml's)"
        ),
        Setting(
            "spark",
            "host",
            str,
            "",
            "address Spark drivers and tasks bind to (empty: spark.yaml's)",
        ),
        Setting(
            "topology",
            "component_host",
            str,
            "",
            "host receiver spouts bind to and advertise, and publisher bolts identify with "
            "(empty: each executor machine's first non-loopback IPv4)",
        ),
        Setting(
            "topology",
            "kill_wait_secs",
            float,
            10.0,
            "drain time when a plan's topology is killed (CEP 4.0: 10 s)",
        ),
        Setting(
            "topology",
            "resubmit_interval",
            float,
            10.0,
            "seconds before retrying a submit the cluster refused",
        ),
        Setting(
            "topology",
            "transport",
            str,
            "zmq",
            "how events go from the workers to a plan's receiver spouts and from its publisher "
            "bolts to the workers: `zmq` (point-to-point ZeroMQ) or `nats` (NATS JetStream "
            "subjects: a plan's accepted input survives a worker loss without the worker's "
            "write-ahead log; connectors/nats_transport.py)",
        ),
        Setting(
            "topology",
            "nats_connection",
            str,
            "",
            "the `nats` transport's server: a name of connections.brokers (its URL and "
            "credentials stay there, and reach Spark's executors in the private launch "
            "options, never in the topology spec; a tls:// URL may add ?ca=FILE&cert=FILE"
            "&key=FILE); empty: nats://127.0.0.1:4222",
        ),
        Setting(
            "metrics",
            "sample_interval",
            float,
            5.0,
            "seconds between samples of each topology's metrics (windows, /metrics); 0: off",
        ),
        *POLICY_SETTINGS,  # files.roots, sinks.http_allow, sinks.redis_connections, limits.*
        *AUTH_SETTINGS,  # security.auth, sessions, first-start password, cluster secret, TLS
        *CURVE_SETTINGS,  # security.curve, security.curve_dir: ZeroMQ CURVE on cluster links
        *QUOTA_SETTINGS,  # quotas.*: plans, slots, backtests, plan size and queries per tenant
    ],
)


def load_manager_settings(
    overrides: Optional[Mapping[str, Any]] = None,
    conf_dir: Union[str, Path, None] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Settings:
    """conf/manager.yaml layered with CEP_* environment variables and explicit overrides."""
    return MANAGER.load(conf_dir=conf_dir, env=env, overrides=overrides)


def data_dir(settings: Settings) -> Path:
    path = Path(settings["manager.data_dir"] or PROJECT_ROOT / "var" / "manager")
    path.mkdir(parents=True, exist_ok=True)
    return path


def spark_overrides(settings: Settings) -> dict[str, Any]:
    """The spark.yaml overrides the manager's settings imply."""
    out = {"spark.master": settings["spark.master"]}
    if settings["spark.state_dir"]:
        out["spark.state_dir"] = settings["spark.state_dir"]
    if settings["spark.host"]:
        out["spark.host"] = settings["spark.host"]
    return out
