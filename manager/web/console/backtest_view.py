"""The plan page's Backtest block: which streams take a dataset.

The block itself is `templates/console/plan_backtest.html` and `static/console/backtest.js`;
it runs backtests through the REST API (api_backtest.py) with the session's CSRF token."""

import cep
from cep.model.queries import InsertInto, Partition


def input_streams(text):
    """Ids of the plan's defined streams that no query inserts into (the backtest's inputs);
    [] when the stored text does not compile."""
    try:
        plan = cep.compile(text)
    except Exception:  # a stored plan that no longer compiles: the block says so
        return []
    targets = set()
    for element in plan.elements:
        queries = element.queries if isinstance(element, Partition) else (element,)
        targets.update(q.output.target for q in queries if isinstance(q.output, InsertInto))
    return [s.id for s in plan.streams if s.id not in plan.inferred_streams and s.id not in targets]
