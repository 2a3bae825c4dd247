"""`time:` — Siddhi 3.2.15's time extension (13 functions). Dates are strings in a Java
SimpleDateFormat pattern (default 'yyyy-MM-dd HH:mm:ss.SSS') or milliseconds since the epoch;
UTC and the en-US locale, as the reference engine runs (see `javatime`). A value that does not
match its format gives null (Siddhi logs the ParseException and returns null)."""

from cep.catalog.ext import register
from cep.catalog.ext.javatime import (
    DAYS,
    add,
    civil,
    format_ms,
    now_ms,
    parse_ms,
    week_of_year,
)
from cep.catalog.ext.support import (
    INT,
    LONG,
    STRING,
    check_types,
    entry,
    fail,
    require_constant,
)

NS = "time"
DEFAULT = "yyyy-MM-dd HH:mm:ss.SSS"
UNITS = ("YEAR", "MONTH", "QUARTER", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND")
S = (STRING,)


def _need(*xs):
    for x in xs:
        if x is None:
            raise ValueError("argument cannot be null")


def _unit(full, call, index):
    require_constant(full, call, index, "unit")
    unit = call.args[index].value
    if not isinstance(unit, str):
        fail(
            call,
            f"{full}(): the unit must be a string such as 'YEAR' (invalid parameter type)",
            index,
        )
    return unit.upper()


# -- dateAdd / dateSub --
def _shift_rule(name):
    full = f"time:{name}"

    def rule(types, call):
        if types[0] is LONG:
            if len(types) != 3:
                fail(
                    call,
                    f"{full}(timestampInMilliseconds, expr, unit) takes 3 arguments, "
                    f"not {len(types)} (invalid number of arguments)",
                )
            check_types(full, call, types, [(LONG,), (INT,), S])
        else:
            check_types(full, call, types, [S, (INT,), S, S])
        _unit(full, call, 2)
        return STRING

    return rule


def _shift_factory(sign):
    def factory(types, args):
        unit = args[2].value.upper()
        if types[0] is LONG:

            def shift_ms(ms, amount, _unit=None):
                _need(ms, amount)
                return str(add(ms, unit, sign * amount))

            return shift_ms

        def shift(date, amount, _unit=None, fmt=DEFAULT):
            _need(date, amount, fmt)
            return format_ms(add(parse_ms(date, fmt), unit, sign * amount), fmt)

        return shift

    return factory


# -- dateDiff --
def _diff_rule(types, call):
    full = "time:dateDiff"
    if types[0] is LONG or types[1] is LONG:
        if len(types) != 2:
            fail(
                call,
                f"{full}(timestampInMilliseconds1, timestampInMilliseconds2) takes 2 "
                f"arguments (invalid number of arguments)",
            )
        check_types(full, call, types, [(LONG,), (LONG,)])
    else:
        check_types(full, call, types, [S, S, S, S])
    return LONG


def _days_between(a, b):
    diff = a - b
    return (
        int(diff / 86400000)
        if abs(diff) < 2**53
        else (abs(diff) // 86400000) * (1 if diff >= 0 else -1)
    )


def _diff_factory(types, args):
    if types[0] is LONG:

        def diff_ms(a, b):
            _need(a, b)
            return _days_between(a, b)

        return diff_ms

    def diff(a, b, fmt1=DEFAULT, fmt2=None):
        _need(a, b, fmt1)
        fmt2 = fmt1 if fmt2 is None and len(types) == 3 else (fmt2 or DEFAULT)
        return _days_between(parse_ms(a, fmt1), parse_ms(b, fmt2))

    return diff


# -- dateFormat / date / dayOfWeek --
def _format_rule(types, call):
    full = "time:dateFormat"
    if types[0] is LONG:
        if len(types) != 2:
            fail(
                call,
                f"{full}(timestampInMilliseconds, targetFormat) takes 2 arguments "
                f"(invalid number of arguments)",
            )
        check_types(full, call, types, [(LONG,), S])
    else:
        check_types(full, call, types, [S, S, S])
    return STRING


def _format_factory(types, args):
    if types[0] is LONG:

        def format_from_ms(ms, target):
            _need(ms, target)
            return format_ms(ms, target)

        return format_from_ms

    def date_format(date, target, source=DEFAULT):
        _need(date, target, source)
        return format_ms(parse_ms(date, source), target)

    return date_format


def _date(date, fmt=DEFAULT):
    _need(date, fmt)
    return format_ms(parse_ms(date, fmt), "yyyy-MM-dd")


def _day_of_week_factory(types, args):
    if len(types) == 1:

        def day_of_week(date):
            _need(date)
            return DAYS[civil(parse_ms(date.split(" ")[0], "yyyy-MM-dd"))[7] - 1]

        return day_of_week

    def day_of_week_fmt(date, fmt):
        _need(date, fmt)
        return DAYS[civil(parse_ms(date, fmt))[7] - 1]

    return day_of_week_fmt


# -- extract --
def _extract_rule(types, call):
    full = "time:extract"
    if types[0] is LONG:
        if len(types) > 3:
            fail(
                call,
                f"{full}(timestampInMilliseconds, unit[, locale]) takes 2 or 3 "
                f"arguments (invalid number of arguments)",
            )
        check_types(full, call, types, [(LONG,), S, S])
        _unit(full, call, 1)
        if len(types) == 3:
            require_constant(full, call, 2, "locale")
    else:
        check_types(full, call, types, [S, S, S, S])
        _unit(full, call, 0)
        if len(types) == 4:
            require_constant(full, call, 3, "locale")
    return INT


def _field(ms, unit, locale):
    y, mo, d, hh, mi, ss, *_ = civil(ms)
    if unit == "YEAR":
        return y
    if unit == "MONTH":
        return mo
    if unit == "SECOND":
        return ss
    if unit == "MINUTE":
        return mi
    if unit == "HOUR":
        return hh
    if unit == "DAY":
        return d
    if unit == "WEEK":
        return week_of_year(ms, locale)
    if unit == "QUARTER":
        return (mo - 1) // 3 + 1
    return 0


def _extract_factory(types, args):
    if types[0] is LONG:
        unit = args[1].value.upper()
        locale = args[2].value if len(args) == 3 else "en_US"

        def extract_ms(ms, _unit, _locale=None):
            _need(ms)
            return _field(ms, unit, locale)

        return extract_ms
    unit = args[0].value.upper()
    locale = args[3].value if len(args) == 4 else "en_US"

    def extract(_unit, date, fmt=DEFAULT, _locale=None):
        _need(date, fmt)
        return _field(parse_ms(date, fmt), unit, locale)

    return extract


# -- timestampInMilliseconds and the clock --
def _timestamp_rule(types, call):
    check_types("time:timestampInMilliseconds", call, types, [S, S])
    return LONG


def _timestamp(date=None, fmt=DEFAULT):
    if date is None:
        raise ValueError("the date cannot be null")
    _need(fmt)
    return parse_ms(date, fmt)


def _timestamp_factory(types, args):
    return now_ms if not types else _timestamp


def _clock(name, pattern):
    return entry(
        NS,
        name,
        0,
        0,
        lambda types, call: STRING,
        lambda: format_ms(now_ms(), pattern),
        f"{name}(): the wall clock as '{pattern}' (UTC)",
        pure=False,
    )


def _rule(full, result, *allowed):
    def rule(types, call):
        check_types(full, call, types, allowed)
        return result

    return rule


register(
    NS,
    [
        entry(
            NS,
            "dateAdd",
            3,
            4,
            _shift_rule("dateAdd"),
            _shift_factory(1),
            "dateAdd(date, expr, unit[, format]) or dateAdd(millis, expr, unit): as a string",
            factory=True,
        ),
        entry(
            NS,
            "dateSub",
            3,
            4,
            _shift_rule("dateSub"),
            _shift_factory(-1),
            "dateSub(date, expr, unit[, format]) or dateSub(millis, expr, unit)",
            factory=True,
        ),
        entry(
            NS,
            "dateDiff",
            2,
            4,
            _diff_rule,
            _diff_factory,
            "dateDiff(date1, date2[, format1, format2]) or dateDiff(millis1, millis2): days",
            factory=True,
        ),
        entry(
            NS,
            "dateFormat",
            2,
            3,
            _format_rule,
            _format_factory,
            "dateFormat(date, targetFormat[, sourceFormat]) or dateFormat(millis, targetFormat)",
            factory=True,
        ),
        entry(
            NS,
            "date",
            1,
            2,
            _rule("time:date", STRING, S, S),
            _date,
            "date(date[, format]): 'yyyy-MM-dd'",
        ),
        entry(
            NS,
            "dayOfWeek",
            1,
            2,
            _rule("time:dayOfWeek", STRING, S, S),
            _day_of_week_factory,
            "dayOfWeek(date[, format]): the English day name",
            factory=True,
        ),
        entry(
            NS,
            "extract",
            2,
            4,
            _extract_rule,
            _extract_factory,
            "extract(unit, date[, format[, locale]]) or extract(millis, unit[, locale]) -> int",
            factory=True,
        ),
        entry(
            NS,
            "timestampInMilliseconds",
            0,
            2,
            _timestamp_rule,
            _timestamp_factory,
            "timestampInMilliseconds([date[, format]]): the date's epoch milliseconds (the "
            "wall clock without arguments)",
            factory=True,
            pure=False,
        ),
        _clock("currentDate", "yyyy-MM-dd"),
        _clock("currentTime", "HH:mm:ss"),
        _clock("currentTimestamp", "yyyy-MM-dd HH:mm:ss"),
        _clock("now", "yyyy-MM-dd HH:mm:ss"),
        _clock("utcTimestamp", "yyyy-MM-dd HH:mm:ss"),
    ],
)
