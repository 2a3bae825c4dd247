"""The partitioned-pattern kernel over a whole batch in numpy (columnar batches, and big row
batches turned into columns once):

    partition with (k of S) begin
      from every e1=S[c1] -> e2=S[e2.k == e1.k and e2.v OP f(e1)] [within T] select ... ; end;

In this shape each waiting partial is independent of the others: partial i (an e1 with
threshold f(e1)) completes at the first later event j of its key whose value satisfies
`v_j OP thr_i`, provided `ts_i >= ts_j - T`; when that first event is too late, no later one
can do better while time does not go back, and the partial waits unmatched until `within`
drops it (a later event with an earlier timestamp could: a batch whose timestamps go back
takes the row loop). So a batch is: group its events by key (a stable argsort of key
codes), and for every partial (those carried over from earlier batches and the batch's own) find its first
satisfying event in its key's segment by binary lifting over a sparse table of segment
maxima (fmax/fmin, so NaN and null values, stored as NaN, never satisfy). Matches leave
sorted by (event, filing sequence), the row kernel's order; unmatched partials are carried.

The filing sequence, `filed` timestamps and `popped` cut are kept exactly as the row kernel
keeps them (kernel.py), and the state converts both ways (`to_rows` / `from_rows`), so row
and columnar batches may alternate and a snapshot is the row kernel's.

Exact only where numpy computes what the row code computes: thresholds and values of
double/float type (compared as float64, as Python compares the row values), partition keys
of string/int/long/bool type, filters and projections `cep.engine.columnar.exprs` compiles
(each output expression reads only e1 or only e2). Any other query keeps the row loop."""

from itertools import repeat

import numpy as np

from cep.engine.columnar.columns import DTYPES, Columns, concat
from cep.engine.columnar.exprs import Unsupported, _truth, compile_vec
from cep.model import AttrType

_REDUCE = {">": np.fmax, ">=": np.fmax, "<": np.fmin, "<=": np.fmin}
_CMP = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal}
_FLOATS = (AttrType.DOUBLE, AttrType.FLOAT)
_KEYS = (AttrType.STRING, AttrType.INT, AttrType.LONG, AttrType.BOOL)


def first_matches(vals, lo, hi, thr, op):
    """For each query q, the first index x in [lo[q], hi[q]) with `vals[x] OP thr[q]`, or
    hi[q] when none: binary lifting over a sparse table of block maxima (minima for < <=)."""
    reduce, cmp = _REDUCE[op], _CMP[op]
    span = int((hi - lo).max()) if len(lo) else 0
    levels, step = [vals], 1
    while step * 2 <= span and len(levels[-1]) > step:
        prev = levels[-1]
        levels.append(reduce(prev[:-step], prev[step:]))
        step *= 2
    pos = lo.copy()
    for k in range(len(levels) - 1, -1, -1):
        lev, step = levels[k], 1 << k
        inside = pos + step <= hi
        block = lev[np.minimum(pos, len(lev) - 1)]
        pos += step * (inside & ~cmp(block, thr))
    found = pos < hi
    found &= cmp(vals[np.minimum(pos, len(vals) - 1)], thr)
    return np.where(found, pos, hi)


class _SideScope:
    """Attributes of the pattern's stream as one side (e1 or e2) refers to them."""

    def __init__(self, definition, refs):
        self.definition, self.refs = definition, refs

    def resolve(self, v):
        if v.index is not None or v.inner or v.stream not in self.refs:
            raise Unsupported(f"{v.stream}.{v.name}")
        i = self.definition.index_of(v.name)
        if i < 0:
            raise Unsupported(v.name)
        return f"r[{i}]", self.definition.attributes[i].type


def build_vector(model, definition, key_expr, select, out_def, within, count_null):
    """A VectorPattern for a kernel's model parts, or None when a part has no exact
    columnar form. `model`: the kernel's {'nodes', 'cond_a', 'range', 'rest', 'pairs',
    'collapse'}; `key_expr`: the partition key over the stream, None outside a partition
    (then the one equality key); `select`: the select clause's (name,
    expression) items; `count_null`: a null threshold still takes a filing sequence number
    (kernel.py's rule without an equality key)."""
    a, b = model["nodes"]
    if model["range"] is None or model["rest"] or a.alias is None or a.alias == b.alias:
        return None
    if not model["collapse"] or key_expr is None and len(model["pairs"]) != 1:
        return None
    start = _SideScope(definition, {None, a.alias})
    e1 = _SideScope(definition, {a.alias})
    own = _SideScope(definition, {None, b.alias or b.stream_id})
    e2 = _SideScope(definition, {b.alias or b.stream_id})
    try:
        if key_expr is not None:
            key = compile_vec(key_expr, _SideScope(definition, {None, definition.id}))
        else:  # outside a partition: the one equality key
            key = compile_vec(model["pairs"][0][0], own)
        cond = None if model["cond_a"] is None else _truth(compile_vec(model["cond_a"], start))
        op, value, thr = model["range"]
        value, thr = compile_vec(value, own), compile_vec(thr, e1)
        outs = [_side_vec(e, e1, e2) for _, e in select]
    except Unsupported:
        return None
    if key.type not in _KEYS or key.literal or value.type not in _FLOATS or thr.type not in _FLOATS:
        return None
    if [o[1].type for o in outs] != [x.type for x in out_def.attributes]:
        return None
    return VectorPattern(
        definition, key.fn, cond, op, value.fn, thr.fn, outs, out_def, within, count_null
    )


