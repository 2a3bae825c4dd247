"""Deploy, redeploy and kill plan topologies; report their state live.

States (CEP 4.0's, plus Storm's and the launcher's): UNKNOWN, CLEANING (an old topology of the
same name is being killed), DEPLOYING, WAITING_FOR_SLOTS, ACTIVE, INACTIVE, KILLED, FAILED
(with the reason). Each deploy runs on its own thread and submits without waiting for slots,
so a plan waiting for slots never blocks another; a newer deploy of the same topology
supersedes an older one. The state is recomputed from the running topology on every call."""

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from manager.reasons import public_reason
from manager.topology_recovery import master_lost
from manager.exceptions import InsecureTopologyError
from topology.exceptions import TopologyError, TopologyExistsError, TopologyValidationError

log = logging.getLogger("manager.topology_manager")
ENDED = ("KILLED", "FAILED")


@dataclass
class Deployment:
    """One deploy of one topology: its phase until submitted, then its handle."""

    tenant: int
    plan: str
    name: str
    phase: str = "UNKNOWN"
    reason: str = ""
    handle: object = None
    since: float = field(default_factory=time.time)
    cancelled: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread = None
    plan_hash: str = None  # sha256 of the query plan XML the topology is built from
    adopt: bool = False  # a manager starting: take over a running topology of this plan
    adopted: bool = False  # this deploy took over a topology that was running already
    factory: object = None  # builds the topology again (a resubmit after the master was lost)
    after_master_loss: str = None  # this deploy resubmits a topology whose master was lost
    retry_at: float = None  # MasterRecovery: when to try the next resubmit (monotonic)
    lost_reason: str = ""
    master_retries: int = 0
    observed: bool = False  # a follower's view of a topology the leader runs
    slots: int = 0  # task slots the topology takes (its instances), counted for quotas

    def set(self, phase, reason=""):
        self.phase, self.reason = phase, reason
        log.info("Topology %s: %s%s", self.name, phase, f" ({reason})" if reason else "")


