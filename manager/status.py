"""A plan's status: topology state, inflow per worker and outflow, from live data.

Inflow: per worker id (not IP, as CEP 4.0 did), `k/n established` where n is the number of
imported streams and k how many of them the worker has an open connection for. Outflow:
`k/n established` where n is publisherParallelism and k the publisher-bolt instances with a
live connection. Only live connections count (the registry's `live` flag: endpoint and client
heartbeating), so a killed task's unreleased connection never shows as `2/1`. A plan on the
NATS transport (topology.transport: nats) registers no connections: its status says so, and
each worker's /status shows its JetStream inflow and outflow."""


def _established(k, n):
    return {"connected": k, "required": n, "text": f"{k}/{n} established"}


def plan_status(topology_status, registry_status, imported, publisher_parallel, transport="zmq"):
    """The status dict served by /api/v1 and printed by `cep plan status`."""
    streams_by_worker = {}
    live = [c for c in registry_status["connections"] if c.get("live", True)]
    for c in live:
        if c["kind"] == "receiver" and c["stream"] in imported:
            streams_by_worker.setdefault(c["client"], set()).add(c["stream"])
    for ep in registry_status["publishers"]:
        streams_by_worker.setdefault(ep["worker"], set())
    inflow = {w: _established(len(s), len(imported)) for w, s in sorted(streams_by_worker.items())}
    out_k = len({c["client"] for c in live if c["kind"] == "publisher"})
    return {
        **topology_status,
        "inflow": inflow,
        "outflow": _established(out_k, publisher_parallel),
        "receivers": len(registry_status["receivers"]),
        "publishers": len(registry_status["publishers"]),
        "transport": transport,
    }


def status_text(status):
    """CEP 4.0's three-part status text, keyed by worker id."""
    lines = [
        f"Storm topology : {status['state']}"
        + (f" ({status['reason']})" if status.get("reason") else "")
    ]
    if status.get("transport") == "nats":
        return "\n".join(
            lines
            + [
                "Inflow connections : through NATS JetStream (each worker's "
                "/status shows its inflow)",
                "Outflow connections : through NATS JetStream",
            ]
        )
    if not status["inflow"]:
        lines.append("Inflow connections : no receivers found")
    else:
        lines.append("Inflow connections :")
        for worker, s in status["inflow"].items():
            both = s["connected"] == s["required"]
            lines.append(f"\t{worker} : {'all established' if both else s['text']}")
    o = status["outflow"]
    lines.append(
        "Outflow connections : "
        + ("all established" if o["connected"] == o["required"] else o["text"])
    )
    return "\n".join(lines)
