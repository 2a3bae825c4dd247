"""File plan store: `<data>/tenants/<tenantId>/executionplans/<Name>.siddhiql`; the plan
versions in `<data>/deployment-versions.json`."""

import json
import os
import tempfile
from pathlib import Path

from manager.exceptions import StoreError
from manager.store.base import PlanStore, check_name, not_found, parse_tenant

SUFFIX = ".siddhiql"
VERSIONS = "deployment-versions.json"


class FileStore(PlanStore):
    """One file per plan; writes are atomic (temporary file, then rename)."""

    def __init__(self, data_dir):
        self.root = Path(data_dir)

    def _dir(self, tenant):
        return self.root / "tenants" / str(parse_tenant(tenant)) / "executionplans"

    def path(self, tenant, name):
        return self._dir(tenant) / f"{check_name(name)}{SUFFIX}"

    def save(self, tenant, name, text):
        target = self.path(tenant, name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except OSError as exc:
            raise StoreError(
                f"cannot write plan {name!r} of tenant {tenant} to {target}: {exc}"
            ) from None

    def load_versions(self):
        try:
            data = json.loads((self.root / VERSIONS).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read {self.root / VERSIONS}: {exc}") from None
        return data if isinstance(data, dict) else {}

    def save_versions(self, versions):
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(versions, fh)
            os.replace(tmp, self.root / VERSIONS)
        except OSError as exc:
            raise StoreError(f"cannot write {self.root / VERSIONS}: {exc}") from None

    def load(self, tenant, name):
        target = self.path(tenant, name)
        try:
            return target.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise not_found(tenant, name) from None
        except OSError as exc:
            raise StoreError(f"cannot read {target}: {exc}") from None

    def delete(self, tenant, name):
        target = self.path(tenant, name)
        try:
            target.unlink()
        except FileNotFoundError:
            raise not_found(tenant, name) from None

    def names(self, tenant):
        d = self._dir(tenant)
        if not d.is_dir():
            return []
        return sorted(p.name[: -len(SUFFIX)] for p in d.glob(f"*{SUFFIX}") if p.is_file())

    def tenants(self):
        base = self.root / "tenants"
        if not base.is_dir():
            return []
        out = []
        for p in base.iterdir():
            try:
                tenant = int(p.name)
            except ValueError:
                continue
            if self.names(tenant):
                out.append(tenant)
        return sorted(out)
