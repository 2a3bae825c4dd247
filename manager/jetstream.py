"""The manager's view of the NATS JetStream transport (`topology.transport: nats`): what each
plan's inflow and outflow streams hold and how far their consumers read (for the plan status,
the console and /metrics), and the deletion of a removed plan's streams.

One connection to the transport's server, opened on first use and kept; while the server
cannot be reached a report says why (`error`) and the next attempt waits RETRY_S, so a status
page never waits on a dead server more than once in that time. Reports are cached CACHE_S."""

import logging
import threading
import time
from typing import Any

from connectors.aio import LoopThread
from connectors.connections import shown
from connectors.nats_transport import (
    connect,
    delete_plan_streams,
    inflow_stream,
    outflow_stream,
    stream_report,
)

log = logging.getLogger(__name__)
CACHE_S = 1.0
RETRY_S = 5.0
TIMEOUT_S = 3.0


class JetStreamView:
    """report(tenant, plan) and remove_plan(tenant, plan) against the transport's server."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._nc: Any = None
        self._js: Any = None
        self._down_until = 0.0
        self._error: str | None = None
        self._cache: dict[tuple[int, str], tuple[float, dict]] = {}

    def _jetstream(self) -> Any:
        """The JetStream context (connecting when needed); raises when the server cannot be
        reached (at most one attempt per RETRY_S)."""
        if self._js is not None and self._nc.is_connected:
            return self._js
        if time.monotonic() < self._down_until:
            raise ConnectionError(self._error)
        if self._loop is None:
            self._loop = LoopThread("manager jetstream view")
        try:
            self._nc = self._loop.run(
                connect(self.url, "cep manager", connect_timeout=TIMEOUT_S, reconnect=False),
                TIMEOUT_S + 2,
            )
        except Exception as exc:  # noqa: BLE001 - any client error: say it, retry later
            self._down_until = time.monotonic() + RETRY_S
            self._error = (
                f"NATS server {shown(self.url)} not reachable: {type(exc).__name__}: {exc}"
            )
            raise ConnectionError(self._error) from None
        self._js = self._nc.jetstream(timeout=TIMEOUT_S)
        return self._js

    def _call(self, coro_fn) -> Any:
        with self._lock:
            js = self._jetstream()
            try:
                return self._loop.run(coro_fn(js), TIMEOUT_S + 2)  # type: ignore[union-attr]
            except Exception:
                self._drop()
                raise

    def _drop(self) -> None:
        """Forget the connection (a failed call: the next one connects again)."""
        nc, self._nc, self._js = self._nc, None, None
        if nc is not None and self._loop is not None:
            try:
                self._loop.run(nc.close(), 5)
            except Exception:  # noqa: BLE001 - closing must go on
                log.debug("closing the JetStream view's connection failed", exc_info=True)

    def report(self, tenant: int, plan: str) -> dict:
        """{"inflow": stream_report, "outflow": stream_report} of the plan's streams, or
        {"error": why} when the server could not answer."""
        key = (tenant, plan)
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < CACHE_S:
            return cached[1]

        async def both(js: Any) -> dict:
            return {
                "inflow": await stream_report(js, inflow_stream(tenant, plan), "cep_in_"),
                "outflow": await stream_report(js, outflow_stream(tenant, plan), "cep_out_"),
            }

        try:
            out = self._call(both)
        except Exception as exc:  # noqa: BLE001 - a status shows the reason, never fails
            out = {"error": str(exc) if isinstance(exc, ConnectionError) else repr(exc)}
        self._cache[key] = (time.monotonic(), out)
        return out

    def remove_plan(self, tenant: int, plan: str) -> dict:
        """Delete a removed plan's streams and their consumers: {"deleted": [names]}, or
        {"error": why} (logged; the streams then stay until the operator deletes them)."""
        self._cache.pop((tenant, plan), None)
        try:
            deleted = self._call(lambda js: delete_plan_streams(js, tenant, plan))
        except Exception as exc:  # noqa: BLE001 - the plan is removed either way
            log.error(
                "plan %s of tenant %s is removed, but its JetStream streams %s and %s could "
                "not be deleted: %s",
                plan,
                tenant,
                inflow_stream(tenant, plan),
                outflow_stream(tenant, plan),
                exc,
            )
            return {"deleted": [], "error": str(exc)}
        log.info(
            "plan %s of tenant %s removed: JetStream streams %s deleted", plan, tenant, deleted
        )
        return {"deleted": deleted}

    def close(self) -> None:
        with self._lock:
            self._drop()
            if self._loop is not None:
                self._loop.close()
                self._loop = None
