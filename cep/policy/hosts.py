"""Where HTTP sinks may post, and which Redis servers sinks may write to.

An allow-list entry is a host name (`api.example.com`), a host name or address with a port
(`api.example.com:8443`, `[2001:db8::1]:80`), an IP address, a CIDR network (`10.1.0.0/16`),
or `public` (any globally routable address). A URL whose host name is listed by name is
allowed; otherwise the name is resolved and EVERY address must be allowed by an address,
network or `public` entry. Loopback, link-local (169.254/16, fe80::/10), private and
unspecified addresses are never `public`: they pass only when listed. The sink connects to
an address that passed (no second lookup, so a name cannot be re-pointed in between)."""

import ipaddress
import socket
from urllib.parse import urlsplit

from cep.policy.exceptions import PolicyViolation


class HttpAllowList:
    """Parsed `sinks.http_allow` entries; `addresses(url)` checks a URL."""

    def __init__(self, entries=(), resolver=None, label="HTTP sink allow-list (sinks.http_allow)"):
        self.names, self.networks, self.public = {}, [], False
        self.label = label
        self._resolve = resolver or _resolve
        for entry in entries:
            self._add(str(entry).strip())

    def _add(self, entry):
        if not entry:
            return
        if entry.lower() == "public":
            self.public = True
            return
        try:
            self.networks.append(ipaddress.ip_network(entry, strict=False))
            return
        except ValueError:
            pass
        host, port = _split_host_port(entry)
        self.names.setdefault(host.lower().rstrip("."), set()).add(port)

    def addresses(self, url):
        """[(family, address, port)] to connect to for `url`; PolicyViolation when refused."""
        parts = urlsplit(str(url))
        try:
            port = parts.port
        except ValueError:
            raise PolicyViolation(f"url {url!r} has a bad port") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PolicyViolation(f"url {url!r} is not an http(s) URL with a host")
        port = port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname.lower().rstrip(".")
        found = self._resolve(host, port)
        if not found:
            raise PolicyViolation(f"host {parts.hostname!r} does not resolve")
        ports = self.names.get(host)
        if ports is not None and (None in ports or port in ports):
            return found
        for _, address, _ in found:
            if not self._address_allowed(address):
                raise PolicyViolation(
                    f"host {parts.hostname!r} ({address}) is not on the {self.label}{_why(address)}"
                )
        return found

    def _address_allowed(self, address):
        ip = ipaddress.ip_address(address.split("%")[0])
        candidates = [ip] + ([ip.ipv4_mapped] if getattr(ip, "ipv4_mapped", None) else [])
        for c in candidates:
            if any(c.version == n.version and c in n for n in self.networks):
                return True
        return self.public and all(c.is_global and not c.is_multicast for c in candidates)


def _split_host_port(entry):
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port)
    return entry, None


def _resolve(host, port):
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    seen, out = set(), []
    for family, _, _, _, sockaddr in infos:
        if sockaddr[0] not in seen:
            seen.add(sockaddr[0])
            out.append((family, sockaddr[0], port))
    return out


def _why(address):
    ip = ipaddress.ip_address(address.split("%")[0])
    for attr, label in (
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_unspecified", "unspecified"),
        ("is_private", "private"),
    ):
        if getattr(ip, attr) or getattr(getattr(ip, "ipv4_mapped", None), attr, False):
            return f"; {label} addresses are refused unless listed"
    return ""


def zmq_endpoint(url):
    """(host, port) of a ZeroMQ `tcp://host:port` URL; PolicyViolation for other transports
    (ipc:// and inproc:// name local files and sockets)."""
    text = str(url)
    if not text.startswith("tcp://"):
        raise PolicyViolation(
            f"url {text!r} must be tcp://host:port (other ZeroMQ transports are refused)"
        )
    host, sep, port = text[len("tcp://") :].rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit():
        raise PolicyViolation(f"url {text!r} must be tcp://host:port")
    return host, int(port)


def check_bind(host, allowed):
    """PolicyViolation unless a plan's listener may bind `host` (sinks.bind_hosts)."""
    host = "127.0.0.1" if host in (None, "") else str(host)
    if host not in allowed:
        raise PolicyViolation(
            f"a plan's listener may not bind {host!r}; allowed: "
            f"{', '.join(allowed) or 'none'} (sinks.bind_hosts)"
        )
    return host


def redis_connections(entries):
    """{name: url} from `sinks.redis_connections` entries `name=redis://...`."""
    out = {}
    for entry in entries:
        name, sep, url = str(entry).partition("=")
        if not sep or not name.strip() or not url.strip():
            raise PolicyViolation(
                f"sinks.redis_connections entry {entry!r} must be name=redis://host:port/db"
            )
        out[name.strip()] = url.strip()
    return out


def redis_url(options, connections):
    """The URL a redis sink with `options` may use: `connection='name'` naming a configured
    connection, or a `url` equal to one's URL; PolicyViolation otherwise."""
    name = options.get("connection")
    if name is not None:
        if name not in connections:
            known = ", ".join(sorted(connections)) or "none are configured"
            raise PolicyViolation(
                f"connection={name!r} is not a configured Redis connection "
                f"(sinks.redis_connections: {known})"
            )
        return connections[name]
    url = options.get("url")
    if url is not None and url in connections.values():
        return url
    raise PolicyViolation(
        "a Redis sink must name a configured connection with "
        "connection='name' (sinks.redis_connections); other servers are refused"
    )
