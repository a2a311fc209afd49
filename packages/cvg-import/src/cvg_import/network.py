"""Network targets: Divergence reports ``IP:port``, or ``[ipv6]:port`` with the address lost.

An address is not a host name: a policy cannot say "example.com" and cvg filters ports
only, so the address is kept for a reviewer and the port is what a policy can use.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["ADDRESS_NOTE", "IPV6_LOST_NOTE", "Endpoint", "parse_endpoint"]

ADDRESS_NOTE: Final = (
    "the address is the IP the tool used, not a host name, and a cvg policy filters "
    "ports, not hosts"
)
IPV6_LOST_NOTE: Final = "an IPv6 address: Divergence does not report it, only the port"

_PORTED: Final = re.compile(r"^(\[[^\]]*\]|[^:\[\]]*):([0-9]{1,5})$")


@dataclass(frozen=True)
class Endpoint:
    port: int | None
    address: str | None
    family: Literal["inet", "inet6"] | None
    notes: list[str] = field(default_factory=list)


def parse_endpoint(target: str) -> Endpoint:
    """The port, address and family of a network target, with what is missing from it."""
    m = _PORTED.match(target)
    if m is None or int(m.group(2)) > 65535:
        return Endpoint(None, None, None, [f"target {target[:100]!r} is not IP:port"])
    host, port = m.group(1), int(m.group(2))
    if host.startswith("["):
        inner = host[1:-1]
        try:
            return Endpoint(port, str(ipaddress.IPv6Address(inner)), "inet6", [ADDRESS_NOTE])
        except ValueError:
            return Endpoint(port, None, "inet6", [IPV6_LOST_NOTE, ADDRESS_NOTE])
    try:
        return Endpoint(port, str(ipaddress.IPv4Address(host)), "inet", [ADDRESS_NOTE])
    except ValueError:
        return Endpoint(port, None, None, [f"{host[:100]!r} is not an IP address", ADDRESS_NOTE])
