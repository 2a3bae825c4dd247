"""Joins of two streams, or of a stream and a table, with windows on each side.

Runtime entry point: `build_join_query(query, ctx)` (see cep/engine/DESIGN.md)."""

from cep.engine.join.builder import build_join_query  # noqa: F401
