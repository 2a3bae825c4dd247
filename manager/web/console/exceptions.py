"""Errors of the console package, under ConsoleError (a ManagerError, so the REST API answers
them as JSON with their status and the console pages as an HTML error page)."""

from manager.exceptions import ManagerError


class ConsoleError(ManagerError):
    """Root of the console's errors."""


class BadConsoleRequestError(ConsoleError):
    """A try-it or simulate request is malformed (what is wrong is in the message)."""

    status = 400


class NoLiveWorkerError(ConsoleError):
    """No live CEP worker serves the plan, so simulated events have nowhere to go."""

    status = 503


class WorkerRequestError(ConsoleError):
    """The chosen worker could not be reached or refused the events as a whole."""

    status = 502
