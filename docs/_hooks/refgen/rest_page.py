"""The REST reference: the OpenAPI document the manager serves at /api/v1/openapi.json
(manager/web/openapi.yaml, read by manager.web.api_docs), linked as a file of the site and
rendered as a table of its paths."""

from __future__ import annotations

import json
from typing import Any

from refgen.markdown import cell, code, lines, table, text

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
DOCUMENT = "openapi.json"  # the site's copy, next to this page

INTRO = """# REST API

The manager serves its API under `/api/v1` and describes it in an OpenAPI 3 document at
`GET /api/v1/openapi.json`; the same document is here as [{document}]({document}), and this
page lists its paths (written from it at each build of the site). {description}

Credentials: {security}. Every route takes any of them unless its row says otherwise.
"""


def document() -> dict[str, Any]:
    """The OpenAPI document, as the manager serves it."""
    from manager.web.api_docs import openapi_document

    doc: dict[str, Any] = openapi_document()
    return doc


def document_json() -> str:
    return json.dumps(document(), indent=2, sort_keys=False) + "\n"


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path, operation) for every operation, in the document's order."""
    return [
        (method.upper(), path, op)
        for path, item in doc.get("paths", {}).items()
        for method, op in item.items()
        if method in METHODS
    ]


def _route(method: str, path: str) -> str:
    """`GET /api/v1/x/{y}`, which may break after a slash."""
    return f"<code>{text(method)} {text(path).replace('/', '/<wbr>')}</code>"


def _security(op: dict[str, Any]) -> str:
    """Nothing for a route that takes the document's credentials, else which it takes."""
    if "security" not in op:
        return ""
    names = sorted({name for requirement in op["security"] for name in requirement})
    return "<br>credentials: " + (", ".join(code(n) for n in names) if names else "none")


def _response(response: dict[str, Any]) -> str:
    if "$ref" in response:  # a shared response: its name says enough (`Error`)
        return "an " + code(str(response["$ref"]).rsplit("/", 1)[-1]) + " object"
    return cell(str(response.get("description", "")))


def _responses(op: dict[str, Any]) -> str:
    return lines(
        f"{code(str(status))} {_response(r)}"
        for status, r in sorted(op.get("responses", {}).items())
    )


def render() -> str:
    """The REST reference page."""
    doc = document()
    schemes = doc.get("components", {}).get("securitySchemes", {})
    security = (
        "; ".join(
            f"{code(name)} ({cell(s.get('description', s.get('type', '')))})"
            for name, s in schemes.items()
        )
        or "none"
    )
    out = [
        INTRO.format(
            document=DOCUMENT,
            security=security,
            description=cell(str(doc["info"].get("description", ""))),
        ),
        table(
            ["route", "what", "responses"],
            [
                [_route(method, path), cell(op.get("summary", "")) + _security(op), _responses(op)]
                for method, path, op in operations(doc)
            ],
            names=False,
        ),
        "",
    ]
    return "\n".join(out)
