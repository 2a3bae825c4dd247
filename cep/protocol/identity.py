"""Machine identity: the advertised host plus every non-loopback interface address (psutil).

CEP 4.0 used the first non-loopback IPv4 as a string, which breaks with several NICs, Docker or
NAT. Two parties are on the same machine when their identity sets intersect."""

import ipaddress
import socket
from typing import Optional

import psutil


def is_identifying(addr: str) -> bool:
    """False for loopback and unspecified addresses, which every machine has."""
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return bool(addr) and addr != "localhost"
    return not (ip.is_loopback or ip.is_unspecified)


def interface_addresses() -> list[str]:
    """Every IPv4/IPv6 address of every interface, loopback excluded."""
    out: list[str] = []
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6) and is_identifying(a.address):
                out.append(a.address.split("%", 1)[0])
    return out


def machine_identity(advertised_host: Optional[str] = None) -> list[str]:
    """The sorted, de-duplicated identity list sent in registry requests."""
    ids = set(interface_addresses())
    if advertised_host and is_identifying(advertised_host):
        ids.add(advertised_host)
    return sorted(ids)


def default_host() -> str:
    """A host other machines can reach us at: the first non-loopback IPv4, else 127.0.0.1."""
    for addr in interface_addresses():
        if ":" not in addr:
            return addr
    return "127.0.0.1"
