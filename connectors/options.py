"""Reading connector options: flags, integers and required values, with errors that name the
connector and the stream (`ValueError`, turned into the source's or sink's config error)."""


def required(options, name, where):
    value = options.get(name)
    if value in (None, ""):
        raise ValueError(f"{where} needs {name}=...")
    return str(value)


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
        raise ValueError(f"{where}: {name}={value} is out of range "
                         f"{low if low is not None else ''}..{high if high is not None else ''}")
    return value


def number(options, name, default, where):
    raw = options.get(name, default)
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name}={raw!r} is not a number") from None
