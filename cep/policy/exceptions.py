"""Errors of the host policy, under one root type: PolicyError."""

from cep.errors import CepError, SiddhiQLError


class PolicyError(CepError):
    """Root of every error raised by the host policy."""


class PolicyViolation(PolicyError):
    """A file path, URL or connection reaches outside what the host policy allows."""


class PlanPolicyError(SiddhiQLError, PolicyError):
    """A plan breaks the host policy; positioned at the annotation or window that does."""


class PlanLimitError(PlanPolicyError):
    """A plan exceeds a configured limit (size, query count, window length or time)."""
