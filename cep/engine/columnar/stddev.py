"""stddev without group by for the sliding kernel (sliding.py): Siddhi 3.2's incremental
update, vectorised exactly.

The row loop keeps (count, sum, mean, m2): an arrival adds (count 1: sum = mean = v, m2 =
0.0), a removal subtracts (count 0: all back to 0), otherwise `om = mean; sum += v; mean =
sum / count; m2 += (v - om) * (v - mean)` (minus for a removal). The running sum is a
sequential sum restarted at each count of 1, so `np.add.accumulate` over segments gives the
same doubles (segscan.py); each mean is then that sum over the count, each m2 step a product
of differences with the previous mean, and m2 another segmented sequential sum. Nulls, a
count that would go below 0, or `@Plan:siddhi('fixed')`'s square root make the kernel
decline (the row loop runs the batch)."""

from typing import Any, Optional

import numpy as np

from cep.catalog.aggregator_entry import _jsqrt
from cep.engine.columnar import segscan


class Stddevs:
    """The stddev slots of an ungrouped sliding kernel: `{first slot: attribute}`."""

    def __init__(self, slots: dict[int, int], sqrt: Any) -> None:
        self.slots = slots
        self.exact = sqrt is _jsqrt  # Java's Math.sqrt (NaN below 0), as np.sqrt

    def run(self, state: Any, data: Any, src: Any, is_arr: Any) -> Optional[dict[int, Any]]:
        """Per first slot: (the value after each operation, the final 4 slots), or None."""
        if not self.exact:
            return None
        out = {}
        for slot, i in self.slots.items():
            res = self._one(state[slot : slot + 4], data[i], src, is_arr)
            if res is None:
                return None
            out[slot] = res
        return out

    @staticmethod
    def _one(st: list[Any], col: Any, src: Any, is_arr: Any) -> Optional[tuple[Any, list[Any]]]:
        values, nulls = col
        if nulls is not None:
            return None
        n0, sum0, mean0, m20 = st
        if not (type(n0) is int and all(type(x) is float for x in (sum0, mean0, m20))):
            return None
        nops = len(src)
        if not nops:
            return np.empty(0), list(st)
        v = values[src].astype(np.float64)
        sign = np.where(is_arr, 1, -1)
        n = n0 + np.cumsum(sign)
        if bool((n < 0).any()):
            return None
        start = (is_arr & (n == 1)) | (~is_arr & (n == 0))  # the row loop's two resets
        seg = np.cumsum(start)  # segment 0: from the state
        ng = int(seg[-1]) + 1
        lay = segscan.layout(seg, ng, 8 * nops + 4096)
        if lay is None:
            return None
        with np.errstate(all="ignore"):
            # sums: a reset op's value is v (arrival) or 0.0 (removal), from -0.0
            add = np.where(is_arr, v, -v)
            add = np.where(start, np.where(is_arr, v, 0.0), add)
            inits = [sum0] + [-0.0] * (ng - 1)
            sums, _ = segscan.scan(lay, inits, add, -0.0, np.float64)
            nf = n.astype(np.float64)
            mean = np.where(start & ~is_arr, 0.0, sums / np.where(n == 0, 1.0, nf))
            om = np.concatenate([[mean0], mean[:-1]])
            step = (v - om) * (v - mean)
            step = np.where(is_arr, step, -step)
            step = np.where(start, 0.0, step)
            inits = [m20] + [-0.0] * (ng - 1)
            m2, _ = segscan.scan(lay, inits, step, -0.0, np.float64)
            value = np.where(n >= 2, np.sqrt(m2 / np.where(n >= 2, nf, 1.0)), 0.0)
        final = [int(n[-1]), float(sums[-1]), float(mean[-1]), float(m2[-1])]
        return value, final

    @staticmethod
    def store(state: Any, finals: dict[int, list[Any]]) -> None:
        for slot, vals in finals.items():
            state[slot : slot + 4] = vals
