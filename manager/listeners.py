"""Where a plan topology's listeners bind, and whether that is allowed.

Receiver spouts and task-to-task links accept ZeroMQ connections. On the embedded cluster
bound to loopback (`spark.master: embedded`, `spark.host` 127.0.0.1, the default) every
component binds and advertises 127.0.0.1, so nothing beyond this machine reaches them and
CURVE may stay off. Anywhere else (a real cluster, or a component or Spark host that is not
loopback) they are reachable from the network: the manager then deploys only with
`security.curve` on, and otherwise fails the deployment with InsecureTopologyError, whose
text names the settings to change (SECURITY.md, "ZeroMQ links")."""

from manager.exceptions import InsecureTopologyError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def component_host(explicit, spark_settings):
    """The host receiver spouts bind to and advertise: `topology.component_host` when set;
    loopback on the embedded loopback cluster; else None (each executor's own address)."""
    if explicit:
        return explicit
    if embedded_loopback(spark_settings):
        return "127.0.0.1"
    return None


def embedded_loopback(spark_settings):
    return (
        spark_settings.get("spark.master", "embedded") == "embedded"
        and spark_settings.get("spark.host", "127.0.0.1") in LOOPBACK
    )


def check_listeners(host, spark_settings, curve_on):
    """Raise InsecureTopologyError when the topology would listen beyond loopback without
    CURVE; `host` is the component host (None: each executor's address)."""
    if curve_on:
        return
    beyond = []
    if host not in LOOPBACK:
        beyond.append(f"receiver spouts on {host or 'each executor address'}")
    if not embedded_loopback(spark_settings):
        beyond.append(
            f"task links on the executors of {spark_settings.get('spark.master')} "
            f"(spark.host {spark_settings.get('spark.host')})"
        )
    if beyond:
        raise InsecureTopologyError(
            "not deployed: security.curve is off and the topology would accept connections "
            f"beyond loopback ({'; '.join(beyond)}): anyone on the network could push events "
            "into it. Turn security.curve on (cep manager --curve), or run it on the embedded "
            "cluster with spark.host and topology.component_host on 127.0.0.1"
        )
