"""Reading connector options: flags, integers and required values, with errors that name the
connector and the stream (`ValueError`, turned into the source's or sink's config error)."""


def required(options, name, where, *aliases):
    """The value of option `name` (or of the first of `aliases` given: the Siddhi names
    imported plans use); ValueError when none is given."""
    for n in (name,) + aliases:
        value = options.get(n)
        if value not in (None, ""):
            return str(value)
    raise ValueError(f"{where} needs {' or '.join(n + '=...' for n in (name,) + aliases)}")


def alias(options, name, *aliases):
    """`options` with `name` set from the first of `aliases` given when `name` is not."""
    if options.get(name) in (None, ""):
        for a in aliases:
            if options.get(a) not in (None, ""):
                return {**options, name: options[a]}
    return options


def flag(options, name, default, where):
    raw = options.get(name)
    if raw in (None, ""):
        return default
    text = str(raw).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"{where}: {name}={raw!r} is not true or false")


def integer(options, name, default, where, low=None, high=None):
    raw = options.get(name, default)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name}={raw!r} is not an integer") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(
            f"{where}: {name}={value} is out of range "
            f"{low if low is not None else ''}..{high if high is not None else ''}"
        )
    return value


def number(options, name, default, where):
    raw = options.get(name, default)
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name}={raw!r} is not a number") from None
