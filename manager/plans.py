"""The plan service: add, edit, remove, list, show, status, query-plan; per tenant.

add validates and compiles (a rejected plan changes nothing), stores, then deploys; edit kills
the running topology and submits the new one (a changed @Plan:name kills the old topology
too); remove kills it and drops its endpoints. A version counter grows on every change so
workers can poll /api/v1/deployments cheaply."""

import hashlib
import itertools
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from cep.policy import HostPolicy
from manager.compile_budget import check_in_budget
from manager.compiler import CompiledPlan, compile_plan
from manager.exceptions import PlanExistsError, PlanNotFoundError, PlanRejectedError
from manager.policy import check_compiled, check_plan_name, check_size
from manager.quotas import Quotas
from manager.queryplan.streams import cep_stream
from manager.status import nats_plan_status, plan_status, status_text
from manager.store.base import parse_tenant
from manager.topology_builder import build_topology, topology_name
from manager.worker_view import plan_view

log = logging.getLogger("manager.topology_manager")

Key = tuple[int, str]  # (tenant, plan name)
Json = dict[str, Any]


class PlanService:
    """Plans of every tenant: the store, compiled plans, topologies and status."""

    def __init__(
        self,
        store: Any,
        topologies: Any,
        registry_table: Any,
        registry_url: str,
        host: str | None = None,
        compiler: Any = None,
    ) -> None:
        """`host`: what spouts advertise (None: each executor's own address)."""
        self.store = store
        self.topologies = topologies
        self.table = registry_table
        self.registry_url = registry_url
        self.host = host
        self.listener_check: Callable[[], None] | None = (
            None  # raises InsecureTopologyError (manager/listeners.py)
        )
        self.quotas = Quotas()  # per-tenant quotas (manager/quotas.py); the server sets them
        self.validate_secs = 0.0  # compile time budget (manager/compile_budget.py); 0: none
        # how the plans' publisher bolts authenticate to the workers' publisher ports:
        # "token" (the topology has the cluster secret, no CURVE), "curve" or "none"
        self.publisher_auth: str = "none"
        # the inflow/outflow transport the workers use (topology.transport and its connection)
        self.transport: dict[str, str] = {}
        # NATS transport: its streams' view (manager/jetstream.py); the server sets it
        self.jetstream: Any = None
        self.compiler = compiler
        self.component_config: dict[str, Any] = {}  # extra config of every spout and publisher bolt
        self.policy = HostPolicy()  # what plans may reach (manager.policy); the server sets it
        self.compiled: dict[Key, CompiledPlan] = {}  # (tenant, name) -> CompiledPlan
        self.versions: dict[Key, int] = {}  # (tenant, name) -> int
        self.changed: dict[
            Key, float
        ] = {}  # (tenant, name) -> time of the last add/edit/load (epoch seconds)
        self._counter = itertools.count(1)
        self.version = 0
        self._lock = threading.RLock()
        self.read_only = False  # a follower of a manager group: it never writes
        self._texts: dict[
            Key, str
        ] = {}  # (tenant, name) -> the stored text compiled (a follower's refresh)

    # -- lifecycle --
    def load_all(self, deploy: bool = True) -> None:
        """Compile (and deploy) every stored plan; a plan that no longer compiles is logged.

        The versions saved before a restart are kept (workers then keep their plans), and a
        topology still running from the same query plan is adopted, not redeployed."""
        saved = self.store.load_versions()
        known = saved.get("plans") or {}
        stored = self._compile_stored()
        with self._lock:
            self.version = int(saved.get("version") or 0)
            self._counter = itertools.count(self.version + 1)
            for key in [k for k in self.compiled if k not in stored]:  # gone while following
                self._forget(key)
            for (tenant, name), compiled in stored.items():
                self.compiled[(tenant, name)] = compiled
                if isinstance(known.get(f"{tenant}/{name}"), int):
                    self.versions[(tenant, name)] = known[f"{tenant}/{name}"]
                    self.changed.setdefault((tenant, name), time.time())
                else:
                    self._bump(tenant, name)
            self._save_versions()
        if deploy:
            for (tenant, name), compiled in sorted(stored.items()):
                self._deploy(tenant, compiled, adopt=True)

    def _compile_stored(self) -> dict[Key, CompiledPlan]:
        """{(tenant, name): CompiledPlan} of the store; an unchanged text is not compiled
        again; a plan that no longer compiles is logged and left out."""
        out: dict[Key, CompiledPlan] = {}
        texts: dict[Key, str] = {}
        for tenant, name, text in self.store.all():
            key = (tenant, name)
            texts[key] = text
            if self._texts.get(key) == text and key in self.compiled:
                out[key] = self.compiled[key]
                continue
            try:
                out[key] = self._compile(tenant, text)
            except PlanRejectedError as exc:
                log.error("Stored plan %s of tenant %s is rejected: %s", name, tenant, exc)
        self._texts = texts
        return out

    def _forget(self, key: Key) -> None:
        self.compiled.pop(key, None)
        self.versions.pop(key, None)
        self.changed.pop(key, None)

    def refresh(self) -> bool:
        """A follower's round: take the plans and versions the leader stored, when
        the stored deployment version moved; returns True when something changed."""
        saved = self.store.load_versions()
        if int(saved.get("version") or 0) == self.version and self.compiled:
            return False
        known = saved.get("plans") or {}
        stored = self._compile_stored()
        versions: dict[Key, int] = {}
        changed: dict[Key, float] = {}
        for key in stored:
            version = known.get(f"{key[0]}/{key[1]}")
            versions[key] = version if isinstance(version, int) else 0
            same = self.versions.get(key) == versions[key] and key in self.changed
            changed[key] = self.changed[key] if same else time.time()
        with self._lock:  # new dicts swapped in: request threads iterate the old ones safely
            self.compiled, self.versions, self.changed = stored, versions, changed
            self.version = int(saved.get("version") or 0)
        return True

    def _bump(self, tenant: int, name: str) -> None:
        if self.read_only:  # a follower numbers nothing: it takes the leader's versions
            self.versions.setdefault((tenant, name), 0)
            return
        self.version = next(self._counter)
        self.versions[(tenant, name)] = self.version
        self.changed[(tenant, name)] = time.time()
        self._save_versions()

    def _save_versions(self) -> None:
        """Persist the deployment version and each plan's version (called under the lock)."""
        if self.read_only:
            return
        self.store.save_versions(
            {
                "version": self.version,
                "plans": {f"{t}/{n}": v for (t, n), v in self.versions.items()},
            }
        )

    def _deploy(self, tenant: int, compiled: CompiledPlan, adopt: bool = False) -> None:
        log.debug("Query plan of %s:\n%s", topology_name(compiled.name, tenant), compiled.xml)
        playback = compiled.model.playback

        def factory() -> Any:
            if self.listener_check is not None:
                self.listener_check()
            return build_topology(
                compiled.xml,
                tenant,
                compiled.name,
                self.registry_url,
                self.host,
                playback=playback,
                extra=self.component_config,
            )

        self.topologies.deploy(
            tenant,
            compiled.name,
            factory,
            topology_name(compiled.name, tenant),
            plan_hash=plan_hash(compiled.xml),
            adopt=adopt,
        )

    def _compile(self, tenant: int, text: str) -> CompiledPlan:
        """Compile and check against the host policy (with the tenant's quotas on plan size
        and queries): size and query count first, before any parse; then name, sinks,
        limits."""
        policy = self.quotas.policy_for(tenant, self.policy)
        check_size(text, policy)
        if self.compiler is None:  # the real compiler: a large plan gets a time budget
            check_in_budget(text, self.validate_secs)
        compiled = compile_plan(text, self.compiler)
        check_compiled(compiled, tenant, policy)
        return compiled

    def _get(self, tenant: int, name: str) -> CompiledPlan:
        check_plan_name(name)
        compiled = self.compiled.get((tenant, name))
        if compiled is None:
            raise PlanNotFoundError(f"no execution plan {name!r} for tenant {tenant}")
        return compiled

    # -- operations --
    def add(self, tenant: int | str, text: str) -> Json:
        """Validate, compile, store and deploy a new plan; its summary."""
        tenant = parse_tenant(tenant)
        compiled = self._compile(tenant, text)
        with self._lock:
            if (tenant, compiled.name) in self.compiled or self.store.exists(tenant, compiled.name):
                raise PlanExistsError(
                    f"execution plan {compiled.name!r} already exists for "
                    f"tenant {tenant}; edit it instead"
                )
            self.quotas.check_plans(tenant, sum(1 for t, _ in self.compiled if t == tenant))
            self.store.save(tenant, compiled.name, text)
            self.compiled[(tenant, compiled.name)] = compiled
            self._bump(tenant, compiled.name)
        self._deploy(tenant, compiled)
        return self.summary(tenant, compiled.name)

    def validate(self, tenant: int | str, text: str) -> Json:
        """Check a plan exactly as add does (compiler, distribution rules, host policy) and
        change nothing; PlanRejectedError with positions when it fails."""
        tenant = parse_tenant(tenant)
        compiled = self._compile(tenant, text)
        return {"tenant": tenant, "name": compiled.name, "valid": True}

    def edit(self, tenant: int | str, name: str, text: str) -> Json:
        """Replace a plan's text (a new @Plan:name renames it) and redeploy; its summary."""
        tenant = parse_tenant(tenant)
        check_plan_name(name)
        compiled = self._compile(tenant, text)
        with self._lock:
            self._get(tenant, name)
            renamed = compiled.name != name
            if renamed and (tenant, compiled.name) in self.compiled:
                raise PlanExistsError(
                    f"cannot rename {name!r} to {compiled.name!r}: that plan "
                    f"already exists for tenant {tenant}"
                )
            self.store.save(tenant, compiled.name, text)
            if renamed:
                self.store.delete(tenant, name)
                del self.compiled[(tenant, name)]
                self.versions.pop((tenant, name), None)
                self.changed.pop((tenant, name), None)
            self.compiled[(tenant, compiled.name)] = compiled
            self._bump(tenant, compiled.name)
        if renamed:  # the old name is gone: so are its streams
            self.topologies.undeploy(tenant, name)
            self._drop_streams(tenant, name)
        self._deploy(tenant, compiled)
        return self.summary(tenant, compiled.name)

    def remove(self, tenant: int | str, name: str) -> Json:
        """Delete a plan and undeploy its topology."""
        tenant = parse_tenant(tenant)
        with self._lock:
            self._get(tenant, name)
            self.store.delete(tenant, name)
            del self.compiled[(tenant, name)]
            self.versions.pop((tenant, name), None)
            self.changed.pop((tenant, name), None)
            self.version = next(self._counter)
            self._save_versions()
        self.topologies.undeploy(tenant, name)
        return {"tenant": tenant, "name": name, "removed": True, **self._drop_streams(tenant, name)}

    def _drop_streams(self, tenant: int, name: str) -> Json:
        """A removed plan's transport streams are deleted (after its topology was killed, so
        no spout makes them again); a restarted or edited plan keeps them: its unread input
        is there. {} on ZeroMQ, else {"jetstream": JetStreamView.remove_plan()}."""
        if self.jetstream is None or self.read_only:
            return {}
        return {"jetstream": self.jetstream.remove_plan(tenant, name)}

    def list(self, tenant: int | str) -> list[Json]:
        """Summaries of the tenant's plans with `status` and CEP 4.0's `statusText`."""
        tenant = parse_tenant(tenant)
        names = sorted(n for t, n in self.compiled if t == tenant)
        out = []
        for n in names:
            status = self.status(tenant, n)
            out.append(
                {
                    **self.summary(tenant, n, status),
                    "status": status,
                    "statusText": status_text(status),
                }
            )
        return out

    def show(self, tenant: int | str, name: str) -> Json:
        """The plan's summary and its text."""
        tenant = parse_tenant(tenant)
        return {**self.summary(tenant, name), "text": self._get(tenant, name).text}

    def compiled_plan(self, tenant: int | str, name: str) -> CompiledPlan:
        """The CompiledPlan (model, XML, text); PlanNotFoundError for an unknown plan."""
        return self._get(parse_tenant(tenant), name)

    def query_plan(self, tenant: int | str, name: str) -> str:
        """The plan's XML query plan."""
        return self._get(parse_tenant(tenant), name).xml

    def exists(self, tenant: int, name: str) -> bool:
        return (tenant, name) in self.compiled

    def status(self, tenant: int | str, name: str) -> Json:
        """The plan's deployment status: its topology's state and its connections."""
        tenant = parse_tenant(tenant)
        compiled = self._get(tenant, name)
        imported = [
            s.id for s in compiled.model.streams if cep_stream(s, "Import")
        ] or _receiver_streams(compiled.xml)
        if self.transport.get("transport") == "nats" and self.jetstream is not None:
            return {
                "tenant": tenant,
                "name": name,
                **nats_plan_status(
                    self.topologies.status(tenant, name),
                    self.jetstream.report(tenant, name),
                    compiled.model.plan_dist("receiverParallelism"),
                ),
            }
        return {
            "tenant": tenant,
            "name": name,
            **plan_status(
                self.topologies.status(tenant, name),
                self.table.status(tenant, name),
                imported,
                compiled.model.plan_dist("publisherParallelism"),
                self.transport.get("transport", "zmq"),
            ),
        }

    def summary(self, tenant: int, name: str, state: Json | None = None) -> Json:
        """Name, topology, description, version, last change and state of a plan."""
        compiled = self._get(tenant, name)
        state = state or self.topologies.status(tenant, name)
        changed = self.changed.get((tenant, name))
        return {
            "tenant": tenant,
            "name": name,
            "topology": topology_name(name, tenant),
            "description": compiled.model.description or "",
            "version": self.versions.get((tenant, name)),
            "lastChange": _iso(changed) if changed else None,
            "state": state["state"],
            "reason": state["reason"],
        }

    def deployments(self, tenant: int | None = None) -> Json:
        """The worker's view (PROTOCOL.md section 3) and the global version."""
        with self._lock:
            items = sorted(self.compiled.items())
            version = self.version
        plans = [
            dict(
                plan_view(t, c, self.versions.get((t, n))),
                publisherAuth=self.publisher_auth,
                **self.transport,
            )
            for (t, n), c in items
            if tenant is None or t == tenant
        ]
        return {"version": version, "plans": plans}


def plan_hash(xml: str) -> str:
    """sha256 of a query plan's XML: what a running topology was built from."""
    return hashlib.sha256(xml.encode("utf-8")).hexdigest()


def _iso(epoch: float) -> str:
    """ISO-8601 UTC with milliseconds, e.g. 2026-11-25T08:15:00.123Z."""
    return (
        datetime.fromtimestamp(epoch, timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _receiver_streams(xml: str) -> list[str]:
    from manager.queryplan.reader import read_query_plan

    return [s.id for s in read_query_plan(xml).imported]
