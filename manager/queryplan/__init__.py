"""The XML query plan of CEP 4.0's distributed mode: built from a compiled plan, validated,
and read back to build the topology (what is logged is what runs)."""

from manager.queryplan.builder import build_query_plan, query_plan_xml
from manager.queryplan.reader import QueryPlan, read_query_plan
from manager.queryplan.validate import validate_query_plan

__all__ = [
    "build_query_plan",
    "query_plan_xml",
    "QueryPlan",
    "read_query_plan",
    "validate_query_plan",
]
