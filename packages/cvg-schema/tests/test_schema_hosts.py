"""network.hosts in the policy and the proxy's connections in the run record."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from schema_samples import RUN

from cvg_schema import RunRecord, SchemaError, load_dict, load_policy_dict
from cvg_schema.policy import host_kind


def policy(*hosts: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "network": {"hosts": list(hosts)}}


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("api.github.com", "name"),
        ("API.GitHub.com", "name"),
        ("localhost", "name"),
        ("_srv.example.com", "name"),
        ("xn--bcher-kva.example", "name"),
        ("*.pypi.org", "wildcard"),
        ("*.a.b.c", "wildcard"),
        ("10.0.0.5", "ip"),
        ("::1", "ip"),
        ("2001:db8::1", "ip"),
    ],
)
def test_valid_hosts(host: str, kind: str) -> None:
    p = load_policy_dict(policy({"host": host, "ports": [443, 80]}))
    assert p.network.hosts[0].host == host
    assert p.network.hosts[0].ports == [443, 80]
    assert host_kind(host) == kind
    assert p.rule("network.hosts[0]") == {"host": host, "ports": [443, 80]}


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("*.org", "at least two labels"),
        ("*", "whole first label"),
        ("a.*.b", "whole first label"),
        ("foo*.bar.com", "whole first label"),
        ("a..b", "not a host name label"),
        ("-a.example", "not a host name label"),
        ("a-.example", "not a host name label"),
        ("a b.example", "not a host name label"),
        ("example.com.", "trailing dot"),
        ("[::1]", "without brackets"),
        ("bücher.example", "punycode"),
        ("127.1", "last label is a number"),
        ("10.0.0.300", "last label is a number"),
        ("2130706433", "last label is a number"),
        ("x" * 64 + ".example", "not a host name label"),
        ("", "at least 1 character"),
    ],
)
def test_bad_hosts_name_the_problem(host: str, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        load_policy_dict(policy({"host": host, "ports": [443]}))
    text = str(info.value)
    assert text.startswith("$.network.hosts[0].host: "), text
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("ports", "message"),
    [
        ([], "at least 1 item"),
        ([0], "expected at least 1, got 0"),
        ([65536], "65535"),
        (["443"], "integer"),
    ],
)
def test_bad_ports(ports: list[Any], message: str) -> None:
    with pytest.raises(SchemaError) as info:
        load_policy_dict(policy({"host": "a.example", "ports": ports}))
    assert "$.network.hosts[0].ports" in str(info.value)
    assert message in str(info.value)


def test_missing_ports_and_unknown_key() -> None:
    with pytest.raises(SchemaError, match=r"hosts\[0\]\.ports"):
        load_policy_dict(policy({"host": "a.example"}))
    with pytest.raises(SchemaError, match="port"):
        load_policy_dict(policy({"host": "a.example", "ports": [1], "port": 2}))


def test_hosts_default_empty_and_reason_address() -> None:
    assert load_policy_dict({"version": 1}).network.hosts == []
    data = policy({"host": "a.example", "ports": [443]})
    data["reasons"] = {"network.hosts[0]": [{"event_id": "e1", "summary": "connect"}]}
    assert load_policy_dict(data).reasons["network.hosts[0]"][0].event_id == "e1"
    data["reasons"] = {"network.hosts[1]": [{"event_id": "e1", "summary": "connect"}]}
    with pytest.raises(SchemaError, match="has 1 entry"):
        load_policy_dict(data)


def test_run_record_connections_round_trip() -> None:
    data = copy.deepcopy(RUN)
    data["connections"] = [
        {
            "time": 1.5,
            "protocol": "http-connect",
            "host": "api.example",
            "port": 443,
            "verdict": "allowed",
            "reason": "granted by network.hosts[0]",
            "rule": "network.hosts[0]",
            "address": "127.0.0.2",
            "bytes_up": 10,
            "bytes_down": 20,
        },
        {"time": 2.0, "protocol": "unknown", "verdict": "refused", "reason": "malformed"},
    ]
    data["connections_omitted"] = 3
    rec = load_dict(data)
    assert isinstance(rec, RunRecord)
    assert rec.connections[0].rule == "network.hosts[0]"
    assert rec.connections[1].host is None
    assert rec.connections_omitted == 3
    assert load_dict(copy.deepcopy(RUN)).connections == []  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("field", "value"),
    [("verdict", "maybe"), ("protocol", "ftp"), ("port", 70000), ("reason", "")],
)
def test_run_record_bad_connection(field: str, value: Any) -> None:
    data = copy.deepcopy(RUN)
    conn: dict[str, Any] = {"time": 1.0, "protocol": "socks5", "verdict": "refused", "reason": "x"}
    conn[field] = value
    data["connections"] = [conn]
    with pytest.raises(SchemaError, match=rf"connections\[0\]\.{field}"):
        load_dict(data)
