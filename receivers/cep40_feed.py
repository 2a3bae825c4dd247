"""A CEP 4.0 event simulator file: `eventsimulatorfiles/<name>.csv` with its stream
configuration XML (`<streamConfiguration type="csv">` holding `<file>`, `<streamID>`
`name:version`, `<separateChar>` and `<delayBetweenEventsInMillis>`), sent to a worker.

Each CSV line is one event, its values in the stream's attribute order (meta, correlation,
payload). The lines go to the worker's endpoint as CSV (`?map=csv`), so the worker reads the
values with the stream's own attribute types, and reports per line what it rejected."""

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)


class FeedFileError(ValueError):
    """The simulator file or its configuration cannot be used; the message says why."""


@dataclass
class CsvFeed:
    csv_path: Path
    stream_id: str  # name:version
    separator: str
    delay_ms: int
    lines: list

    @property
    def stream_name(self):
        return self.stream_id.partition(":")[0]


def load_feed(path) -> CsvFeed:
    """The feed of a `.csv` (its configuration XML found beside it by its <file>) or of the
    configuration `.xml`."""
    path = Path(path)
    if path.suffix.lower() == ".xml":
        config = path
        root = _config_root(config)
        csv_path = config.parent / _text(root, "file", config)
    else:
        csv_path = path
        config = _find_config(path)
        root = _config_root(config)
        named = _text(root, "file", config)
        if named != path.name:
            raise FeedFileError(f"{config}: <file> names {named!r}, not {path.name!r}")
    stream_id = _text(root, "streamID", config)
    if ":" not in stream_id:
        raise FeedFileError(f"{config}: <streamID> {stream_id!r} must be 'name:version'")
    sep = root.findtext("separateChar") or ","
    try:
        delay = int(root.findtext("delayBetweenEventsInMillis") or 0)
    except ValueError:
        raise FeedFileError(
            f"{config}: <delayBetweenEventsInMillis> is not a whole number"
        ) from None
    try:
        lines = [x for x in csv_path.read_text(encoding="utf-8").splitlines() if x.strip()]
    except OSError as exc:
        raise FeedFileError(f"{csv_path}: cannot read: {exc.strerror}") from None
    return CsvFeed(csv_path, stream_id, sep, max(0, delay), lines)


def _find_config(csv_path):
    for candidate in sorted(csv_path.parent.glob("*.xml")):
        try:
            root = _config_root(candidate)
        except FeedFileError:
            continue
        if (root.findtext("file") or "").strip() == csv_path.name:
            return candidate
    raise FeedFileError(
        f"{csv_path}: no stream configuration XML beside it names it in "
        f"<file> (CEP 4.0 writes <name>_streamConfiguration.xml)"
    )


def _config_root(path):
    try:
        root = etree.parse(str(path), _PARSER).getroot()
    except (OSError, etree.XMLSyntaxError) as exc:
        raise FeedFileError(f"{path}: not a readable XML file: {exc}") from None
    if etree.QName(root).localname != "streamConfiguration":
        raise FeedFileError(f"{path}: the root element is <{root.tag}>, not <streamConfiguration>")
    if (root.get("type") or "csv").lower() != "csv":
        raise FeedFileError(f"{path}: type={root.get('type')!r}: only csv feeds can be sent")
    return root


def _text(root, name, path):
    value = (root.findtext(name) or "").strip()
    if not value:
        raise FeedFileError(f"{path}: <{name}> is missing")
    return value


def pick_stream(base_url, tenant, plan, feed, timeout=5.0):
    """The plan's stream for the feed's CEP stream: the worker's stream of the same name
    (the last dotted part of the CEP name, case-insensitive), else its only stream."""
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/events", timeout=timeout) as resp:
            keys = json.loads(resp.read()).get("streams", [])
    except (urllib.error.URLError, ValueError, OSError) as exc:
        raise FeedFileError(f"cannot list the worker's streams ({exc}); give --stream") from None
    mine = [k.split("/", 2)[2] for k in keys if k.startswith(f"{tenant}/{plan}/")]
    short = feed.stream_name.rsplit(".", 1)[-1].lower()
    same = [s for s in mine if s.lower() in (short, feed.stream_name.lower())]
    if len(same) == 1:
        return same[0]
    if len(mine) == 1:
        return mine[0]
    raise FeedFileError(
        f"plan {plan} has streams {', '.join(mine) or 'none'} on this worker; "
        f"which one takes {feed.stream_id}? give --stream"
    )


def send_feed(base_url, tenant, plan, stream, feed, rate=None, batch=100, timeout=5.0):
    """Send every line; returns (sent, accepted, [(line number, reason)])."""
    query = urllib.parse.urlencode({"map": "csv", "delimiter": feed.separator})
    url = f"{base_url.rstrip('/')}/events/{tenant}/{plan}/{stream}?{query}"
    per_s = rate if rate else (1000.0 / feed.delay_ms if feed.delay_ms else 0.0)
    batch = max(1, batch if per_s == 0 or per_s >= batch else int(per_s) or 1)
    sent = accepted = 0
    reasons = []
    for i in range(0, len(feed.lines), batch):
        started = time.monotonic()
        chunk = feed.lines[i : i + batch]
        body = "\n".join(chunk).encode()
        req = urllib.request.Request(
            url, data=body, method="POST", headers={"Content-Type": "text/csv"}
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                reply = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            reply = json.loads(exc.read() or b"{}")
        sent += len(chunk)
        accepted += int(reply.get("accepted", 0))
        reasons += [(i + 1, e.get("reason")) for e in reply.get("errors", [])]
        if per_s:
            time.sleep(max(0.0, len(chunk) / per_s - (time.monotonic() - started)))
    return sent, accepted, reasons