def _side_vec(expr, e1, e2):
    """(0 for e1 / 1 for e2, Vec) of an output expression that reads one side only."""
    for side, scope in ((0, e1), (1, e2)):
        try:
            return side, compile_vec(expr, scope)
        except Unsupported:
            continue
    raise Unsupported("an output expression reads both sides")


def _full(vec_out, n, dtype):
    """A Vec's (values, nulls) as an n-long array of dtype (a literal broadcast)."""
    v, m = vec_out
    v = np.asarray(v, dtype)
    if v.ndim == 0:
        v = np.full(n, v, dtype)
    return v, m


class Pending:
    """Waiting partials in columns: key code, threshold, filing seq, start ts, start row."""

    def __init__(self, definition, code=(), thr=(), seq=(), ts=(), events=()):
        self.code = np.asarray(code, np.int64)
        self.thr = np.asarray(thr, np.float64)
        self.seq = np.asarray(seq, np.int64)
        self.ts = np.asarray(ts, np.int64)
        self.rows = Columns.from_events(definition, list(events))

    def __len__(self):
        return len(self.code)

    def keep(self, index, code, thr, seq, ts, rows):
        self.code, self.thr, self.seq, self.ts = code[index], thr[index], seq[index], ts[index]
        self.rows = rows.take(index)


