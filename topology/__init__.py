"""Storm-style topologies (spouts, bolts, groupings) run as Spark applications.

Public API::

    from topology import Topology, Grouping, Spout, Bolt, submit, run_local
"""

from topology.component import Batch, Bolt, Context, Spout
from topology.launcher import get_topology, list_topologies, submit
from topology.local import run_local
from topology.model import Grouping, Topology

__all__ = [
    "Topology",
    "Grouping",
    "Spout",
    "Bolt",
    "Batch",
    "Context",
    "submit",
    "get_topology",
    "list_topologies",
    "run_local",
]
