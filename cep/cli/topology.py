"""Control topologies on Spark with Storm's verbs: list, kill [-w SECS], activate, deactivate, bench.

`cep topology cluster start|stop|status` manages the embedded Spark standalone cluster (it
keeps running between commands so that topologies and other processes share it).
"""

import json

from cep.protocol.exceptions import SettingsError
from topology.exceptions import TopologyError

COLUMNS = (
    "Topology_name",
    "Status",
    "Num_tasks",
    "Num_workers",
    "Uptime_secs",
    "Topology_Id",
    "Application",
    "Hosts",
    "Reason",
)


def subparser_hook(subparsers):
    parser = subparsers.add_parser("topology", help=__doc__.splitlines()[0], description=__doc__)
    verbs = parser.add_subparsers(dest="topology_verb", metavar="VERB", required=True)
    p = verbs.add_parser("list", help="list running topologies (Storm's columns)")
    p.add_argument("--all", action="store_true", help="include killed and failed topologies")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_list)
    p = verbs.add_parser("kill", help="deactivate, drain for -w seconds, stop the application")
    p.add_argument("name")
    p.add_argument(
        "-w",
        "--wait",
        type=float,
        default=None,
        help="drain time in seconds (default: topology.kill_wait_secs)",
    )
    p.set_defaults(func=cmd_kill)
    for verb in ("activate", "deactivate"):
        p = verbs.add_parser(verb, help=f"{verb} the topology's spouts")
        p.add_argument("name")
        p.set_defaults(func=cmd_switch, verb=verb)
    p = verbs.add_parser("bench", help="spout -> bolt -> bolt pass-through benchmark on Spark")
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--grouping", choices=("shuffle", "fields"), default="shuffle")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--rate", type=float, default=0.0, help="events/s (0: as fast as possible)")
    p.add_argument("--parallelism", type=int, default=1, help="instances of each bolt")
    p.add_argument(
        "--start-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the topology to become ACTIVE (default 120)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_bench)
    p = verbs.add_parser("cluster", help="start, stop or show the embedded Spark cluster")
    p.add_argument("action", choices=("start", "stop", "status"))
    p.set_defaults(func=cmd_cluster)


def _settings():
    from topology.spark_settings import load_spark_settings

    return load_spark_settings()


def _fail(exc):
    print(f"error: {exc}")
    return 1


def cmd_list(args):
    from topology.launcher import list_topologies

    try:
        rows = list_topologies(_settings(), include_ended=args.all)
    except (TopologyError, SettingsError) as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("No topologies running.")
        return 0
    table = [COLUMNS] + [
        (
            r["name"],
            r["status"],
            str(r.get("tasks", "")),
            str(r.get("workers", "")),
            str(r.get("uptime_s", "")),
            str(r.get("app_id") or ""),
            r.get("application") or r["name"],  # shared or its own
            hosts_cell(r.get("placement")),
            r.get("reason") or "",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def hosts_cell(placement: dict | None) -> str:
    """'ADDRESS*N,...': the machines a topology's instances run on and how many on each."""
    if not placement:
        return "-"
    return ",".join(f"{host}*{len(names)}" for host, names in sorted(placement.items()))


def cmd_kill(args):
    from topology.launcher import get_topology

    try:
        final = get_topology(args.name, _settings()).kill(wait_secs=args.wait)
    except (TopologyError, SettingsError) as exc:
        return _fail(exc)
    print(f"{args.name}: {final['status']}")
    return 0 if final["status"] == "KILLED" else 1


def cmd_switch(args):
    from topology.launcher import get_topology

    try:
        handle = get_topology(args.name, _settings())
        status = handle.activate() if args.verb == "activate" else handle.deactivate()
    except (TopologyError, SettingsError) as exc:
        return _fail(exc)
    print(f"{args.name}: {status['status']}")
    return 0


def cmd_bench(args):
    from topology.bench import run_bench

    try:
        result = run_bench(
            args.events,
            args.grouping,
            args.batch_size,
            args.rate,
            _settings(),
            parallelism=args.parallelism,
            start_timeout=args.start_timeout,
        )
    except (TopologyError, SettingsError) as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps(result))
    else:
        lat = result["latency_ms"]
        print(
            f"events sent {result['events_sent']}, received {result['events_received']} "
            f"({'exact' if result['events_sent'] == result['events_received'] else 'LOST'})"
        )
        print(
            f"throughput {result['events_per_s']} events/s ({args.grouping} grouping, "
            f"batches of {args.batch_size}, bolt parallelism {args.parallelism})"
        )
        print(f"latency p50 {lat['p50']} ms, p99 {lat['p99']} ms")
        print(f"submit to ACTIVE {result['submit_to_active_s']} s")
    return 0 if result["events_sent"] == result["events_received"] == args.events else 1


def cmd_cluster(args):
    from topology.cluster import ensure_cluster, master_state, stop_cluster

    settings = _settings()
    try:
        if args.action == "stop":
            stop_cluster(settings)
            print("embedded cluster stopped")
            return 0
        if args.action == "start" or settings["spark.master"] != "embedded":
            info = ensure_cluster(settings)
        else:
            from topology.cluster import recorded_cluster

            info = recorded_cluster(settings)
            if info is None:
                print("embedded cluster not running")
                return 1
    except (TopologyError, SettingsError) as exc:
        return _fail(exc)
    state = master_state(info.ui_url) or {}
    print(
        f"master {info.master_url}  web UI {info.ui_url}  status {state.get('status', 'DOWN')}  "
        f"slots {state.get('coresused', '?')}/{state.get('cores', '?')} used  "
        f"apps {len(state.get('activeapps', []))}"
    )
    return 0 if state else 1
