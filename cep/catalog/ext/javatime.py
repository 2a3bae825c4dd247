"""Java's date handling as Siddhi's time extension uses it, in UTC with the en-US locale:
commons-lang3 FastDateFormat (parse and print SimpleDateFormat patterns) over a lenient
GregorianCalendar (a field set twice keeps its last value, the most recently set day field
decides the date, out-of-range values roll over), Calendar.add, and WEEK_OF_YEAR by locale."""

import datetime as _dt
import re
import time as _time
from typing import Dict, List, Tuple

DAY_MS = 86400000
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
# locale -> (first day of week, 1 = Sunday; minimal days in the first week)
WEEK_RULES = {
    "en": (1, 1),
    "en_US": (1, 1),
    "fr_FR": (2, 4),
    "fr": (2, 4),
    "de_DE": (2, 4),
    "en_GB": (2, 4),
    "de": (2, 4),
}
_EPOCH_ORD = _dt.date(1970, 1, 1).toordinal()


class DateParseError(ValueError):
    """The text does not match the format (Java's ParseException)."""


def tokenize(pattern: str) -> List[Tuple[str, int]]:
    """SimpleDateFormat tokens: (letter, count) for a field, ('', text) for literal text."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            j, text = i + 1, []
            if pattern[j : j + 1] == "'":
                out.append(("", "'"))
                i += 2
                continue
            while j < n:
                if pattern[j] == "'":
                    if pattern[j + 1 : j + 2] == "'":
                        text.append("'")
                        j += 2
                        continue
                    break
                text.append(pattern[j])
                j += 1
            if j >= n:
                raise ValueError(f"unterminated quote in the date format {pattern!r}")
            out.append(("", "".join(text)))
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            if c not in "GyYMLwWDdFEuaHkKhmsSzZX":
                raise ValueError(f"illegal pattern character '{c}' in {pattern!r}")
            out.append((c, j - i))
            i = j
        else:
            j = i
            while (
                j < n and pattern[j] != "'" and not (pattern[j].isascii() and pattern[j].isalpha())
            ):
                j += 1
            out.append(("", pattern[i:j]))
            i = j
    return out


_token_cache: Dict[str, list] = {}


def _tokens(pattern):
    t = _token_cache.get(pattern)
    if t is None:
        t = _token_cache[pattern] = tokenize(pattern)
    return t


# -- calendar arithmetic (proleptic Gregorian, UTC) --
def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of y-m-d, with m (1-based) and d allowed to overflow."""
    y += (m - 1) // 12
    m = (m - 1) % 12 + 1
    y400, y_rest = divmod(y - 1, 400)  # datetime covers years 1..9999: shift by 400-year eras
    base = _dt.date(y_rest + 1, m, 1).toordinal() + y400 * 146097
    return base - _EPOCH_ORD + d - 1


def civil(ms: int):
    """(year, month 1-12, day, hour, minute, second, milli, weekday Sun=1, day of year)."""
    days, rest = divmod(ms, DAY_MS)
    era, d400 = divmod(days + _EPOCH_ORD - 1, 146097)
    date = _dt.date.fromordinal(d400 + 1)
    year = date.year + era * 400
    hour, rest = divmod(rest, 3600000)
    minute, rest = divmod(rest, 60000)
    second, milli = divmod(rest, 1000)
    dow = (date.isoweekday() % 7) + 1
    doy = date.timetuple().tm_yday
    return year, date.month, date.day, hour, minute, second, milli, dow, doy


def week_of_year(ms: int, locale: str = "en_US") -> int:
    """Calendar.get(WEEK_OF_YEAR) for the locale's first day of week and minimal days."""
    first, minimal = WEEK_RULES.get(locale, WEEK_RULES.get(locale.split("_")[0], (1, 1)))
    y, m, d, *_ = civil(ms)
    day = days_from_civil(y, m, d)

    def week1_start(year):
        jan1 = days_from_civil(year, 1, 1)
        dow = civil(jan1 * DAY_MS)[7]
        rel = (dow - first) % 7
        start = jan1 - rel
        return start if 7 - rel >= minimal else start + 7

    start = week1_start(y)
    if day < start:
        start = week1_start(y - 1)
    elif day >= week1_start(y + 1):
        return 1
    return (day - start) // 7 + 1


def week_of_month(ms: int, first: int = 1, minimal: int = 1) -> int:
    y, m, d, *_ = civil(ms)
    first_day = days_from_civil(y, m, 1)
    dow = civil(first_day * DAY_MS)[7]
    rel = (dow - first) % 7
    start = first_day - rel if 7 - rel >= minimal else first_day - rel + 7
    return (days_from_civil(y, m, d) - start) // 7 + 1


