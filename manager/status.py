"""A plan's status: topology state, inflow per worker and outflow, from live data.

Inflow: per worker id (not IP, as CEP 4.0 did), `k/n established` where n is the number of
imported streams and k how many of them the worker has an open connection for. Outflow:
`k/n established` where n is publisherParallelism and k the publisher-bolt instances with a
live connection. Only live connections count (the registry's `live` flag: endpoint and client
heartbeating), so a killed task's unreleased connection never shows as `2/1`.

A plan on the NATS transport (topology.transport: nats) registers no connections: its
inflow and outflow are JetStream streams (manager/jetstream.py). Inflow (keyed `jetstream`):
`k/n reading` where n is receiverParallelism and k the spouts' durable consumers that read
(a pull waiting or a delivery in the last 10 s); outflow: the workers' consumers that read,
of at least one. Each also says what the stream holds (`messages`), took (`published`), the
most messages a consumer has not acknowledged (`pending`) and the lowest acknowledgement
floor (`acked`). Each worker's /status and /metrics show its side (events sent, acknowledged)."""


def _established(k, n):
    return {"connected": k, "required": n, "text": f"{k}/{n} established"}


def _jetstream_flow(report, required, who):
    """A stream_report (connectors/nats_transport.py) as an `established`-like dict."""
    if report is None or "error" in report:
        why = (report or {}).get("error", "no report")
        return {"connected": 0, "required": required, "text": f"unknown ({why})", "error": why}
    if not report.get("exists"):
        return {
            "connected": 0,
            "required": required,
            "text": f"stream {report['stream']} does not exist yet",
            **report,
        }
    k = report["reading"]
    text = (
        f"{k}/{required} {who} reading {report['stream']}: {report['pending']} pending, "
        f"{report['published']} published, {report['acked']} acknowledged, "
        f"{report['consumers']} consumer(s)"
    )
    return {"connected": k, "required": required, "text": text, **report}


def nats_plan_status(topology_status, jetstream, receiver_parallel):
    """The status of a plan on the NATS transport; `jetstream`: JetStreamView.report()."""
    return {
        **topology_status,
        "inflow": {
            "jetstream": _jetstream_flow(
                jetstream.get("inflow", jetstream), receiver_parallel, "spout consumers"
            )
        },
        "outflow": _jetstream_flow(jetstream.get("outflow", jetstream), 1, "worker consumers"),
        "receivers": 0,
        "publishers": 0,
        "transport": "nats",
    }


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
        i, o = (status.get("inflow") or {}).get("jetstream"), status.get("outflow")
        return "\n".join(
            lines
            + [
                "Inflow connections : NATS JetStream, " + (i["text"] if i else "unknown"),
                "Outflow connections : NATS JetStream, " + (o["text"] if o else "unknown"),
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
