"""The operator's named datasources for external event tables (conf/datasources.yaml).

A plan names a datasource (`@from(eventtable='rdbms', datasource.name='X')`); the URL, the
password and which tenants may use it live only here, never in plan text:

    datasources:
      orders:
        url: postgresql+psycopg://cep@db.example.com:5432/cep   # an SQLAlchemy URL, no password
        password_env: CEP_ORDERS_PASSWORD   # the password, read from this environment variable
        tenants: [acme, globex]             # '*': every tenant
        pool_size: 5                        # optional SQLAlchemy engine options

The datasource `default` always exists: unless the file configures it, it is an SQLite file
`var/tables/default.sqlite` under the CEP home, open to every tenant. A relative SQLite path
resolves under the CEP home (the parent of the conf folder). The file is found at env
CEP_DATASOURCES, else <conf dir>/datasources.yaml; a missing file means only `default`."""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from cep.policy.exceptions import PolicyViolation

DEFAULT = "default"
_ENGINE_OPTIONS = {"pool_size", "max_overflow", "pool_recycle", "pool_timeout", "echo"}


@dataclass(frozen=True)
class Datasource:
    name: str
    url: str  # without the password
    tenants: tuple = ("*",)
    password_env: Optional[str] = None
    options: dict = field(default_factory=dict)

    def allows(self, tenant) -> bool:
        return "*" in self.tenants or str(tenant) in self.tenants  # tenant ids may be ints

    def connect_url(self):
        """The SQLAlchemy URL to connect with (the password from the environment)."""
        from sqlalchemy.engine import make_url

        url = make_url(self.url)
        if self.password_env:
            password = os.environ.get(self.password_env)
            if password is None:
                raise PolicyViolation(
                    f"datasource '{self.name}': environment variable "
                    f"{self.password_env} (password_env) is not set"
                )
            url = url.set(password=password)
        return url


def datasources_path() -> Path:
    env = os.environ.get("CEP_DATASOURCES")
    if env:
        return Path(env)
    from cep.protocol.settings import default_conf_dir

    return default_conf_dir() / "datasources.yaml"


def load_datasources(path=None) -> dict:
    """{name: Datasource} from the datasources file (PolicyViolation on a malformed one)."""
    path = Path(path) if path else datasources_path()
    home = path.resolve().parent.parent
    data = {}
    if path.exists():
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise PolicyViolation(f"{path}: not valid YAML: {exc}") from None
    entries = data.get("datasources") if isinstance(data, dict) else None
    if entries is None:
        entries = {}
    if not isinstance(entries, dict):
        raise PolicyViolation(f"{path}: 'datasources' must map names to settings")
    out = {DEFAULT: Datasource(DEFAULT, _sqlite_url("var/tables/default.sqlite", home))}
    for name, entry in entries.items():
        out[str(name)] = _datasource(str(name), entry, home, path)
    return out


def _datasource(name, entry, home, path):
    where = f"{path}: datasource '{name}'"
    if not isinstance(entry, dict) or not entry.get("url"):
        raise PolicyViolation(f"{where} needs a url")
    unknown = set(entry) - {"url", "tenants", "password_env"} - _ENGINE_OPTIONS
    if unknown:
        raise PolicyViolation(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    url = str(entry["url"])
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises ArgumentError and others
        raise PolicyViolation(f"{where}: url is not a database URL: {exc}") from None
    if parsed.password is not None:
        raise PolicyViolation(
            f"{where}: the url holds a password; put it in an environment "
            f"variable named by password_env"
        )
    if parsed.drivername.startswith("sqlite"):
        url = _sqlite_url(parsed.database or "", home)
    tenants = entry.get("tenants", ["*"])
    if isinstance(tenants, str):
        tenants = [tenants]
    return Datasource(
        name,
        url,
        tuple(str(t) for t in tenants),
        entry.get("password_env"),
        {k: entry[k] for k in _ENGINE_OPTIONS if k in entry},
    )


def _sqlite_url(database, home):
    if database in ("", ":memory:"):
        return "sqlite://"
    p = Path(database)
    if not p.is_absolute():
        p = home / p
    return f"sqlite:///{p}"


_loaded = {}
_SHIPPED = "<shipped>"  # the key of datasources installed from a component's config


def as_config(datasources) -> dict:
    """{name: plain dict} of datasources, for a Spark component's config (no passwords: a
    url never holds one; password_env names the executor's environment variable)."""
    return {
        n: {
            "url": d.url,
            "tenants": list(d.tenants),
            "password_env": d.password_env,
            "options": dict(d.options),
        }
        for n, d in datasources.items()
    }


def use_config(config: dict) -> None:
    """Use these datasources (from `as_config`, shipped in a component's config) in this
    process instead of a local file: a Spark executor resolves the names as the manager did."""
    _loaded[_SHIPPED] = {
        n: Datasource(
            n,
            e["url"],
            tuple(e.get("tenants") or ("*",)),
            e.get("password_env"),
            dict(e.get("options") or {}),
        )
        for n, e in config.items()
    }


def datasource(name, path=None) -> Datasource:
    """The configured datasource `name` (the file read once per process and path; the
    shipped datasources when a component installed them)."""
    key = str(Path(path) if path else datasources_path())
    if path is None and _SHIPPED in _loaded:
        key = _SHIPPED
    if key not in _loaded:
        _loaded[key] = load_datasources(key)
    found = _loaded[key].get(name)
    if found is None:
        known = ", ".join(sorted(_loaded[key]))
        raise PolicyViolation(
            f"no datasource named '{name}' is configured (configured: {known}; see {key})"
        )
    return found


def check_datasource(name, tenant, path=None) -> Datasource:
    """The datasource `name` when `tenant` may use it; PolicyViolation otherwise."""
    ds = datasource(name, path)
    if tenant is not None and not ds.allows(tenant):
        raise PolicyViolation(
            f"tenant '{tenant}' may not use datasource '{name}' (its "
            f"tenants in the datasources file: {', '.join(ds.tenants)})"
        )
    return ds


def forget_loaded():
    """Re-read the datasources file on the next use (tests, reloads)."""
    _loaded.clear()