class VectorPattern:
    """The columnar form of one PatternKernel (see the module docstring). `run(kernel,
    cols)` gives the batch's output Columns or None. While `pend` is None the row
    kernel holds the state; `from_rows`/`to_rows` hand it over."""

    def __init__(self, definition, key, cond, op, value, thr, outs, out_def, within, count_null):
        self.definition, self.key, self.cond, self.op = definition, key, cond, op
        self.value, self.thr, self.outs, self.out_def = value, thr, outs, out_def
        self.within, self.count_null = within, count_null
        self.table, self.keys = {}, []  # key value <-> code
        self.pend, self.filed = None, None

    # -- state handover --------------------------------------------------------------------
    def from_rows(self, k):
        """Take the row kernel's waiting partials (its buckets empty until `to_rows`)."""
        k._sweep()
        entries = [(key, e) for key, b in k.buckets.items() for e in b]
        self.table, self.keys = {}, []
        code = [self._code(key) for key, _ in entries]
        self.pend = Pending(
            self.definition,
            code,
            [e[0] for _, e in entries],
            [e[1] for _, e in entries],
            [e[2] for _, e in entries],
            [(e[2], e[3]) for _, e in entries],
        )
        self.filed = np.array(k.filed, np.int64)
        k.buckets, k.filed = {}, []

    def to_rows(self, k):
        """Give the waiting partials back as the row kernel's buckets, sorted by threshold
        then filing sequence as its insort keeps them."""
        p = self.pend
        order = np.lexsort((p.seq, p.thr, p.code))
        entries = zip(
            p.thr[order].tolist(),
            p.seq[order].tolist(),
            p.ts[order].tolist(),
            p.rows.take(order).rows(),
        )
        buckets, keys = {}, self.keys
        for c, e in zip(p.code[order].tolist(), entries):
            b = buckets.get(keys[c])
            if b is None:
                buckets[keys[c]] = [e]
            else:
                b.append(e)
        k.buckets = buckets
        k.filed = self.filed.tolist()
        k.swept = k.popped
        self.pend = self.filed = None

    def _code(self, key):
        c = self.table.get(key)
        if c is None:
            c = self.table[key] = len(self.keys)
            self.keys.append(key)
        return c

    def _compact(self):
        """Forget the codes of keys no partial waits for (the table only grows otherwise)."""
        p = self.pend
        used = np.unique(p.code)
        remap = np.full(len(self.keys), -1, np.int64)
        remap[used] = np.arange(len(used))
        self.keys = [self.keys[c] for c in used.tolist()]
        self.table = {key: i for i, key in enumerate(self.keys)}
        p.code = remap[p.code]

    # -- a batch ---------------------------------------------------------------------------
    def accepts(self, cols):
        """False for a batch whose timestamps go back under `within` (the row loop's)."""
        ts = cols.timestamps
        return self.within is None or len(ts) < 2 or not bool((ts[1:] < ts[:-1]).any())

    def run(self, k, cols):
        """The batch's output Columns (None: no match); the batch must be `accepts`ed."""
        ts = cols.timestamps
        n = len(ts)
        if self.pend is None:
            self.from_rows(k)
        with np.errstate(all="ignore"):
            return self._batch(k, cols, ts, n)

    def _codes(self, cols):
        """Each event's key code (-1: null key): a dict lookup in C for known keys, new keys
        (and nulls) looked at one by one."""
        kv, km = self.key(cols)
        if kv.dtype.kind == "O":
            values = kv
        else:
            values = kv.tolist()
        codes = np.fromiter(map(self.table.get, values, repeat(-1)), np.int64, len(kv))
        miss = np.flatnonzero(codes < 0)
        if len(miss):
            for i in miss.tolist():
                if values[i] is not None:
                    codes[i] = self._code(values[i])
        if km is not None:
            codes[km] = -1
        return codes

    def _starts(self, k, cols, codes, n):
        """(indexes of the batch's new waiting partials, their thresholds, their seqs,
        filing mask)."""
        start = codes >= 0
        if self.cond is not None:
            c = np.asarray(self.cond(cols), bool)
            start = start & (c if c.ndim else np.full(n, bool(c)))
        thr, tm = _full(self.thr(cols), n, np.float64)
        good = start & (thr == thr)
        if tm is not None:
            good &= ~tm
        filing = start if self.count_null and self.within is not None else good
        fseq = k.seq + np.cumsum(filing)
        if n:
            k.seq = int(fseq[-1])
        bi = np.flatnonzero(good)
        return bi, thr[bi], fseq[bi], filing

    def _batch(self, k, cols, ts, n):
        codes = self._codes(cols)
        bi, bthr, bseq, filing = self._starts(k, cols, codes, n)
        vals, vm = _full(self.value(cols), n, np.float64)
        ok = codes >= 0 if vm is None else (codes >= 0) & ~vm
        vals = np.where(ok, vals, np.nan)
        order = np.argsort(codes, kind="stable")
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        # each key's segment [start, end) of the sorted batch (code -1, null keys, first)
        ends = np.cumsum(np.bincount(codes + 1, minlength=len(self.keys) + 1))
        starts = np.concatenate(([0], ends[:-1]))
        p = self.pend
        q_code = np.concatenate((p.code, codes[bi]))
        q_lo = np.concatenate((starts[p.code + 1], rank[bi] + 1))
        q_hi = ends[q_code + 1]
        q_thr = np.concatenate((p.thr, bthr))
        q_ts = np.concatenate((p.ts, ts[bi]))
        q_seq = np.concatenate((p.seq, bseq))
        qa, j = self._matches(vals[order], order, q_lo, q_hi, q_thr, q_ts, ts)
        rows = concat(self.definition, [p.rows, cols])
        q_src = np.concatenate((np.arange(len(p)), len(p) + bi))
        out = self._output(rows, cols, q_src, q_seq, qa, j, ts)
        keep = np.ones(len(q_code), bool)
        keep[qa] = False
        if self.within is not None:
            keep &= self._expire(k, ts, filing, q_seq)
        p.keep(np.flatnonzero(keep), q_code, q_thr, q_seq, q_ts, rows.take(q_src))
        if len(self.keys) > 2 * len(p) + 4096:
            self._compact()
        return out

    def _matches(self, sv, order, q_lo, q_hi, q_thr, q_ts, ts):
        """(partials that complete, the batch index of the event completing each)."""
        act = np.flatnonzero(q_hi > q_lo)
        if not len(act):
            return act, act
        hi = q_hi[act]
        pos = first_matches(sv, q_lo[act], hi, q_thr[act], self.op)
        hit = pos < hi
        qa, j = act[hit], order[pos[hit]]
        if self.within is not None:
            live = q_ts[qa] >= ts[j] - self.within
            qa, j = qa[live], j[live]
        return qa, j

    def _output(self, rows, cols, q_src, q_seq, qa, j, ts):
        if not len(qa):
            return None
        srt = np.lexsort((q_seq[qa], j))
        qa, j = qa[srt], j[srt]
        sides = (rows.take(q_src[qa]), cols.take(j))
        values, nulls = [], []
        for (side, vec), a in zip(self.outs, self.out_def.attributes):
            v, m = _full(vec.fn(sides[side]), len(j), DTYPES[a.type])
            values.append(v)
            nulls.append(m if m is not None and m.any() else None)
        return Columns(self.out_def, ts[j], values, nulls)

    def _expire(self, k, ts, filing, q_seq):
        """The row kernel's batch-end cut in filing order; -> mask of partials still live."""
        filed = np.concatenate((self.filed, ts[filing]))
        ge = filed >= int(ts[-1]) - self.within
        cut = int(ge.argmax()) if ge.any() else len(filed)
        if cut:
            filed = filed[cut:]
            k.popped += cut
        self.filed = filed
        return q_seq > k.popped
