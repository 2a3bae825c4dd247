"""Start a CEP worker: receivers, plans and publishers.

HTTP/ZeroMQ receivers, plans (distributed via the manager, or standalone in-process),
publishers. Settings come from conf/worker.yaml, CEP_* env vars, then these flags."""

import logging
import threading

from cep.cli.stop_signals import stop_on_signals
from cep.worker.config import MODES, WORKER_SCHEMA, load_config
from cep.worker.exceptions import WorkerError

log = logging.getLogger("cep.worker")


def subparser_hook(subparsers):
    p = subparsers.add_parser("worker", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--config", help="worker YAML file (default conf/worker.yaml)")
    p.add_argument("--manager", help="manager REST address(es): URL[,URL...]")
    p.add_argument(
        "--registry",
        help="registry address(es) tcp://host:port[,...], one per "
        "manager (default: what each manager reports at /api/v1/manager)",
    )
    p.add_argument("--id", help="worker id")
    p.add_argument("--mode", choices=MODES, help="distributed or standalone")
    p.add_argument("--http-port", type=int, help="HTTP receiver/status port (0: any free)")
    p.add_argument("--zmq-port", type=int, help="ZeroMQ receiver port (0: any free, -1: off)")
    p.add_argument(
        "--host", "--bind", dest="host", help="bind address of the receivers (default 127.0.0.1)"
    )
    p.add_argument("--advertised-host", help="host other machines reach this worker at")
    p.add_argument("--roles", help="receiver,publisher (default both)")
    p.add_argument("--plan", action="append", help="standalone: plan file or folder (repeatable)")
    p.add_argument(
        "--cluster-secret-file",
        help="the manager's cluster secret "
        "(<manager data>/security/cluster-secret) [env: CEP_CLUSTER_SECRET]",
    )
    p.add_argument(
        "--curve-dir",
        help="copy of the manager's <data dir>/security/curve: "
        "turns ZeroMQ CURVE on for this worker's links [env: CEP_CURVE_DIR]",
    )
    p.add_argument(
        "--ha-peer",
        help="standalone: the other worker of an active/passive "
        "pair (http://host:port) [setting ha.peer]",
    )
    p.add_argument(
        "--ha-forward",
        action="store_true",
        default=None,
        help="HA pair: the "
        "active forwards events to the passive (else clients send to both) "
        "[setting ha.forward]",
    )
    p.add_argument(
        "--redis-url", help="HA pair: Redis holding the active's lease [setting ha.redis_url]"
    )
    p.add_argument(
        "--describe-config",
        action="store_true",
        help="print every setting (Markdown table) and exit",
    )
    p.set_defaults(func=run)


def overrides_from_args(args):
    """The flags given, as setting overrides."""
    host = args.host
    return {
        "managers.urls": args.manager,
        "managers.registries": args.registry,
        "worker.id": args.id,
        "worker.mode": args.mode,
        "receivers.http_port": args.http_port,
        "receivers.zmq_port": args.zmq_port,
        "receivers.http_host": host,
        "receivers.zmq_host": host,
        "worker.advertised_host": args.advertised_host,
        "worker.roles": args.roles,
        "standalone.plans": args.plan,
        "managers.cluster_secret_file": getattr(args, "cluster_secret_file", None),
        "security.curve_dir": getattr(args, "curve_dir", None),
        "ha.peer": getattr(args, "ha_peer", None),
        "ha.forward": getattr(args, "ha_forward", None),
        "ha.redis_url": getattr(args, "redis_url", None),
    }


def _service_logging():
    """A worker is a service: its log sink and its own messages show at INFO even when the root
    level is WARNING; werkzeug's per-request access lines would drown them, so they do not."""
    for name in ("publishers.log", "cep.worker"):
        logging.getLogger(name).setLevel(min(logging.INFO, logging.getLogger().level))
    logging.getLogger("werkzeug").setLevel(logging.WARNING)


def run(args):
    if args.describe_config:
        print(WORKER_SCHEMA.describe())
        return 0
    _service_logging()
    from cep.worker.node import Worker

    try:
        cfg = load_config(overrides_from_args(args), path=args.config)
        worker = Worker(cfg).start()
    except (WorkerError, OSError) as exc:
        log.error("cannot start the worker: %s", exc)
        return 1
    print(f"worker {worker.identity.worker_id} ({worker.mode}) up", flush=True)
    print(f"  events over HTTP: POST {worker.http_url}/events/<tenant>/<plan>/<stream>")
    if worker.zmq_url:
        print(f"  events over ZeroMQ: PUSH to {worker.zmq_url}")
    if worker.ha is not None:
        print(
            f"  HA pair: node {worker.ha.node_id}, peer {worker.ha.peer.url} (role in /status: ha)"
        )
    print(
        f"  status: {worker.http_url}/status"
        + (" (cluster secret or a super admin's token)" if worker.links.secret else ""),
        flush=True,
    )
    _wait_for_signal()
    print("stopping the worker", flush=True)
    worker.stop()
    return 0


def _wait_for_signal():
    done = threading.Event()
    stop_on_signals(done)
    while not done.wait(0.5):
        pass
