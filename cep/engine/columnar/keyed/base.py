"""What every keyed kernel shares: the KeyedKernel interface, the checks of a query's
output, and the columnar batch view the expression compiler reads."""

from collections.abc import Mapping

import numpy as np

from cep.engine.columnar.columns import DTYPES
from cep.model import InsertInto
from cep.model.definitions import TableDefinition


CHUNK = 1 << 19  # events per chunk of keys a kernel runs at once


class Unsuited(Exception):
    """The query (or a part of it) has no exact keyed kernel: the engine runs it."""


class KeyedKernel:
    """A query's kernel over a partition's events of `input_stream` (see the package doc).

    input_stream: the one stream it reads; output_stream: the stream it inserts into;
    output_attributes: [(name, AttrType)] in select order."""

    input_stream = None
    output_stream = None
    output_attributes = ()

    def run(self, ts, starts, cols, end_ts):
        """-> (out_ts int64, {name: array}, out_key intp) in key order and, within a key, in
        the engine's order; or None to decline the batch (the caller runs the engine).
        Keys are independent: a long batch goes in chunks of whole keys of about CHUNK
        events (the arrays then stay in cache and the peak memory is a chunk's)."""
        n = len(ts)
        if n <= CHUNK:
            return self._chunk(ts, starts, cols, end_ts)
        cuts = np.unique(np.searchsorted(starts, np.arange(CHUNK, n, CHUNK), "left"))
        bounds = [0, *cuts[(cuts > 0) & (cuts < len(starts) - 1)].tolist(), len(starts) - 1]
        parts = []
        for a, b in zip(bounds, bounds[1:]):
            lo, hi = int(starts[a]), int(starts[b])
            res = self._chunk(ts[lo:hi], starts[a : b + 1] - lo, _Slice(cols, lo, hi), end_ts)
            if res is None:
                return None
            parts.append(res)
            res[2][:] += a
        names = [name for name, _ in self.output_attributes]
        return (
            np.concatenate([p[0] for p in parts]),
            {k: np.concatenate([p[1][k] for p in parts]) for k in names},
            np.concatenate([p[2] for p in parts]),
        )

    def _chunk(self, ts, starts, cols, end_ts):
        try:
            return self.run_chunk(ts, starts, cols, end_ts)
        except Unsuited:  # a column missing or of another dtype
            return None

    def run_chunk(self, ts, starts, cols, end_ts):
        """`run` over one chunk of whole keys (Unsuited: declined)."""
        raise NotImplementedError


class _Slice(Mapping):
    """Rows lo:hi of the caller's columns, sliced when a kernel reads one (the caller's
    mapping may convert its columns lazily: those no kernel reads are never converted)."""

    def __init__(self, cols, lo, hi):
        self.cols, self.lo, self.hi = cols, lo, hi

    def __getitem__(self, name):
        return self.cols[name][self.lo : self.hi]

    def __iter__(self):
        return iter(self.cols)

    def __len__(self):
        return len(self.cols)


class Batch:
    """Columns as cep.engine.columnar.exprs reads them: `values[i]`, `nulls[i]`, len."""

    __slots__ = ("values", "nulls", "n")

    def __init__(self, values, n):
        self.values, self.nulls, self.n = values, [None] * len(values), n

    def __len__(self):
        return self.n


def batch_of(definition, cols, n, take=None):
    """A Batch of `definition`'s attributes from the caller's `cols` (name -> array), the
    rows `take` (an index array) or all. A column is fetched when an expression first reads
    it; a missing one or one of another dtype than its attribute's raises Unsuited then."""
    b = Batch([], n if take is None else len(take))
    b.values, b.nulls = _Columns(definition, cols, take), NO_NULLS
    return b


class _NoNulls:
    """nulls[i] of a Batch: no column has nulls (the caller sees to it)."""

    def __getitem__(self, i):
        return None


NO_NULLS = _NoNulls()


class _Columns:
    """values[i] of a Batch: attribute i's column, fetched and checked on first use."""

    def __init__(self, definition, cols, take):
        self.attrs, self.cols, self.take = definition.attributes, cols, take
        self.done = {}

    def __len__(self):
        return len(self.attrs)

    def __getitem__(self, i):
        v = self.done.get(i)
        if v is None:
            a = self.attrs[i]
            try:
                v = self.cols[a.name]
            except KeyError:
                raise Unsuited(f"no column '{a.name}'") from None
            want = DTYPES[a.type]
            if v.dtype != want and not (want.kind == "O" and v.dtype.kind in "OU"):
                raise Unsuited(f"column '{a.name}' is {v.dtype}, not {want}")
            v = self.done[i] = v if self.take is None else v[self.take]
        return v


def check_output(query, definitions, names, types):
    """(output stream id, [(name, type)]) when the query inserts current events into a
    stream of `definitions` with exactly these attributes; else Unsuited."""
    out = query.output
    if not isinstance(out, InsertInto) or out.inner or out.event_type != "current":
        raise Unsuited("not `insert into` current events")
    if query.rate is not None:
        raise Unsuited("output rate limiting")
    attrs = list(zip(names, types))
    known = definitions.get(out.target)
    if known is None or isinstance(known, TableDefinition):
        raise Unsuited(f"'{out.target}' is not a stream of the plan (a table?)")
    if [(a.name, a.type) for a in known.attributes] != attrs:
        raise Unsuited(f"'{out.target}' is defined with other attributes")
    return out.target, attrs


def key_of_rows(starts, n):
    """The key run index of each of n rows."""
    return np.repeat(np.arange(len(starts) - 1), np.diff(starts)).astype(np.intp, copy=False)


def empty_result(attrs):
    return (
        np.empty(0, np.int64),
        {name: np.empty(0, DTYPES[t]) for name, t in attrs},
        np.empty(0, np.intp),
    )


class _OutputScope:
    """`having` reads the output row's attributes by name, as `r[i]` of the output batch."""

    def __init__(self, attrs):
        self.attrs = attrs

    def resolve(self, variable):
        for i, (name, t) in enumerate(self.attrs):
            if name == variable.name:
                return f"r[{i}]", t
        raise Unsuited(f"having reads '{variable.name}', not an output attribute")


def compile_having(having, attrs):
    """A row mask function of a `having` over the output attributes (None for no having);
    Unsuited when it calls an aggregator or reads something else."""
    if having is None:
        return None
    from cep.engine.columnar.exprs import _truth, compile_vec
    from cep.engine.selector import has_aggregators
    from cep.model import OutputAttribute, Selector

    if has_aggregators(Selector(attributes=(OutputAttribute("h", having),))):
        raise Unsuited("having calls an aggregator")
    return _truth(compile_vec(having, _OutputScope(attrs)))


def apply_having(keep, attrs, ts, out, key):
    """(ts, out, key) without the rows `keep` (a compiled having) rejects."""
    if keep is None:
        return ts, out, key
    b = Batch([out[name] for name, _ in attrs], len(ts))
    b.nulls = NO_NULLS
    mask = np.broadcast_to(keep(b), (len(ts),))
    if mask.all():
        return ts, out, key
    rows = np.flatnonzero(mask)
    return ts[rows], {k: v[rows] for k, v in out.items()}, key[rows]
