"""MkDocs hook: the reference pages written from the code at each build (refgen): the
configuration keys from the settings definitions, the command line from its parsers,
SiddhiQL's functions and extensions from the catalog, the REST API from the OpenAPI document
(and that document as reference/openapi.json). They are virtual files: nothing generated is
checked in. A definition the pages cannot be written from (a setting without a description)
fails the build with a message that names it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel

HOOKS = Path(__file__).resolve().parent
ROOT = HOOKS.parents[1]


def on_config(config: Any) -> Any:
    """Import the project from this checkout (not from whichever checkout the environment
    has installed), and refgen from next to this hook (MkDocs restores sys.path after it
    loads a hook, so this is done here)."""
    for folder in (str(HOOKS), str(ROOT)):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    return config


def generated() -> dict[str, Callable[[], str]]:
    """Site path -> the function that writes it."""
    from refgen import catalog_page, cli_page, rest_page, settings_page

    return {
        "reference/cli.md": cli_page.render,
        "reference/rest.md": rest_page.render,
        "reference/openapi.json": rest_page.document_json,
        "reference/configuration.md": settings_page.render,
        "reference/siddhiql.md": catalog_page.render,
    }


def on_files(files: Files, config: Any) -> Files:
    """Add the generated reference pages to the site."""
    from refgen import DefinitionError

    for uri, write in generated().items():
        try:
            content = write()
        except DefinitionError as exc:
            raise PluginError(f"{uri}: {exc}") from None
        files.append(
            File.generated(config, uri, content=content, inclusion=InclusionLevel.INCLUDED)
        )
    return files
