"""Mapping errors: a bad `@map` (at build time) and a payload a mapper cannot read."""


class MappingConfigError(ValueError):
    """A `@map(...)` that cannot be built: unknown type, option or attribute, bad path or
    template. The message names the map type and what is wrong."""


class PayloadError(ValueError):
    """One payload (or one event inside it) a mapper cannot read; the reason is the message."""
