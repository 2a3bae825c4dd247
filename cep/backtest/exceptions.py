"""The errors of `cep backtest`: each says what is wrong, where (file, column) and why."""

from cep.errors import CepError


class BacktestError(CepError):
    """A backtest that cannot run or did not finish (nothing is left in the output directory)."""


class InputError(BacktestError):
    """A dataset that does not fit its stream: missing column, wrong type, nulls, bad file."""


class SpecError(BacktestError):
    """A bad `--input STREAM=PATH`, format or output directory."""
