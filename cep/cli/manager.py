"""Run the CEP manager: plan store, endpoint registry, REST API and topology launcher."""
import logging
import logging.config
import os
import signal
import threading

import yaml

log = logging.getLogger("manager")


def subparser_hook(subparsers):
    p = subparsers.add_parser("manager", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("--data-dir", help="plan files and state [env: CEP_MANAGER_DATA_DIR]")
    p.add_argument("--http-host", "--bind", dest="http_host",
                   help="REST API bind address (default 127.0.0.1) [env: CEP_HTTP_HOST]")
    p.add_argument("--http-port", type=int, help="REST API port (default 9763) [env: CEP_HTTP_PORT]")
    p.add_argument("--registry-port", type=int,
                   help="ZeroMQ endpoint registry port (default 8904) [env: CEP_REGISTRY_PORT]")
    p.add_argument("--spark-master", help="`embedded` or spark://host:port [env: CEP_SPARK_MASTER]")
    p.add_argument("--advertised-host", help="host spouts and workers reach the manager at "
                                             "[env: CEP_MANAGER_ADVERTISED_HOST]")
    p.add_argument("--redis-url", help="keep plans in Redis [env: CEP_STORE_REDIS_URL]")
    p.add_argument("--conf-dir", help="directory of manager.yaml (default conf/)")
    p.add_argument("--log-config", default=os.environ.get("CEP_LOG_CONFIG"),
                   help="a logging YAML (dictConfig), e.g. conf/logging.yaml [env: CEP_LOG_CONFIG]")
    p.add_argument("--log-query-plans", action="store_true",
                   default=os.environ.get("CEP_LOG_QUERY_PLANS", "") in ("1", "true", "yes"),
                   help="log each plan's XML query plan at DEBUG (logger "
                        "manager.topology_manager) when it is deployed [env: CEP_LOG_QUERY_PLANS=1]")
    p.add_argument("--kill-on-exit", action="store_true",
                   help="kill the plans' topologies when the manager stops")
    p.set_defaults(func=run)


FLAGS = {"data_dir": "manager.data_dir", "http_host": "http.host", "http_port": "http.port",
         "registry_port": "registry.port", "spark_master": "spark.master",
         "advertised_host": "manager.advertised_host", "redis_url": "store.redis_url"}


def overrides_from(args):
    return {key: getattr(args, flag) for flag, key in FLAGS.items()
            if getattr(args, flag, None) is not None}


def _warn_if_exposed(host):
    """The REST API has no authentication yet: say so when it binds beyond loopback."""
    import ipaddress
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        log.warning("the REST API binds %s, not loopback, and has no authentication yet: "
                    "anyone who reaches it can deploy plans (see SECURITY.md)", host)


def enable_query_plan_log():
    """DEBUG for `manager.topology_manager` (the XML of every deployed plan), shown even when
    the root logger is at WARNING."""
    logger = logging.getLogger("manager.topology_manager")
    logger.setLevel(logging.DEBUG)
    if not logging.getLogger().handlers:
        logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def run(args):
    """Start the manager and serve until SIGINT/SIGTERM."""
    from werkzeug.serving import make_server

    from manager.server import Manager
    from manager.settings import load_manager_settings
    from manager.web import create_app
    if args.log_config:
        with open(args.log_config) as fh:
            logging.config.dictConfig(yaml.safe_load(fh))
    if args.log_query_plans:
        enable_query_plan_log()
    settings = load_manager_settings(overrides_from(args), conf_dir=args.conf_dir)
    _warn_if_exposed(settings["http.host"])
    manager = Manager(settings).start()
    app = create_app({"MANAGER": manager})
    server = make_server(settings["http.host"], settings["http.port"], app, threaded=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"CEP manager: REST http://{settings['http.host']}:{server.server_port}/api/v1, "
          f"registry {manager.registry_url}, data {settings['manager.data_dir'] or 'var/manager'}",
          flush=True)
    stop.wait()
    server.shutdown()
    manager.stop(kill_topologies=args.kill_on_exit)
    return 0
