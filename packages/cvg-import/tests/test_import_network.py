"""Network events: the port is kept, the address is said not to be a host, IPv6 is lost."""

from __future__ import annotations

import json

from importhelp import FIXTURES, obs, report

from cvg_import.importer import import_divergence
from cvg_schema import Observation


def imported(*observations: dict[str, object]) -> Observation:
    return import_divergence(json.dumps(report(*observations)).encode())


def test_ipv4_connect_keeps_port_and_address_not_host() -> None:
    o = imported(obs("net_outbound", "93.184.216.34:443"))
    (e,) = o.events
    assert (e.op, e.syscall, e.port, e.address, e.family) == (
        "connect",
        "connect",
        443,
        "93.184.216.34",
        "inet",
    )
    assert e.result == "ok"
    assert e.source is not None and e.source["never_grant"] is None
    assert any("not a host name" in n for n in e.source["notes"])  # type: ignore[union-attr]
    assert any("never host names" in n for n in o.notes)


def test_ipv6_address_lost_is_said() -> None:
    path = FIXTURES / "trap-priv-008-package-installer.json"
    o = import_divergence(path.read_bytes())
    (e,) = [e for e in o.events if e.op == "bind"]
    assert (e.port, e.address, e.family, e.result) == (0, None, "inet6", "EPERM")
    assert e.source is not None and e.source["target"] == "[ipv6]:0"
    assert any("IPv6" in n for n in e.source["notes"])  # type: ignore[union-attr]
    assert any("IPv6" in n for n in o.notes)


def test_real_ipv6_address_is_kept() -> None:
    (e,) = imported(obs("net_listen", "[::1]:8080")).events
    assert (e.op, e.port, e.address, e.family) == ("bind", 8080, "::1", "inet6")


def test_unparsable_targets_keep_no_port() -> None:
    for target in ("example.com:443", "10.0.0.1:99999", "10.0.0.1", "/run/x.sock"):
        (e,) = imported(obs("net_outbound", target)).events
        assert e.port is None or target == "example.com:443"
        assert e.address is None
        assert e.source is not None and e.source["notes"]


def test_driver_url_connect_is_flagged_and_failed() -> None:
    (e,) = imported(obs("net_outbound", "127.0.0.1:9", succeeded=False, result=-1)).events
    assert e.source is not None
    assert "divergence-probe" in str(e.source["driver_probe"])
    assert e.source["never_grant"] == "failed" and e.result == "EPERM"
    (e,) = imported(obs("net_outbound", "127.0.0.1:8080")).events
    assert e.source is not None and e.source["driver_probe"] is None