def add(ms: int, unit: str, amount: int) -> int:
    """Calendar.add(field, amount) in UTC: months and years keep the day, clamped to the
    month's length; the other units add their length."""
    if unit in ("YEAR", "MONTH", "QUARTER"):
        months = amount * {"YEAR": 12, "MONTH": 1, "QUARTER": 3}[unit]
        y, m, d, hh, mi, ss, milli, *_ = civil(ms)
        total = y * 12 + (m - 1) + months
        ny, nm = divmod(total, 12)
        last = days_from_civil(ny, nm + 2, 1) - days_from_civil(ny, nm + 1, 1)
        day = days_from_civil(ny, nm + 1, min(d, last))
        return day * DAY_MS + ((hh * 60 + mi) * 60 + ss) * 1000 + milli
    step = {
        "WEEK": 7 * DAY_MS,
        "DAY": DAY_MS,
        "HOUR": 3600000,
        "MINUTE": 60000,
        "SECOND": 1000,
        "MILLISECOND": 1,
    }.get(unit)
    if step is None:
        raise ValueError(f"unknown unit {unit}")
    return ms + amount * step


# -- printing (FastDatePrinter) --
def format_ms(ms: int, pattern: str) -> str:
    y, mo, d, hh, mi, ss, milli, dow, doy = civil(ms)
    out = []
    for letter, count in _tokens(pattern):
        if not letter:
            out.append(count)
            continue
        if letter == "G":
            out.append("AD" if y > 0 else "BC")
        elif letter in "yY":
            year = y if y > 0 else 1 - y
            out.append(f"{year % 100:02d}" if count == 2 else f"{year:0{count}d}")
        elif letter in "ML":
            if count >= 4:
                out.append(MONTHS[mo - 1])
            elif count == 3:
                out.append(MONTHS[mo - 1][:3])
            else:
                out.append(f"{mo:0{count}d}")
        elif letter == "d":
            out.append(f"{d:0{count}d}")
        elif letter == "D":
            out.append(f"{doy:0{count}d}")
        elif letter == "E":
            out.append(DAYS[dow - 1] if count >= 4 else DAYS[dow - 1][:3])
        elif letter == "u":
            out.append(f"{(dow + 5) % 7 + 1:0{count}d}")
        elif letter == "F":
            out.append(f"{(d - 1) // 7 + 1:0{count}d}")
        elif letter == "w":
            out.append(f"{week_of_year(ms):0{count}d}")
        elif letter == "W":
            out.append(f"{week_of_month(ms):0{count}d}")
        elif letter == "a":
            out.append("AM" if hh < 12 else "PM")
        elif letter == "H":
            out.append(f"{hh:0{count}d}")
        elif letter == "k":
            out.append(f"{hh or 24:0{count}d}")
        elif letter == "K":
            out.append(f"{hh % 12:0{count}d}")
        elif letter == "h":
            out.append(f"{hh % 12 or 12:0{count}d}")
        elif letter == "m":
            out.append(f"{mi:0{count}d}")
        elif letter == "s":
            out.append(f"{ss:0{count}d}")
        elif letter == "S":
            out.append(f"{milli:0{count}d}")
        elif letter == "z":
            out.append("Coordinated Universal Time" if count >= 4 else "UTC")
        elif letter == "Z":
            out.append("+00:00" if count == 2 else "+0000")
        elif letter == "X":
            out.append("Z")
    return "".join(out)


