"""The whole distributed deployment as `/api/v1/status` and `/api/v1/workers` serve it:
managers, the Spark master (cached snapshot), topologies, workers (their worker-info
messages), registry endpoints with live connection counts, and per plan which worker feeds
which spout and which publisher bolt sends to which worker."""

import time

from connectors.nats_transport import inflow_stream, outflow_stream


def workers(table):
    """Workers heard from within two liveness windows, `stale` after one."""
    out = []
    for age, info in table.worker_infos():
        out.append(
            {
                "id": info["worker"],
                "host": info.get("host", ""),
                "roles": info.get("roles", []),
                "heartbeatAgeSec": round(age, 1),
                "stale": age > table.liveness,
                "plans": info.get("plans", []),
                "eventsInPerSec": info.get("eventsInPerSec", 0.0),
                "eventsOutPerSec": info.get("eventsOutPerSec", 0.0),
                "cpuPercent": info.get("cpuPercent", 0.0),
                "memoryRssBytes": info.get("memoryRssBytes", 0),
                "url": info.get("url", ""),
                "eventsIn": info.get("eventsIn", 0),
                "eventsOut": info.get("eventsOut", 0),
                "duplicates": info.get("duplicates", 0),  # replayed results
                "threads": info.get("threads", []),
            }
        )  # supervised threads
    return sorted(out, key=lambda w: w["id"])


def endpoints(table):
    """Every registered endpoint with its live connection count; stale ones flagged."""
    out = []
    for ep, stale in table.snapshot():
        out.append(
            {
                "kind": ep["kind"],
                "tenant": ep["tenant"],
                "plan": ep["plan"],
                "stream": ",".join(ep["streams"]),
                "streams": ep["streams"],
                "worker": ep["worker"],
                "component": ep["component"],
                "host": ep["host"],
                "port": ep["port"],
                "endpoint": ep["endpoint"],
                "connections": ep["connections"],
                "heartbeatAgeSec": ep["age"],
                "stale": stale,
            }
        )
    return sorted(out, key=lambda e: (e["tenant"], e["plan"], e["kind"], e["endpoint"]))


def topologies(plans):
    """One row per plan: its topology's state, since, reason and Spark application."""
    out = []
    for tenant, name in sorted(plans.compiled):
        st = plans.topologies.status(tenant, name)
        out.append(
            {
                "tenant": tenant,
                "plan": name,
                "topology": st.get("topology"),
                "state": st["state"],
                "since": st.get("since"),
                "reason": st["reason"],
                "applicationId": st.get("applicationId"),
                "application": st.get("application"),
                "packing": st.get("packing"),
                "executors": st.get("executors"),
                "restarts": st.get("restarts", 0),
            }
        )
    return out


def _hostport(address):
    return address[len("tcp://") :] if address.startswith("tcp://") else address


def _jetstream_flow(report, side):
    """A NATS transport stream as one flow line: `spout`/`bolt` the stream, `stream`/`worker`
    what its consumers read (manager/jetstream.py)."""
    if "error" in report:
        return {"stream": report["error"], "worker": report["error"]}
    r = report[side]
    if not r.get("exists"):
        text = "not made yet"
    else:
        text = f"{r['reading']}/{r['consumers']} consumers reading, {r['pending']} pending"
    return {"stream": text, "worker": text}


def flows(plans, table):
    """Per plan: inflow (worker -> stream -> spout) and outflow (bolt instance -> worker).
    A plan on the NATS transport registers no connections: one line each for its JetStream
    inflow and outflow streams (worker `NATS JetStream`, what their consumers read)."""
    out = []
    nats = getattr(plans, "transport", {}).get("transport") == "nats"
    view = getattr(plans, "jetstream", None)
    for tenant, name in sorted(plans.compiled):
        if nats and view is not None:
            report = view.report(tenant, name)
            i, o = _jetstream_flow(report, "inflow"), _jetstream_flow(report, "outflow")
            out.append(
                {
                    "tenant": tenant,
                    "plan": name,
                    "transport": "nats",
                    "inflow": [
                        {
                            "worker": "NATS JetStream",
                            "spout": inflow_stream(tenant, name),
                            "stream": i["stream"],
                        }
                    ],
                    "outflow": [
                        {
                            "bolt": outflow_stream(tenant, name),
                            "worker": o["worker"],
                            "publisher": "",
                        }
                    ],
                }
            )
            continue
        st = table.status(tenant, name)
        workers_of = {p["endpoint"]: p["worker"] for p in st["publishers"]}
        live = [c for c in st["connections"] if c.get("live", True)]
        inflow = [
            {"worker": c["client"], "stream": c["stream"], "spout": _hostport(c["endpoint"])}
            for c in live
            if c["kind"] == "receiver"
        ]
        outflow = [
            {
                "bolt": c["client"],
                "worker": workers_of.get(c["endpoint"], ""),
                "publisher": _hostport(c["endpoint"]),
            }
            for c in live
            if c["kind"] == "publisher"
        ]
        out.append(
            {
                "tenant": tenant,
                "plan": name,
                "inflow": sorted(inflow, key=lambda f: (f["worker"], f["stream"])),
                "outflow": sorted(outflow, key=lambda f: f["bolt"]),
            }
        )
    return out


def managers(manager, url):
    """Every manager of the group (role, lease holder, lease age, fencing token);
    a manager without a group is the only one, role `leader`."""
    sampler = manager.sampler
    me = {
        "url": url,
        "host": manager.host,
        "role": manager.role,
        "registry": manager.registry_url,
        "self": True,
        "metricsSampler": {
            "samples": sampler.samples,
            "lastError": sampler.last_error,
            "running": sampler.running,
        },
    }
    group = getattr(manager, "group", None)
    if group is None:
        return [me]
    lease = group.describe()
    me.update({"id": group.id, "lease": lease})
    out = [me]
    for member in group.members():
        if member["id"] == group.id:
            continue
        out.append(
            {
                "id": member["id"],
                "url": member.get("url"),
                "role": member.get("role"),
                "registry": member.get("registry"),
                "self": False,
                "lastSeenSec": round(max(0.0, time.time() - float(member["seen"])), 1),
            }
        )
    for m in out:  # the lease as seen from this manager, on every row
        m["leaseHolder"], m["leaseAgeSec"] = lease["leaseHolder"], lease["leaseAgeSec"]
        m["fencingToken"] = lease["fencingToken"]
    return out


def deployment_status(manager, url):
    """The /api/v1/status document."""
    table = manager.registry.table
    return {
        "managers": managers(manager, url),
        "spark": manager.spark.snapshot(),
        "topologies": topologies(manager.plans),
        "workers": workers(table),
        "endpoints": endpoints(table),
        "flows": flows(manager.plans, table),
    }
