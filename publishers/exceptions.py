"""Errors of the publishers package, under one root type."""


class PublisherError(Exception):
    """Root of every error raised by the publishers package."""


class SinkConfigError(PublisherError):
    """A `@sink(...)` annotation or sink setting is missing a key or has a bad value."""


class SinkWriteError(PublisherError):
    """A sink could not write a batch (file, HTTP endpoint, Redis or socket failed)."""


class UnknownOutputStreamError(PublisherError):
    """A batch names a stream the publisher service does not serve."""


class SinkHeldError(SinkWriteError):
    """A sink could not write a batch now but holds it and writes it later (an rdbms sink
    while its database is down): counted as held, not as lost."""
