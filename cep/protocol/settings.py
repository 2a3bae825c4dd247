"""A small generic settings loader: each setting declared once, values layered.

Layers, lowest first: declared defaults, ``conf/<name>.yaml`` (a mapping of sections to
mappings of keys), environment variables ``CEP_<SECTION>_<KEY>``, explicit overrides
(``{"section.key": value}``). Each value remembers where it came from.

    SCHEMA = Schema("spark", [Setting("spark", "slots", int, 16, "worker cores")])
    s = SCHEMA.load(overrides={"spark.slots": 4}); s["spark.slots"]; s.source("spark.slots")
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

import yaml

from cep.protocol.exceptions import ConfigFileError, SettingValueError, UnknownSettingError

ENV_PREFIX = "CEP_"
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def default_conf_dir() -> Path:
    """The project's conf/ directory (env CEP_CONF_DIR overrides it)."""
    env = os.environ.get("CEP_CONF_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "conf"


@dataclass(frozen=True)
class Setting:
    """One declared setting: section, key, type (str/int/float/bool/list), default, meaning."""

    section: str
    key: str
    type: type
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    @property
    def env_var(self) -> str:
        return f"{ENV_PREFIX}{self.section}_{self.key}".upper().replace(".", "_").replace("-", "_")

    def convert(self, value: Any, source: str) -> Any:
        """Convert a raw value (from YAML, env or code) to this setting's type."""
        try:
            out = _convert(self.type, value)
        except (TypeError, ValueError) as exc:
            raise SettingValueError(
                f"setting {self.name}: {value!r} from {source} is not a valid "
                f"{self.type.__name__} ({exc})"
            ) from None
        if self.choices and out not in self.choices:
            raise SettingValueError(
                f"setting {self.name}: {value!r} from {source} is not one of "
                f"{', '.join(map(str, self.choices))}"
            )
        return out


def _convert(kind: type, value: Any) -> Any:
    if value is None:
        return None
    if kind is bool:
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in TRUE_WORDS | FALSE_WORDS:
            return word in TRUE_WORDS
        raise ValueError("expected true/false")
    if kind is list:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, (list, tuple)):
            return list(value)
        raise ValueError("expected a list or a comma-separated string")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError("expected an integer")
    if kind in (int, float) and isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return kind(value)


class Settings:
    """Loaded values: ``s["section.key"]``, ``s.source(name)``, ``s.section(name)``."""

    def __init__(
        self, schema: "Schema", values: Mapping[str, Any], sources: Mapping[str, str]
    ) -> None:
        self.schema = schema
        self._values = dict(values)
        self._sources = dict(sources)

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise UnknownSettingError(
                f"no setting {name!r} in {self.schema.name} settings"
            ) from None

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def source(self, name: str) -> str:
        """Where a value came from: default, a file path, an env var or 'override'."""
        return self._sources[name]

    def section(self, section: str) -> dict[str, Any]:
        """The values of one section as a plain dict keyed by key."""
        prefix = section + "."
        return {k[len(prefix) :]: v for k, v in self._values.items() if k.startswith(prefix)}

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def with_overrides(self, overrides: Optional[Mapping[str, Any]]) -> "Settings":
        """A copy with more explicit overrides applied."""
        values, sources = dict(self._values), dict(self._sources)
        self.schema.apply(values, sources, overrides or {}, "override")
        return Settings(self.schema, values, sources)


class Schema:
    """The declared settings of one configuration file (``conf/<name>.yaml``)."""

    def __init__(self, name: str, settings: Iterable[Setting]) -> None:
        self.name = name
        self.settings = {s.name: s for s in settings}

    def load(
        self,
        conf_dir: Union[str, Path, None] = None,
        env: Optional[Mapping[str, str]] = None,
        overrides: Optional[Mapping[str, Any]] = None,
        path: Union[str, Path, None] = None,
    ) -> Settings:
        """Layer defaults, the YAML file, CEP_* env vars and overrides."""
        values = {n: s.default for n, s in self.settings.items()}
        sources = {n: "default" for n in self.settings}
        path = Path(path) if path else Path(conf_dir or default_conf_dir()) / f"{self.name}.yaml"
        self.apply(values, sources, _read_yaml(path), str(path))
        env = os.environ if env is None else env
        for name, setting in self.settings.items():
            if setting.env_var in env:
                values[name] = setting.convert(env[setting.env_var], setting.env_var)
                sources[name] = setting.env_var
        self.apply(values, sources, overrides or {}, "override")
        return Settings(self, values, sources)

    def apply(
        self, values: dict[str, Any], sources: dict[str, str], flat: Mapping[str, Any], source: str
    ) -> None:
        """Apply a flat {'section.key': value} mapping, rejecting unknown names."""
        for name, raw in flat.items():
            setting = self.settings.get(name)
            if setting is None:
                raise UnknownSettingError(
                    f"unknown setting {name!r} in {source}; known: "
                    f"{', '.join(sorted(self.settings))}"
                )
            values[name] = setting.convert(raw, source)
            sources[name] = source

    def describe(self) -> str:
        """A Markdown table of every setting: name, env var, type, default, meaning."""
        lines = ["| setting | env var | type | default | meaning |", "|---|---|---|---|---|"]
        for s in self.settings.values():
            lines.append(
                f"| `{s.name}` | `{s.env_var}` | {s.type.__name__} | `{s.default!r}` | {s.doc} |"
            )
        return "\n".join(lines)


def _read_yaml(path: Path) -> dict[str, Any]:
    """Read a sections-of-keys YAML file into a flat mapping; a missing file is empty."""
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigFileError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    flat: dict[str, Any] = {}
    for section, keys in data.items():
        if not isinstance(keys, dict):
            raise ConfigFileError(
                f"{path}: section {section!r} must be a mapping of keys, got {keys!r}"
            )
        for key, value in keys.items():
            flat[f"{section}.{key}"] = value
    return flat
