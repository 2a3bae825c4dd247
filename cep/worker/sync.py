"""Deployment sync: keep the worker's plans equal to what it should serve.

`ManagerSync` polls the manager's `GET /api/v1/deployments` (ETag, so an unchanged answer is a
304) every `managers.poll_interval` seconds (<= 5). `LocalPlanSync` (standalone) re-reads plan
files whose size or mtime changed. Both hand the full desired list to `worker.apply(specs)`,
which starts new plans, restarts changed ones and tears down removed ones."""

import logging
import os
import threading
from pathlib import Path

from cep.worker.exceptions import DeploymentFormatError, ManagerUnavailableError, PlanLoadError
from cep.worker.plans import spec_from_deployment, spec_from_plan

log = logging.getLogger(__name__)


class _Poller:
    """A daemon thread calling `poll_once()` every `interval` seconds until stopped."""

    def __init__(self, interval, name):
        self.interval = interval
        self.polls = 0
        self.last_error = None
        self.synced = False  # the plans were applied at least once (a worker just started:
        # until then an unknown stream may still come, so the receivers answer 503, not 404)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # the sync loop must outlive any one bad answer
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("deployment sync failed")
            self.polls += 1
            self._stop.wait(self.interval)


class ManagerSync(_Poller):
    """Poll the managers for the plans this worker serves."""

    def __init__(self, worker, managers, interval, watch=None):
        super().__init__(interval, "deployment-sync")
        self.worker, self.managers = worker, managers
        self.watch = watch  # cep.worker.self_undeploy.SelfUndeploy, or None
        self.etag = None
        self.version = None
        self.plan_errors = {}

    def poll_once(self):
        try:
            status, etag, body = self.managers.get_json("/api/v1/deployments", self.etag)
        except ManagerUnavailableError as exc:
            if self.last_error != str(exc):
                log.warning("%s; keeping the %d plans deployed", exc, len(self.worker.plans))
            self.last_error = str(exc)
            if self.watch is not None:
                self.watch.unreachable(self.worker, exc)
            return
        self.last_error = None
        if self.watch is not None and self.watch.reached(self.worker):
            self.etag = None  # the plans were torn down: take the whole list again
            status, etag, body = self.managers.get_json("/api/v1/deployments")
        if status == 304:
            self.synced = True
            return
        specs = self._specs(body.get("plans") or [])
        self.worker.apply(specs)
        self.etag, self.version = etag, body.get("version")
        self.synced = True

    def _specs(self, entries):
        specs, self.plan_errors = [], {}
        for entry in entries:
            try:
                specs.append(spec_from_deployment(entry))
            except DeploymentFormatError as exc:
                key = f"{entry.get('tenant')}/{entry.get('name')}"
                self.plan_errors[key] = str(exc)
                log.error("skipping plan %s: %s", key, exc)
        return specs

    def describe(self):
        return {
            "source": "manager",
            "manager": self.managers.urls[self.managers.current],
            "managers": self.managers.urls,
            "version": self.version,
            "polls": self.polls,
            "last_error": self.last_error,
            "plan_errors": self.plan_errors,
        }


class LocalPlanSync(_Poller):
    """Standalone: plans from local *.siddhiql files or folders, re-read when they change."""

    def __init__(self, worker, paths, tenant, interval):
        super().__init__(interval, "plan-files")
        self.worker, self.paths, self.tenant = worker, [Path(p) for p in paths], tenant
        self._seen = {}  # path -> (signature, spec or None)
        self.plan_errors = {}

    def plan_files(self):
        files = []
        for p in self.paths:
            files.extend(sorted(p.glob("*.siddhiql")) if p.is_dir() else [p])
        return files

    def poll_once(self):
        files, changed = self.plan_files(), False
        for path in files:
            sig = _signature(path)
            old_sig, old_spec = self._seen.get(path, (None, None))
            if old_sig != sig:  # a file that no longer compiles keeps its last good plan
                self._seen[path] = (sig, self._load(path, sig) or old_spec)
                changed = True
        for path in set(self._seen) - set(files):
            del self._seen[path]
            changed = True
        if changed or self.polls == 0:
            self.worker.apply([spec for _, spec in self._seen.values() if spec is not None])
        self.synced = True

    def _load(self, path, sig):
        try:
            spec = load_plan_file(path, self.tenant, version=sig[1] if sig else 0)
        except PlanLoadError as exc:
            self.plan_errors[str(path)] = str(exc)
            log.error("%s", exc)
            return None
        self.plan_errors.pop(str(path), None)
        return spec

    def describe(self):
        return {
            "source": "files",
            "paths": [str(p) for p in self.paths],
            "polls": self.polls,
            "last_error": self.last_error,
            "plan_errors": self.plan_errors,
        }


def load_plan_file(path, tenant, version=0):
    """Compile a plan file into a PlanSpec; PlanLoadError says what is wrong and where."""
    import cep
    from cep.errors import CepError

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanLoadError(f"plan file {path}: {exc}") from None
    try:
        plan = cep.compile(text)
    except CepError as exc:
        raise PlanLoadError(f"plan file {path}: {exc}") from None
    if not plan.name:
        raise PlanLoadError(f"plan file {path}: no @Plan:name('...')")
    return spec_from_plan(plan, tenant, version)


def _signature(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns
