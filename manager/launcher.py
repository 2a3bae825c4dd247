"""The manager's view of the topology launcher (topology/launcher.py) on the Spark cluster."""

from topology.exceptions import TopologyNotFoundError

ENDED = ("KILLED", "FAILED")


class SparkLauncher:
    """submit/find/kill plan topologies with the spark settings the manager implies."""

    def __init__(self, overrides=None, security=None):
        from topology.spark_settings import load_spark_settings

        self.settings = load_spark_settings(overrides=overrides)
        self.security = security  # CURVE keys and cluster secret handed to each topology

    def submit(self, topology):
        """Submit at once (the driver reports WAITING_FOR_SLOTS itself); returns a handle."""
        from topology.launcher import submit

        return submit(topology, self.settings, security=self.security)

    def find(self, name):
        """The handle of a running topology of that name, or None."""
        from topology.launcher import get_topology

        try:
            handle = get_topology(name, self.settings)
        except TopologyNotFoundError:
            return None
        return None if handle.status()["status"] in ENDED else handle

    def locate(self):
        """(master URL, web UI URL) of the cluster, starting nothing; None when the embedded
        cluster is not running."""
        import json

        from topology.cluster import ensure_cluster
        from topology.spark_settings import state_dir

        if self.settings["spark.master"] != "embedded":
            info = ensure_cluster(self.settings)  # an external master: nothing is started
            return info.master_url, info.ui_url
        try:
            info = json.loads((state_dir(self.settings) / "cluster.json").read_text())
        except (OSError, ValueError):
            return None
        return info["master_url"], info["ui_url"]

    def cluster(self):
        """The cluster's master URL and web UI (starting the embedded one if needed)."""
        from topology.cluster import ensure_cluster

        return ensure_cluster(self.settings)
