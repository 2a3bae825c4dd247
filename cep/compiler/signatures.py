"""The signatures of built-in functions, aggregators and windows, as the compiler reads them:
the entries of the catalog (cep.catalog), which also hold their implementations."""

from cep.catalog.aggregators import AGGREGATORS, is_aggregator  # noqa: F401
from cep.catalog.functions import FUNCTIONS  # noqa: F401
from cep.catalog.rules import constant_type, lookup as _lookup, widest  # noqa: F401
from cep.catalog.windows import WINDOWS, Param, WindowEntry as WindowSignature  # noqa: F401


def lookup(table, name):
    """The entry of `name` in `table` (FUNCTIONS, AGGREGATORS or WINDOWS)."""
    return _lookup(table, name)