class TopologyManager:
    """Owns the launcher and the plans' deployments, keyed by (tenant, plan)."""

    def __init__(self, launcher, registry_table, kill_wait_secs=10.0, resubmit_interval=10.0):
        self.launcher = launcher
        self.table = registry_table
        self.kill_wait = kill_wait_secs
        self.resubmit = resubmit_interval
        self.deployments = {}
        self._lock = threading.Lock()
        self.recovery = None  # MasterRecovery, started with the first deploy
        self.quotas = None  # manager/quotas.Quotas: a tenant's topologies within its slots
        self.quota_poll = 1.0  # seconds between checks while a topology waits for quota

    def deploy(
        self,
        tenant,
        plan,
        topology_factory,
        name,
        plan_hash=None,
        adopt=False,
        after_master_loss=None,
    ):
        """Kill any running topology `name` and submit a new one built by topology_factory().
        With `adopt` (a manager starting), a topology `name` still running from the same
        query plan (`plan_hash`, kept in its run dir) is taken over instead."""
        dep = Deployment(
            tenant, plan, name, factory=topology_factory, after_master_loss=after_master_loss
        )
        dep.plan_hash, dep.adopt = plan_hash, adopt
        if self.recovery is not None and not self.recovery._thread.is_alive():
            self.recovery.start()
        with self._lock:
            old = self.deployments.get((tenant, plan))
            if old is not None:
                old.cancelled.set()
            self.deployments[(tenant, plan)] = dep
        dep.thread = threading.Thread(
            target=self._run, args=(dep, topology_factory, old), daemon=True, name=f"deploy {name}"
        )
        dep.thread.start()
        return dep

    def _run(self, dep, factory, previous):
        try:
            if previous is not None and previous.thread is not None:
                previous.thread.join()
            if previous is None and dep.adopt and self._adopt(dep):
                return
            self._clean(dep, previous)
            if dep.cancelled.is_set():
                return
            if dep.after_master_loss:  # the submit below starts the embedded cluster again
                dep.set("WAITING_FOR_MASTER", f"{dep.after_master_loss}; resubmitting")
            else:
                dep.set("DEPLOYING")
            topology = factory()
            dep.slots = topology.total_parallelism
            if not self._wait_for_quota(dep):
                return
            self._submit(dep, topology)
        except TopologyValidationError as exc:
            dep.set("FAILED", f"invalid topology: {exc}")
        except InsecureTopologyError as exc:
            log.error("%s %s", dep.name, exc)
            dep.set("FAILED", str(exc))
        except Exception as exc:  # noqa: BLE001 - a deploy thread reports, never dies silently
            log.exception("deploy of %s failed", dep.name)
            dep.set("FAILED", f"{type(exc).__name__}: {exc}")

    def _wait_for_quota(self, dep):
        """WAITING_FOR_QUOTA (with the numbers) while the tenant's other topologies hold too
        many of its slots; False when the deploy was cancelled meanwhile."""
        while self.quotas is not None:
            reason = self.quotas.slots_over(dep.tenant, self._slots_used(dep), dep.slots)
            if reason is None:
                if dep.phase == "WAITING_FOR_QUOTA":
                    dep.set("DEPLOYING")
                return True
            if dep.phase != "WAITING_FOR_QUOTA" or dep.reason != reason:
                dep.set("WAITING_FOR_QUOTA", reason)
            if dep.cancelled.wait(self.quota_poll):
                return False
        return True

    def _slots_used(self, dep):
        """Slots of the tenant's other topologies that run or are being submitted."""
        with self._lock:
            others = [
                d
                for d in self.deployments.values()
                if d.tenant == dep.tenant and d is not dep and not d.cancelled.is_set()
            ]
        return sum(
            d.slots
            for d in others
            if d.phase not in ("FAILED", "KILLED", "WAITING_FOR_QUOTA", "CLEANING")
        )

    def _clean(self, dep, previous):
        """CLEANING: kill the running topology of the same name (a previous deploy or run)."""
        handles = [previous.handle] if previous is not None and previous.handle else []
        running = self.launcher.find(dep.name)
        if running is not None and not any(h.run_dir == running.run_dir for h in handles):
            handles.append(running)
        live = [h for h in handles if h.status()["status"] not in ("KILLED", "FAILED")]
        if live:
            dep.set("CLEANING")
            for h in live:
                h.kill(wait_secs=self.kill_wait)
        # the old spouts' endpoints, and the old publisher bolts' connections to workers
        self.table.remove_plan(dep.tenant, dep.plan, kind="receiver")
        self.table.drop_connections(dep.tenant, dep.plan, kind="publisher")

    def _adopt(self, dep):
        """Take over the running topology of dep.name when it runs dep's query plan."""
        running = self.launcher.find(dep.name)
        run_dir = getattr(running, "run_dir", None)
        if running is None or run_dir is None or dep.plan_hash is None:
            return False
        if _read_plan_hash(run_dir) != dep.plan_hash:
            log.info("Topology %s runs another query plan: redeploying it", dep.name)
            return False
        dep.handle, dep.adopted = running, True
        try:  # its slots count towards the tenant's quota, as if deployed now
            spec = json.loads((Path(run_dir) / "spec.json").read_text())
            dep.slots = sum(int(c.get("parallelism", 1)) for c in spec.get("components", ()))
        except (OSError, ValueError, TypeError):
            pass
        dep.set("SUBMITTED", "adopted the running topology")
        return True

    def _submit(self, dep, topology):
        while not dep.cancelled.is_set():
            try:
                dep.handle = self.launcher.submit(topology)
                _write_plan_hash(getattr(dep.handle, "run_dir", None), dep.plan_hash)
                dep.set("SUBMITTED")
                return
            except TopologyExistsError:
                self._clean(dep, None)
            except TopologyValidationError:
                raise
            except TopologyError as exc:
                if dep.after_master_loss:  # the cluster is still away: say so
                    dep.set(
                        "WAITING_FOR_MASTER",
                        f"{dep.after_master_loss}; resubmitting when it answers: {exc}",
                    )
                dep.reason = f"submit failed, retrying in {self.resubmit:g} s: {exc}"
                log.warning("Topology %s: %s", dep.name, dep.reason)
                dep.cancelled.wait(self.resubmit)

    def status(self, tenant, plan):
        """{"state", "reason", "topology", "since"} recomputed now; the reason names no server
        files (manager.reasons), the log has the full text."""
        out = self._status(tenant, plan)
        out["reason"] = public_reason(out.get("reason"))
        return out

    def _status(self, tenant, plan):
        dep = self.deployments.get((tenant, plan))
        if dep is None:
            return {"state": "UNKNOWN", "reason": "not deployed", "topology": None, "since": None}
        out = {"topology": dep.name, "since": dep.since, "adopted": dep.adopted}
        if dep.handle is None or dep.phase != "SUBMITTED":
            return {**out, "state": dep.phase, "reason": dep.reason}
        st = dep.handle.status()
        state = st.get("status", "UNKNOWN")
        if master_lost(st):  # MasterRecovery resubmits it once the master answers
            return {
                **out,
                "state": "WAITING_FOR_MASTER",
                "applicationId": st.get("app_id"),
                "reason": f"{st.get('reason')}; resubmitting when the master answers",
            }
        return {
            **out,
            "state": "DEPLOYING" if state == "SUBMITTED" else state,
            "reason": st.get("reason", ""),
            "applicationId": st.get("app_id"),
            "executors": st.get("workers"),
            "restarts": st.get("restarts", 0),
            # the Spark application it runs in (its own, or a shared one)
            "application": st.get("application") or dep.name,
            "packing": st.get("packing", "app-per-plan"),
            # the machine (address) each instance runs on: {address: ["comp[i]", ...]}
            "placement": st.get("placement") or {},
            "checkpoints": st.get("checkpoints"),
        }  # last id/time, duration, size

    def undeploy(self, tenant, plan):
        """Kill the plan's topology (waiting for it) and drop its endpoints."""
        with self._lock:
            dep = self.deployments.pop((tenant, plan), None)
        if dep is not None:
            dep.cancelled.set()
            if dep.thread is not None:
                dep.thread.join()
            running = dep.handle or self.launcher.find(dep.name)
            if running is not None:
                final = running.kill(wait_secs=self.kill_wait)
                log.info("Topology %s killed: %s", dep.name, final.get("status"))
        self.table.remove_plan(tenant, plan)

    # -- a follower's view: watch the leader's topologies, never kill or submit --
    def observe(self, plans):
        """Attach to the running topology of each plan in `plans` ({(tenant, plan): compiled});
        plans gone from it are dropped from the view."""
        from manager.topology_builder import topology_name

        with self._lock:
            for key in [k for k, d in self.deployments.items() if d.observed and k not in plans]:
                del self.deployments[key]
        for tenant, plan in list(plans):
            dep = self.deployments.get((tenant, plan))
            if dep is not None and (
                not dep.observed
                or (dep.handle is not None and dep.handle.status()["status"] not in ENDED)
            ):
                continue
            name = topology_name(plan, tenant)
            handle = self.launcher.find(name)
            new = Deployment(tenant, plan, name, observed=True, handle=handle)
            new.phase, new.reason = (
                ("SUBMITTED", "")
                if handle is not None
                else ("UNKNOWN", "no running topology found; the leader deploys it")
            )
            with self._lock:
                self.deployments[(tenant, plan)] = new

    def forget_observed(self, every=False):
        """Drop the follower's views (before taking over: the leader adopts instead), or,
        with `every`, every deployment (after stepping down: shutdown() stopped them)."""
        with self._lock:
            for key in [k for k, d in self.deployments.items() if every or d.observed]:
                del self.deployments[key]

    def shutdown(self, kill=False):
        """Stop deploy threads (and kill the topologies when `kill`)."""
        if self.recovery is not None:
            self.recovery.stop()
        for tenant, plan in list(self.deployments):
            if kill:
                self.undeploy(tenant, plan)
            else:
                self.deployments[(tenant, plan)].cancelled.set()


PLAN_FILE = "plan.json"  # in a topology's run dir: the hash of the query plan it runs


def _write_plan_hash(run_dir, plan_hash):
    if run_dir is None or plan_hash is None:
        return
    try:
        tmp = Path(run_dir) / f".{PLAN_FILE}.tmp"
        tmp.write_text(json.dumps({"query_plan_sha256": plan_hash}))
        tmp.replace(Path(run_dir) / PLAN_FILE)
    except OSError as exc:  # the topology runs; a restarted manager will redeploy it
        log.warning("cannot write %s in %s: %s", PLAN_FILE, run_dir, exc)


def _read_plan_hash(run_dir):
    try:
        return json.loads((Path(run_dir) / PLAN_FILE).read_text()).get("query_plan_sha256")
    except (OSError, ValueError, AttributeError):
        return None
