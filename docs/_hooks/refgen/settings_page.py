"""The configuration reference: every key of conf/manager.yaml, conf/worker.yaml and
conf/spark.yaml, from the settings definitions (cep.protocol.settings.Schema), with its type,
default, environment variable and description. A key without a description fails the build."""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refgen import DefinitionError
from refgen.markdown import cell, code, lines, table

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class SchemaSource:
    """Where one settings definition lives and who reads it."""

    module: str
    attribute: str
    title: str
    read_by: str

    def schema(self) -> Any:
        return getattr(importlib.import_module(self.module), self.attribute)

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".py"


SCHEMAS = (
    SchemaSource(
        "manager.settings", "MANAGER", "The manager", "`cep manager` (`bin/cep.sh` starts it)"
    ),
    SchemaSource(
        "cep.worker.config",
        "WORKER_SCHEMA",
        "Workers",
        "`cep worker` (`bin/cep-worker.sh`, `bin/cep.sh`)",
    ),
    SchemaSource(
        "topology.spark_settings",
        "SPARK",
        "Spark and topologies",
        "the manager (its topologies and the embedded cluster), `cep topology` and `cep backtest`",
    ),
)

INTRO = """# Configuration keys

Every setting of the manager, the workers and Spark, as the code defines it (this page is
written from the settings definitions at each build of the site). A setting `section.key` is
read, lowest first, from its default, from the YAML file (`section:` then `key: value`), from
its environment variable, then from a command-line flag where the command has one.
The YAML files are in `conf/`, or in the folder that `CEP_CONF_DIR` names. A `list` read from
an environment variable is comma-separated; a `bool` is `true`/`false`, `yes`/`no`, `on`/`off`
or `1`/`0`. An unknown key in a file is an error that lists the known ones.

Two more files have no keys here: `conf/logging.yaml` (a `logging.config.dictConfig`
mapping, passed with `--log-config` or `CEP_LOG_CONFIG`) and `conf/datasources.yaml` (the
databases of SiddhiQL tables). See [deploy and operate](../operations.md) for how the
processes are started.
"""


def _default(value: Any) -> str:
    return code(json.dumps(value))


def _type(setting: Any) -> str:
    out = code(setting.type.__name__)
    if setting.choices:
        out += ": one of " + ", ".join(code(str(c)) for c in setting.choices)
    return out


def _declared_in(setting: Any) -> str:
    """The source file that declares `setting` (a search of the packages' sources)."""
    pattern = re.compile(
        r'Setting\(\s*"%s",\s*"%s"' % (re.escape(setting.section), re.escape(setting.key))
    )
    for folder in ("cep", "manager", "topology", "receivers", "publishers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if pattern.search(path.read_text(encoding="utf-8")):
                return str(path.relative_to(ROOT))
    return "its module"


def check(source: SchemaSource, schema: Any) -> None:
    """Every setting has a description, else DefinitionError naming it and its file."""
    for setting in schema.settings.values():
        if not str(setting.doc or "").strip():
            raise DefinitionError(
                f"the configuration reference needs a description of every setting: "
                f"{setting.name} of conf/{schema.name}.yaml ({source.module}.{source.attribute}) "
                f"has none; give its Setting(...) in {_declared_in(setting)} a description"
            )


def render_schema(source: SchemaSource, schema: Any) -> str:
    """One settings definition: a heading, then a table per section."""
    check(source, schema)
    out = [
        f"## conf/{schema.name}.yaml: {source.title} {{#{schema.name}}}",
        "",
        f"Defined in `{source.path}` (`{source.attribute}`); read by {source.read_by}.",
        "",
    ]
    sections: dict[str, list[Any]] = {}
    for setting in schema.settings.values():
        sections.setdefault(setting.section, []).append(setting)
    for section, settings in sections.items():
        out += [f"### {section} {{#{schema.name}-{section}}}", ""]
        out.append(
            table(
                ["key, environment variable", "type, default", "description"],
                [
                    [
                        lines([code(s.name), code(s.env_var)]),
                        lines([_type(s), _default(s.default)]),
                        cell(s.doc),
                    ]
                    for s in settings
                ],
            )
        )
        out.append("")
    return "\n".join(out)


def render() -> str:
    """The configuration reference page."""
    parts = [INTRO]
    for source in SCHEMAS:
        parts.append(render_schema(source, source.schema()))
    return "\n".join(parts)
