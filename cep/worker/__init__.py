"""The CEP worker: takes events in (receivers/), runs or forwards them per plan, and sends the
results out (publishers/). Distributed mode forwards to the plan topologies on Spark through
receiver spouts and takes results back from publisher bolts; standalone mode runs the plans
in-process with the engine. See README.md in this folder."""

from cep.worker.config import load_config, WORKER_SCHEMA

__all__ = ["load_config", "WORKER_SCHEMA"]
