"""Reference pages written from the code at each site build (docs/_hooks/reference_pages.py
adds them to the site): configuration keys from the settings definitions, the command line
from its argparse parsers, SiddhiQL's functions, windows and extensions from cep/catalog,
and the REST API from the OpenAPI document the manager serves.

Each page module gives `render() -> str` (Markdown). Nothing generated is checked in."""

from __future__ import annotations


class DefinitionError(Exception):
    """A definition the reference is written from lacks what the page needs (a setting
    without a description); the site build fails with this message."""