# -- parsing (FastDateParser over a lenient Calendar) --
_NUMERIC = set("yYMLwWDdFuHkKhmsS")
_TEXT_FIELDS = {
    "M": {
        **{n.lower(): i for i, n in enumerate(MONTHS)},
        **{n[:3].lower(): i for i, n in enumerate(MONTHS)},
    },
    "E": {
        **{n.lower(): i + 1 for i, n in enumerate(DAYS)},
        **{n[:3].lower(): i + 1 for i, n in enumerate(DAYS)},
    },
    "a": {"am": 0, "pm": 1},
    "G": {"ad": 1, "bc": 0},
}
_TZ = re.compile(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?|(?i:Z|UTC|GMT)")


def parse_ms(text: str, pattern: str) -> int:
    """FastDateFormat.parse(text).getTime(): the fields in pattern order (a number followed
    by another number field takes exactly its pattern width), trailing text ignored; then
    the lenient calendar resolves them."""
    tokens = _tokens(pattern)
    fields, stamp, pos, offset_ms = {}, 0, 0, 0
    n = len(text)
    for k, (letter, count) in enumerate(tokens):
        if not letter:
            if text[pos : pos + len(count)] != count:
                raise DateParseError(f"Unparseable date: {text!r} does not match {pattern!r}")
            pos += len(count)
            continue
        numeric = letter in _NUMERIC and not (letter in "ML" and count >= 3)
        if numeric:
            nxt = tokens[k + 1] if k + 1 < len(tokens) else ("", "")
            fixed = bool(nxt[0]) and nxt[0] in _NUMERIC and not (nxt[0] in "ML" and nxt[1] >= 3)
            start = pos
            if fixed:
                end = min(n, pos + count)
            else:
                while start < n and text[start].isspace():
                    start += 1
                end = n
            j = start
            if j < end and text[j] in "+-" and letter in "yY":
                j += 1
            while j < end and text[j].isdigit():
                j += 1
            digits = text[start:j]
            if not digits or digits in "+-":
                raise DateParseError(f"Unparseable date: {text!r} does not match {pattern!r}")
            value = int(digits)
            pos = j
            if letter in "yY" and count == 2 and len(digits) == 2:
                now_year = _dt.datetime.utcnow().year
                century = (now_year - 80) // 100 * 100
                value += century
                if value < now_year - 80:
                    value += 100
            if letter in "ML":
                value -= 1
            elif letter == "h":
                value = 0 if value == 12 else value
            elif letter == "k":
                value = 0 if value == 24 else value
            elif letter == "u":
                value = value % 7 + 1
        elif letter in _TEXT_FIELDS:
            table = _TEXT_FIELDS["M" if letter == "L" else letter]
            best = None
            for name, v in table.items():
                if text[pos : pos + len(name)].lower() == name and (
                    best is None or len(name) > len(best[0])
                ):
                    best = (name, v)
            if best is None:
                raise DateParseError(f"Unparseable date: {text!r} does not match {pattern!r}")
            pos += len(best[0])
            value = best[1]
        else:  # z, Z, X: a zone
            m = _TZ.match(text, pos)
            if m is None:
                raise DateParseError(f"Unparseable date: {text!r} does not match {pattern!r}")
            if m.group(1):
                sign = -1 if m.group(1) == "-" else 1
                offset_ms = sign * (int(m.group(2)) * 60 + int(m.group(3) or 0)) * 60000
            pos = m.end()
            continue
        stamp += 1
        key = {"L": "M", "Y": "y", "K": "h", "k": "H"}.get(letter, letter)
        fields[key] = (value, stamp)
    return _resolve(fields) - offset_ms


def _resolve(f) -> int:
    def val(k, default=0):
        return f[k][0] if k in f else default

    def st(k):
        return f[k][1] if k in f else 0

    year = val("y", 1970)
    if "G" in f and f["G"][0] == 0:
        year = 1 - year
    month = val("M", 0)
    day_stamps = {
        "d": st("d"),
        "D": st("D"),
        "w": max(st("w"), st("E")) if "w" in f else 0,
        "W": max(st("W"), st("E")) if "W" in f else 0,
        "F": max(st("F"), st("E")) if "F" in f else 0,
    }
    best = max(day_stamps, key=lambda k: day_stamps[k])
    if day_stamps[best] == 0 and "E" in f:  # only a day of the week: that day of week 1
        best = "w"
    if day_stamps[best] == 0 and best != "w":
        days = days_from_civil(year, month + 1, 1)
    elif best == "d":
        days = days_from_civil(year, month + 1, val("d", 1))
    elif best == "D":
        days = days_from_civil(year, 1, 1) + val("D", 1) - 1
    elif best == "w":
        jan1 = days_from_civil(year, 1, 1)
        dow = civil(jan1 * DAY_MS)[7]
        start = jan1 - (dow - 1)  # en-US: weeks start on Sunday, week 1 holds Jan 1
        days = start + (val("w", 1) - 1) * 7 + (val("E", 1) - 1)
    else:
        first = days_from_civil(year, month + 1, 1)
        dow = civil(first * DAY_MS)[7]
        if best == "W":
            days = first - (dow - 1) + (val("W", 1) - 1) * 7 + (val("E", 1) - 1)
        else:
            target = val("E", dow)
            days = first + (target - dow) % 7 + (val("F", 1) - 1) * 7
    if st("H") >= max(st("h"), st("a")) and "H" in f:
        hour = val("H")
    else:
        hour = val("h") + 12 * val("a")
    return days * DAY_MS + hour * 3600000 + val("m") * 60000 + val("s") * 1000 + val("S")


def now_ms() -> int:
    return int(_time.time() * 1000)
