"""Named broker connections: where connectors may connect, with which credentials.

The operator lists them in `connections.brokers` (manager.yaml and worker.yaml), one entry
`name=scheme://[user:password@]host:port[/path]` each, e.g. `events=nats://cep:pw@10.0.0.5:4222`,
`plant=mqtt://broker:1883`, `amq=stomp://user:pw@amq:61613`, `bus=kafka://k1:9092,k2:9092`,
`mail=smtp://relay:25`, `feed=wss://feeds.example.com/prices`. A plan names one with
`connection='name'`; the URL and its secret never appear in the plan. Without a policy
(library use, tests) a connector may give `url=` itself."""

from urllib.parse import unquote, urlsplit

from cep.policy.exceptions import PolicyViolation


def broker_connections(entries) -> dict:
    """{name: url} from `connections.brokers` entries; PolicyViolation for a bad entry."""
    out = {}
    for entry in entries or ():
        name, sep, url = str(entry).partition("=")
        if not sep or not name.strip() or "://" not in url:
            raise PolicyViolation(
                f"connections.brokers entry {_shown(str(entry))!r} must be name=scheme://host:port"
            )
        out[name.strip()] = url.strip()
    return out


def connection_url(kind: str, schemes: tuple, options: dict, connections) -> str:
    """The URL a `kind` connector with `options` uses. With `connections` (the policy's
    {name: url}) it must name one (`connection='name'`) whose scheme fits; without, it may
    give `url=`. PolicyViolation otherwise."""
    name = options.get("connection")
    if connections is None:
        url = options.get("url")
        if name is not None and url is None:
            raise PolicyViolation(
                f"connection={name!r} needs the worker's connections (connections.brokers)"
            )
        if not url:
            raise PolicyViolation(
                f"a {kind} connector needs connection='name' (connections.brokers)"
            )
        return _check_scheme(kind, schemes, str(url))
    if name is None:
        if options.get("url") is not None:
            raise PolicyViolation(
                f"a {kind} connector may not give url=...: it must name a "
                f"configured connection with connection='name' "
                f"(connections.brokers); other servers are refused"
            )
        raise PolicyViolation(f"a {kind} connector needs connection='name' (connections.brokers)")
    if name not in connections:
        known = ", ".join(sorted(connections)) or "none are configured"
        raise PolicyViolation(
            f"connection={name!r} is not a configured broker connection "
            f"(connections.brokers: {known})"
        )
    return _check_scheme(kind, schemes, connections[name])


def _check_scheme(kind, schemes, url):
    scheme = url.split("://", 1)[0].lower()
    if scheme not in schemes:
        raise PolicyViolation(
            f"a {kind} connector needs a {' or '.join(schemes)}:// connection, not {scheme}://"
        )
    return url


def parts(url: str):
    """(scheme, [(host, port)], user, password, path) of a connection URL; several hosts
    separated by commas are allowed (Kafka bootstrap servers)."""
    scheme, _, rest = url.partition("://")
    netloc, _, path = rest.partition("/")
    user = password = None
    if "@" in netloc:
        cred, _, netloc = netloc.rpartition("@")
        user, _, password = cred.partition(":")
        user, password = unquote(user), unquote(password) if password else None
    hosts = []
    for item in netloc.split(","):
        split = urlsplit(f"x://{item}")
        try:
            port = split.port
        except ValueError:
            raise PolicyViolation(f"connection {_shown(url)!r} has a bad port") from None
        if not split.hostname:
            raise PolicyViolation(f"connection {_shown(url)!r} names no host")
        hosts.append((split.hostname, port))
    return scheme.lower(), hosts, user, password, "/" + path if path else ""


def _shown(url):
    """A URL without its password, for messages and status pages."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    cred, _, tail = rest.partition("@")
    user = cred.split(":", 1)[0]
    return f"{scheme}://{user}:***@{tail}" if ":" in cred else f"{scheme}://{user}@{tail}"


shown = _shown
