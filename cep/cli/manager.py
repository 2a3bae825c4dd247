"""Run the CEP manager: plan store, endpoint registry, REST API and topology launcher."""

import logging
import logging.config
import os
import sys
import threading

import yaml

from cep.cli.stop_signals import stop_on_signals

log = logging.getLogger("manager")


def subparser_hook(subparsers):
    p = subparsers.add_parser("manager", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--data-dir", help="plan files and state [env: CEP_MANAGER_DATA_DIR]")
    p.add_argument(
        "--http-host",
        "--bind",
        dest="http_host",
        help="REST API bind address (default 127.0.0.1) [env: CEP_HTTP_HOST]",
    )
    p.add_argument(
        "--http-port", type=int, help="REST API port (default 9763) [env: CEP_HTTP_PORT]"
    )
    p.add_argument(
        "--registry-port",
        type=int,
        help="ZeroMQ endpoint registry port (default 8904) [env: CEP_REGISTRY_PORT]",
    )
    p.add_argument("--spark-master", help="`embedded` or spark://host:port [env: CEP_SPARK_MASTER]")
    p.add_argument(
        "--advertised-host",
        help="host spouts and workers reach the manager at [env: CEP_MANAGER_ADVERTISED_HOST]",
    )
    p.add_argument("--redis-url", help="keep plans in Redis [env: CEP_STORE_REDIS_URL]")
    p.add_argument(
        "--lease-ttl",
        type=float,
        help="seconds the leader lease of a manager group "
        "(managers sharing --redis-url) lasts unrenewed (default 10) [env: CEP_HA_LEASE_TTL]",
    )
    p.add_argument("--conf-dir", help="directory of manager.yaml (default conf/)")
    p.add_argument(
        "--log-config",
        default=os.environ.get("CEP_LOG_CONFIG"),
        help="a logging YAML (dictConfig), e.g. conf/logging.yaml [env: CEP_LOG_CONFIG]",
    )
    p.add_argument(
        "--log-query-plans",
        action="store_true",
        default=os.environ.get("CEP_LOG_QUERY_PLANS", "") in ("1", "true", "yes"),
        help="log each plan's XML query plan at DEBUG (logger "
        "manager.topology_manager) when it is deployed [env: CEP_LOG_QUERY_PLANS=1]",
    )
    p.add_argument(
        "--admin-password-file",
        help="first start: the super admin's password "
        "(default: $CEP_ADMIN_PASSWORD, else generated and printed once)",
    )
    p.add_argument(
        "--cluster-secret-file",
        help="the secret workers present (default: "
        "$CEP_CLUSTER_SECRET, else <data-dir>/security/cluster-secret, generated)",
    )
    p.add_argument("--tls-cert", help="PEM certificate: serve the REST API and console over HTTPS")
    p.add_argument("--tls-key", help="PEM private key of --tls-cert")
    p.add_argument(
        "--curve",
        action="store_true",
        default=None,
        help="ZeroMQ CURVE on every "
        "cluster link (keys in <data-dir>/security/curve/, created at first start; "
        "workers need a copy: --curve-dir) [env: CEP_SECURITY_CURVE]",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="turn authentication off, even on a "
        "non-loopback bind (a warning is logged at every start)",
    )
    p.add_argument(
        "--kill-on-exit",
        action="store_true",
        help="kill the plans' topologies when the manager stops",
    )
    p.set_defaults(func=run)


FLAGS = {
    "data_dir": "manager.data_dir",
    "http_host": "http.host",
    "http_port": "http.port",
    "registry_port": "registry.port",
    "spark_master": "spark.master",
    "advertised_host": "manager.advertised_host",
    "redis_url": "store.redis_url",
    "lease_ttl": "ha.lease_ttl",
    "admin_password_file": "security.admin_password_file",
    "cluster_secret_file": "security.cluster_secret_file",
    "tls_cert": "http.tls_cert",
    "tls_key": "http.tls_key",
    "curve": "security.curve",
}


def overrides_from(args):
    out = {
        key: getattr(args, flag)
        for flag, key in FLAGS.items()
        if getattr(args, flag, None) is not None
    }
    if getattr(args, "insecure", False):
        out.update({"security.insecure": True, "security.auth": False})
    return out


def _warn_if_exposed(settings):
    """Authentication off: refused beyond loopback unless --insecure, and warned about at
    every start. Returns an error message when the manager must not start."""
    host = settings["http.host"]
    if settings["security.auth"]:
        return None
    if not _is_loopback(host) and not settings["security.insecure"]:
        return (
            f"security.auth is off and the REST API would bind {host}, not loopback: "
            f"refusing to start (give --insecure to run without authentication anyway)"
        )
    log.warning(
        "INSECURE: authentication is off (security.auth false%s): anyone who reaches "
        "%s can deploy plans and read every tenant's (see SECURITY.md)",
        ", --insecure" if settings["security.insecure"] else "",
        host,
    )
    return None


def _is_loopback(host):
    import ipaddress

    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(settings, manager):
    """The host in this manager's advertised REST URL: the bind address unless it is a
    wildcard, then the advertised host."""
    host = settings["http.host"]
    return manager.host if host in ("0.0.0.0", "::", "") else host


def enable_query_plan_log():
    """DEBUG for `manager.topology_manager` (the XML of every deployed plan), shown even when
    the root logger is at WARNING."""
    logger = logging.getLogger("manager.topology_manager")
    logger.setLevel(logging.DEBUG)
    if not logging.getLogger().handlers:
        logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def run(args):
    """Start the manager and serve until SIGINT/SIGTERM."""
    from cep.protocol.http_server import ProductionServer
    from manager.server import Manager
    from manager.settings import load_manager_settings
    from manager.web import create_app

    if args.log_config:
        with open(args.log_config) as fh:
            logging.config.dictConfig(yaml.safe_load(fh))
    if args.log_query_plans:
        enable_query_plan_log()
    settings = load_manager_settings(overrides_from(args), conf_dir=args.conf_dir)
    refused = _warn_if_exposed(settings)
    if refused:
        log.error("%s", refused)
        return 2
    from manager.exceptions import ManagerError

    try:
        manager = Manager(settings).start()
    except ManagerError as exc:  # a bad setting, a store that cannot be opened
        log.error("cannot start the manager: %s", exc)
        print(f"error: cannot start the manager: {exc}", file=sys.stderr)
        return 2
    app = create_app({"MANAGER": manager})
    tls = (
        (settings["http.tls_cert"], settings["http.tls_key"]) if settings["http.tls_cert"] else None
    )
    server = ProductionServer(
        app,
        settings["http.host"],
        settings["http.port"],
        threads=settings["http.threads"],
        timeout=settings["http.timeout"],
        queue=settings["http.queue"],
        tls=tls,
        name="manager-http",
    )
    stop = threading.Event()
    stop_on_signals(stop)
    server.start()
    scheme = "https" if tls else "http"
    manager.set_url(f"{scheme}://{_url_host(settings, manager)}:{server.server_port}")
    print(
        f"CEP manager: REST {scheme}://{settings['http.host']}:{server.server_port}/api/v1, "
        f"registry {manager.registry_url}, {manager.role}, data {settings['manager.data_dir'] or 'var/manager'}",
        flush=True,
    )
    stop.wait()
    server.stop()
    manager.stop(kill_topologies=args.kill_on_exit)
    return 0
