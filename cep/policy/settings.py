"""The host policy's settings, declared once: the manager's and the worker's schemas both
include POLICY_SETTINGS, so conf/manager.yaml and conf/worker.yaml take the same keys."""

from cep.protocol.settings import Setting

MIB = 1024 * 1024

POLICY_SETTINGS = [
    Setting(
        "files",
        "roots",
        list,
        [],
        "folders @sink(type='file') and @source(type='file') may use; '{tenant}' in a root "
        "is replaced by the tenant id; relative plan paths resolve under the first root; "
        "empty: <data dir>/tenants/{tenant}/files",
    ),
    Setting(
        "sinks",
        "http_allow",
        list,
        [],
        "hosts HTTP sinks may post to: host names, host:port, IP addresses or CIDR "
        "networks; 'public' allows any globally routable address. Loopback, link-local, "
        "private and unspecified addresses are refused unless listed. Empty: no HTTP sink",
    ),
    Setting(
        "sinks",
        "zmq_allow",
        list,
        [],
        "hosts @sink(type='zmq', mode='connect') may connect to, in the format of "
        "sinks.http_allow. Empty: no connecting ZeroMQ sink",
    ),
    Setting(
        "sinks",
        "bind_hosts",
        list,
        ["127.0.0.1", "::1", "localhost"],
        "addresses a plan's own listeners may bind (@source(type='http', port=...), "
        "@source(type='zmq'), @sink(type='zmq', mode='bind')); '*' or 0.0.0.0 only when "
        "listed",
    ),
    Setting(
        "sinks",
        "redis_connections",
        list,
        [],
        "Redis servers sinks may write to, as name=redis://host:port/db; a plan names one "
        "with @sink(type='redis', connection='name')",
    ),
    Setting(
        "connections",
        "brokers",
        list,
        [],
        "broker and service connections plans may use, as name=scheme://[user:password@]"
        "host:port[/path] (nats, mqtt, stomp, kafka, ws/wss, smtp); a plan names one with "
        "@source/@sink(type=..., connection='name'), so no address or secret is in a plan",
    ),
    Setting("limits", "plan_bytes", int, MIB, "largest execution plan text, in bytes"),
    Setting("limits", "queries", int, 500, "most queries in one plan (partitions included)"),
    Setting(
        "limits",
        "validate_secs",
        float,
        1.8,
        "seconds the manager may spend compiling "
        "one plan it was sent (a larger plan is checked in a child process and refused "
        "when it takes longer; 0: no budget)",
    ),
    Setting(
        "limits",
        "window_length",
        int,
        1_000_000,
        "largest event count of a length, lengthBatch, timeLength, sort or frequent window",
    ),
    Setting(
        "limits",
        "window_secs",
        float,
        7 * 86400.0,
        "longest time span of a time, timeBatch, externalTime(Batch), timeLength or delay "
        "window, in seconds",
    ),
    Setting(
        "limits",
        "table_rows",
        int,
        1_000_000,
        "most rows an in-memory table keeps; inserts beyond it are refused and counted",
    ),
    Setting(
        "scripts",
        "python",
        bool,
        False,
        "run [python] script functions (define function f[python] ...): they are host "
        "code, so only for trusted, single-tenant setups; off: such plans are refused",
    ),
    Setting(
        "scripts",
        "call_millis",
        float,
        1000.0,
        "longest run of one [JavaScript] function call; a call past it fails its event",
    ),
    Setting(
        "scripts",
        "heap_mib",
        int,
        64,
        "largest V8 heap of one [JavaScript] function; a call past it fails its event",
    ),
]
