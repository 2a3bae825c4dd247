"""How the console shows times and durations: for the pages' data (data.py) and the
templates' filters (nav.py)."""

import time
from datetime import datetime, timezone


def iso_time(epoch):
    """'YYYY-MM-DD HH:MM:SS UTC' of an epoch in seconds or an ISO-8601 string ('' for None)."""
    if epoch in (None, ""):
        return ""
    if isinstance(epoch, str):  # ISO-8601 from the API (lastChange)
        try:
            moment = datetime.fromisoformat(epoch.replace("Z", "+00:00"))
        except ValueError:
            return epoch
        return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def age(epoch):
    """'12 s', '3 min', '2 h' since an epoch in seconds."""
    if epoch in (None, "") or isinstance(epoch, str):
        return ""
    return duration(time.time() - epoch)


def duration(secs):
    if secs is None:
        return ""
    secs = max(0.0, float(secs))
    if secs < 90:
        return f"{secs:.0f} s"
    if secs < 5400:
        return f"{secs / 60:.0f} min"
    return f"{secs / 3600:.1f} h"
