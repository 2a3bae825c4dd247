"""Triggers: `define trigger T at 'start' | at every 5 sec | at '<cron>'`.

A trigger is a stream with one attribute, `triggered_time long`. It fires on the runtime's
scheduler, so it follows the wall clock normally and event time in playback (where 'start' is
time 0, before any event). Cron strings are Quartz-style (`sec min hour day-of-month month
day-of-week [year]`, with `*`, `?`, lists, ranges, steps and JAN../SUN.. names) or the 5-field
Unix form (seconds 0); they are evaluated in UTC.
"""

import calendar
from datetime import datetime, timedelta, timezone

from cep.errors import InvalidQueryError

CURRENT = 0
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1
    )
}
_DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}


class TriggerRuntime:
    """Fires a trigger's events into `emit(batch)` on `scheduler` (cep.engine.clock)."""

    def __init__(self, definition, scheduler, emit):
        self.definition = definition
        self.scheduler = scheduler
        self.emit = emit
        self.cron = Cron(definition.cron, definition.span) if definition.cron else None
        if definition.every_millis is not None and definition.every_millis <= 0:
            raise InvalidQueryError(
                f"trigger {definition.id}: the period must be positive, "
                f"got {definition.every_millis} ms",
                definition.span,
            )
        self.stopped = False

    def start(self):
        now = self.scheduler.now()
        d = self.definition
        if d.at_start:
            # a timer due now: it fires once the runtime runs (callbacks attached), before
            # the first event in playback
            self.due = now
            self.scheduler.notify_at(now, self._fire_once)
        elif self.scheduler.playback and self.scheduler.clock is None:
            # playback before any event: time starts with the first event
            self.scheduler.notify_at(0, self._begin)
        else:
            self._begin(now)

    def _begin(self, now):
        d = self.definition
        if d.every_millis:
            self._arm(now + d.every_millis)
        elif self.cron is not None:
            self._arm(self.cron.next_after(now))

    def _arm(self, due):
        self.due = due
        self.scheduler.notify_at(due, self._fire)

    def get_state(self):
        return {"due": getattr(self, "due", None)}  # None before the first event: restart

    def set_state(self, state):
        """Re-arm the next firing (a restored scheduler has no timers)."""
        if state.get("due") is None and not self.definition.at_start:
            self.scheduler.notify_at(0, self._begin)
        elif state.get("due") is not None:
            if self.definition.at_start:
                self.due = state["due"]
                self.scheduler.notify_at(self.due, self._fire_once)
            else:
                self._arm(state["due"])

    def stop(self):
        self.stopped = True

    def _fire_once(self, now):
        if not self.stopped and self.due is not None:
            ts = self.due if self.scheduler.playback else now
            self.due = None
            self.emit([(ts, (ts,), CURRENT)])

    def _fire(self, now):
        """Emit at the due time (a late clock step fires every missed period in order)."""
        if self.stopped:
            return
        ts = self.due if self.scheduler.playback else now
        self.emit([(ts, (ts,), CURRENT)])
        d = self.definition
        self._arm(ts + d.every_millis if d.every_millis else self.cron.next_after(ts))


class Cron:
    """A parsed cron expression; `next_after(ms)` is the next firing time in epoch ms."""

    def __init__(self, text, span=None):
        self.text = text
        fields = text.split()
        if len(fields) == 5:
            fields = ["0"] + fields
        if len(fields) not in (6, 7):
            raise InvalidQueryError(
                f"cron expression '{text}' must have 5, 6 or 7 fields, has {len(fields)}", span
            )
        specs = [
            (0, 59, {}),
            (0, 59, {}),
            (0, 23, {}),
            (1, 31, {}),
            (1, 12, _MONTHS),
            (1, 7, _DAYS),
        ]
        try:
            sets = [_field(f, lo, hi, names) for f, (lo, hi, names) in zip(fields, specs)]
        except ValueError as exc:
            raise InvalidQueryError(f"cron expression '{text}': {exc}", span) from None
        self.seconds, self.minutes, self.hours, self.doms, self.months, self.dows = sets
        self.any_dom = fields[3] in ("*", "?")
        self.any_dow = fields[5] in ("*", "?")

    def _day_ok(self, dt):
        dom_ok = dt.day in self.doms
        dow_ok = (dt.isoweekday() % 7) + 1 in self.dows
        if self.any_dom:
            return dow_ok
        if self.any_dow:
            return dom_ok
        return dom_ok or dow_ok

    def next_after(self, ms):
        dt = datetime.fromtimestamp(ms // 1000, tz=timezone.utc) + timedelta(seconds=1)
        limit = dt + timedelta(days=366 * 5)
        while dt < limit:
            if dt.month not in self.months:
                days = calendar.monthrange(dt.year, dt.month)[1] - dt.day + 1
                dt = (dt + timedelta(days=days)).replace(hour=0, minute=0, second=0)
            elif not self._day_ok(dt):
                dt = (dt + timedelta(days=1)).replace(hour=0, minute=0, second=0)
            elif dt.hour not in self.hours:
                dt = (dt + timedelta(hours=1)).replace(minute=0, second=0)
            elif dt.minute not in self.minutes:
                dt = (dt + timedelta(minutes=1)).replace(second=0)
            elif dt.second not in self.seconds:
                dt = dt + timedelta(seconds=1)
            else:
                return int(dt.timestamp()) * 1000
        raise InvalidQueryError(f"cron expression '{self.text}' never fires")


def _field(text, lo, hi, names):
    out = set()
    for part in text.upper().split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            step = int(step_text)
            if step <= 0:
                raise ValueError(f"step must be positive in '{text}'")
        if part in ("*", "?", ""):
            a, b = lo, hi
        elif "-" in part:
            a, b = (_value(x, names) for x in part.split("-", 1))
        else:
            a = _value(part, names)
            b = hi if step > 1 else a
        if not (lo <= a <= hi and lo <= b <= hi and a <= b):
            raise ValueError(f"'{text}' is outside {lo}-{hi}")
        out.update(range(a, b + 1, step))
    return frozenset(out)


def _value(text, names):
    if text in names:
        return names[text]
    if not text.isdigit():
        raise ValueError(f"'{text}' is not a number")
    return int(text)


def build_trigger(definition, ctx):
    """Runtime entry point: a trigger feeding its stream junction, started at once."""
    junction = ctx.junctions[definition.id]
    trig = TriggerRuntime(definition, ctx.scheduler, junction.process)
    ctx.register(f"trigger:{definition.id}", trig)
    trig.start()
    return trig
