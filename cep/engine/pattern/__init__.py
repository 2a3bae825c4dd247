"""Patterns (`->`) and sequences (`,`): a Siddhi-style state machine over partial matches.

Runtime entry point: `build_state_query(query, ctx)` (see cep/engine/DESIGN.md)."""

from cep.engine.pattern.builder import build_state_query  # noqa: F401
