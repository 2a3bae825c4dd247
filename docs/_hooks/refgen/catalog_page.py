"""The SiddhiQL reference: every built-in function, aggregator, window and stream function,
and every extension function, aggregator and stream processor, from the catalog (cep/catalog)
and the compiler's stream functions, with the argument and result types their type rules
accept (refgen.signatures), what each does and whether it runs here."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from refgen.markdown import cell, code, lines, table
from refgen.signatures import signatures

SUPPORTED = "supported"
KERNEL = "supported (batch kernel)"

INTRO = """# SiddhiQL functions and extensions

Every function, aggregator, window and stream processor this engine runs, written from the
catalog of built-ins (`cep/catalog`) at each build of the site. The types are what the
compiler's type rules accept: every combination of argument types was tried.
`number` is int, long, float or double; `any` is every type; `T` is one type used in
several places (`maximum(T, T) -> T` takes two ints or two doubles, not one of each);
`...` means more arguments like the last one; `set by a constant` is a result type named by a
constant argument (`convert(x, 'long')`). The status says whether the engine runs it:
*supported (batch kernel)* functions also run over a whole batch with numpy in the columnar
engine. What each one does follows Siddhi 3.2.15: see the
[catalog's guide](../../cep/catalog/README.md) for the details.
"""


def _function_rows(entries: Iterable[tuple[Optional[str], Any]], status: Any) -> list[list[str]]:
    rows = []
    for namespace, e in entries:
        full = f"{namespace}:{e.name}" if namespace else e.name
        found = signatures(e.rule, e.name, namespace, e.min_args, e.max_args)
        rows.append(
            [
                code(full),
                lines(code(s) for s in found) or "(none)",
                cell(e.doc or ""),
                status(namespace, e.name),
            ]
        )
    return rows


def _header(kind: str) -> list[str]:
    return [kind, "arguments -> result", "description", "status"]


def _builtin_status(namespace: Optional[str], name: str) -> str:
    return SUPPORTED


def _ext_status(namespace: Optional[str], name: str) -> str:
    from cep.catalog.ext.vector import KERNELS

    return KERNEL if (namespace, name) in KERNELS else SUPPORTED


def _first_paragraph(doc: Optional[str]) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _window_param(p: Any) -> str:
    from refgen.signatures import type_set

    kind = [
        "a constant" if p.constant else "",
        "an attribute" if p.attribute else "",
        "optional" if p.optional else "",
        "repeatable" if p.repeat else "",
    ]
    return f"{code(p.name)}: " + ", ".join(
        [cell(type_set(frozenset(p.types)))] + [k for k in kind if k]
    )


def _window_call(w: Any) -> str:
    params = []
    for p in w.params:
        name = p.name + (", ..." if p.repeat else "")
        params.append(f"[{name}]" if p.optional else name)
    return f"#window.{w.name}({', '.join(params)})"


def builtins() -> str:
    from cep.catalog.aggregators import AGGREGATORS
    from cep.catalog.functions import FUNCTIONS
    from cep.catalog.windows import WINDOWS
    from cep.compiler.input_checks import STREAM_FUNCTION_DOCS, STREAM_FUNCTIONS

    out = [
        "## Functions {#functions}",
        "",
        table(
            _header("function"),
            _function_rows(((None, e) for e in FUNCTIONS.values()), _builtin_status),
        ),
        "",
        "## Aggregators {#aggregators}",
        "",
        "In `select` (over a window, or over every event so far without one).",
        "",
        table(
            _header("aggregator"),
            _function_rows(((None, e) for e in AGGREGATORS.values()), _builtin_status),
        ),
        "",
        "## Windows {#windows}",
        "",
        "`from S#window.NAME(...)`, or `define window W (...) NAME(...)` shared by queries.",
        "",
        table(
            ["window", "parameters", "description", "status"],
            [
                [
                    code(_window_call(w)),
                    lines(_window_param(p) for p in w.params),
                    cell(w.doc or _first_paragraph(w.processor_class().__doc__)),
                    SUPPORTED,
                ]
                for w in WINDOWS.values()
            ],
        ),
        "",
        "## Stream functions {#stream-functions}",
        "",
        table(
            ["stream function", "parameters", "description", "status"],
            [
                [
                    code(f"#{name}"),
                    cell(f"{low} to {high}"),
                    cell(STREAM_FUNCTION_DOCS.get(name, "")),
                    SUPPORTED,
                ]
                for name, (low, high) in STREAM_FUNCTIONS.items()
            ],
        ),
        "",
    ]
    return "\n".join(out)


def extension_functions() -> dict[str, list[Any]]:
    """Namespace -> its function entries: Siddhi's standard extensions of cep.catalog.ext,
    and the stateful ones of cep.catalog.ext_processors (kf)."""
    from cep.catalog import ext, ext_processors

    ext_processors._load_functions()
    out: dict[str, list[Any]] = {
        ns: [ext.lookup(ns, n) for n in ext.names(ns)] for ns in ext.namespaces()
    }
    for (ns, _), entry in ext_processors.FUNCTIONS.items():
        if getattr(entry, "origin", "siddhi") == "siddhi" and ns not in ext.MODULES:
            out.setdefault(ns, []).append(entry)
    return out


def _standard_processors() -> list[Any]:
    from cep.catalog import ext_processors

    return [e for e in ext_processors.STREAM_PROCESSORS.values() if e.origin == "siddhi"]


def extensions() -> str:
    from cep.catalog import ext
    from cep.catalog.ext.aggregators import AGGREGATORS as EXT_AGGREGATORS

    out = [
        "## Extensions {#extensions}",
        "",
        "Siddhi 3.2.15's standard extensions, called as `namespace:name(...)`, with the "
        "Java originals' semantics.",
        "",
    ]
    for ns, entries in sorted(extension_functions().items()):
        out += [
            f"### {ns}: functions {{#ext-{ns}}}",
            "",
            table(_header("function"), _function_rows(((ns, e) for e in entries), _ext_status)),
            "",
        ]
    out += [
        "### Extension aggregators {#ext-aggregators}",
        "",
        table(
            _header("aggregator"),
            _function_rows(
                ((ns, e) for (ns, _), e in sorted(EXT_AGGREGATORS.items())), _ext_status
            ),
        ),
        "",
        "### Extension stream processors {#ext-stream-processors}",
        "",
        "`from S#namespace:name(...)`: each appends attributes to the events it passes on.",
        "",
        table(
            ["stream processor", "description", "status"],
            [
                [code(f"#{e.full_name}"), cell(e.doc), SUPPORTED]
                for e in sorted(_standard_processors(), key=lambda e: e.full_name)
            ],
        ),
        "",
        "### Refused {#refused}",
        "",
        "A plan that uses one of these is rejected with a positioned error that says why.",
        "",
        table(["name", "status"], refused_rows(ext)),
        "",
    ]
    return "\n".join(out)


def refused_rows(ext: Any) -> list[list[str]]:
    """The refused namespaces and functions of cep.catalog.ext, with the reasons it gives."""
    rows = []
    for ns in sorted(ext.REFUSED):
        if ns == "geo":  # two reasons: the online functions, and the GPL extension's others
            rows.append(
                [
                    code("geo:geocode") + ", " + code("geo:reverseGeocode"),
                    cell("refused: " + (ext.refusal("geo", "geocode") or "")),
                ]
            )
            rows.append(
                [
                    cell("other `geo:` functions and `#geo:` stream processors"),
                    cell("refused: " + (ext.refusal("geo", "within") or "")),
                ]
            )
        else:
            rows.append([code(f"{ns}:*"), cell("refused: " + ext.REFUSED[ns])])
    for name, why in sorted(ext.REMOVED_BUILTINS.items()):
        rows.append([code(name), cell("refused: " + why)])
    return rows


def scripts() -> str:
    from cep.catalog import scripts as script_catalog

    rows = [
        [
            code(script_catalog.JAVASCRIPT),
            cell(
                "supported: an embedded V8, with a time and heap cap per call (settings "
                "`scripts.call_millis`, `scripts.heap_mib`)"
            ),
        ],
        [
            code(script_catalog.PYTHON),
            cell("supported when the setting `scripts.python` is on (off by default)"),
        ],
    ]
    rows += [
        [code(lang), cell("refused: " + why)]
        for lang, why in sorted(script_catalog.REFUSED.items())
    ]
    return "\n".join(
        [
            "## Script functions {#script-functions}",
            "",
            "`define function f[LANGUAGE] return TYPE { body };`, then `f(...)` in queries.",
            "",
            table(["language", "status"], rows),
            "",
            "## Plug-ins {#plug-ins}",
            "",
            "Users add their own functions, aggregators, windows and stream processors as "
            "plug-ins (entry-point group `sparkcep.extensions`, see `cep/plugin.py`). They are "
            "not listed here: `cep extensions` lists the ones installed.",
            "",
        ]
    )


def render() -> str:
    """The SiddhiQL reference page."""
    return "\n".join([INTRO, builtins(), extensions(), scripts()])
