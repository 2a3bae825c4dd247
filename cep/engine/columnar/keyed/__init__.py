"""Exact numpy kernels of one query over a whole Spark partition of keyed events (backtests).

The events of the query's input stream come sorted by (partition key, timestamp, input
order); each key's run is one partition instance on its own playback clock. A kernel computes
what the engine (`cep run --playback`) emits for every key at once, with numpy over the whole
partition and no per-event Python: bit-identical rows, timestamps and order.

    keyed_kernel(query, definitions, keys) -> KeyedKernel or None

Kernels: stateless filters/projections [having] (stateless.py), `length`/`time` sliding
sum/avg/count [group by] [having over output attributes] (sliding.py), `every e1=S[c1] ->
e2=S[c2] [within T]` and the sequence `every e1=S[c1], e2=S[c2] [within T]` (pattern.py).
Every other query gets None (the caller runs the engine for it), and `run` returns None for a
batch it does not take (a column missing or of another dtype, a pattern scan past its work
budget). Columns must not hold nulls (the caller sends such batches to the engine). Long
batches run in chunks of whole keys (base.CHUNK events). Tests:
tests/cep/engine/columnar/test_keyed_*.py (differential against the engine fed key by key);
speed: benchmarks/keyed_kernel_bench.py."""

from cep.engine.columnar.keyed.base import KeyedKernel, Unsuited

__all__ = ["KeyedKernel", "keyed_kernel"]


def keyed_kernel(query, definitions, keys):
    """A KeyedKernel for `query` (a cep.model Query inside a `partition with (attr of S)`, or
    a stateless query anywhere), or None when no exact kernel applies. `definitions`: stream
    id -> StreamDefinition of every stream of the plan; `keys`: input stream id -> partition
    key attribute name."""
    from cep.engine.columnar.exprs import Unsupported
    from cep.engine.columnar.keyed import pattern, sliding, stateless
    from cep.errors import CepError

    for build in (stateless.build, sliding.build, pattern.build):
        try:
            kernel = build(query, definitions, keys)
        except (Unsuited, Unsupported, CepError):
            kernel = None
        if kernel is not None:
            return kernel
    return None
