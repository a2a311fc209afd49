"""network.hosts in cvg-policy: checks, the compiled plan, and what --explain promises."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cvg_policy.checks import check, errors, warnings
from cvg_policy.cli import EXIT_INVALID, main
from cvg_policy.compile import compile_policy
from cvg_policy.errors import PolicyError
from cvg_policy.explain import STANDING_LIMITS, explain_policy
from cvg_policy.load import load_policy
from cvg_policy.variables import context
from cvg_schema import Facts, Policy

MakeFacts = Callable[..., Facts]
MakePolicy = Callable[..., Policy]

HOSTS = [{"host": "api.example.test", "ports": [443]}, {"host": "*.pypi.test", "ports": [443, 80]}]

POLICY_TEXT = """\
version: 1
network:
  tcp_connect: [5432]
  hosts:
    - {host: api.example.test, ports: [443]}
    - {host: db.example.test, ports: [5432]}
    - {host: API.example.test, ports: [443]}
"""


def variables() -> dict[str, str]:
    return dict(context(cwd="/", home="/root", policy_dir="/"))


def test_hosts_alone_allow_tcp_sockets_and_no_port(policy_factory: MakePolicy) -> None:
    plan = compile_policy(policy_factory(network={"hosts": HOSTS}), variables=variables(), abi=7)
    # No port is granted by the plan itself: cvg-run adds the proxy's, chosen per run.
    assert plan.landlock.net_rules == []
    assert plan.landlock.handled_net == ["bind_tcp", "connect_tcp"]
    sockets = {(s.family, tuple(s.types)) for s in plan.seccomp.sockets}
    assert sockets == {("inet", ("stream",)), ("inet6", ("stream",))}
    assert all(s.protocols == [0, 6] for s in plan.seccomp.sockets)
    assert plan.degraded == []


def test_no_hosts_means_no_inet_sockets(policy_factory: MakePolicy) -> None:
    plan = compile_policy(policy_factory(), variables=variables(), abi=7)
    assert plan.seccomp.sockets == []


def test_hosts_below_abi_4_are_degraded(policy_factory: MakePolicy) -> None:
    plan = compile_policy(policy_factory(network={"hosts": HOSTS}), variables=variables(), abi=3)
    hosts = [d for d in plan.degraded if d.rule == "network.hosts"]
    assert len(hosts) == 1
    assert "connect to any host and port directly" in hosts[0].reason
    assert hosts[0].abi == 4


def test_a_port_in_hosts_and_tcp_connect_is_refused(policy_factory: MakePolicy) -> None:
    policy = policy_factory(network={"tcp_connect": [80], "hosts": HOSTS})
    with pytest.raises(PolicyError) as info:
        compile_policy(policy, variables=variables(), abi=7)
    assert info.value.address == "network.hosts[1].ports[1]"
    assert "also in network.tcp_connect" in info.value.message


def test_checks_name_the_line() -> None:
    loaded = load_policy(POLICY_TEXT, filename="p.yaml")
    findings = check(loaded, variables={}, arch="x86_64", env={})
    errs = errors(findings)
    assert [(e.address, e.line) for e in errs] == [("network.hosts[1].ports[0]", 6)]
    assert "grants it on every host" in errs[0].message
    dups = [w for w in warnings(findings) if "already in" in w.message]
    assert [(w.address, w.line) for w in dups] == [("network.hosts[2].ports[0]", 7)]
    assert "network.hosts[0].ports[0]" in dups[0].message


def test_checks_warn_about_udp_and_proxy_variables() -> None:
    text = """\
version: 1
network:
  udp: true
  hosts: [{host: a.example.test, ports: [443]}]
environment:
  set: {https_proxy: "http://elsewhere:3128"}
  pass: [NO_PROXY]
"""
    findings = warnings(check(load_policy(text, filename="p.yaml"), variables={}, env={}))
    by: dict[str, str] = {}
    for f in findings:
        by[f.address] = by.get(f.address, "") + f.message + "\n"
    assert "UDP still reaches any host" in by["network.udp"]
    assert "replaced by cvg-run's proxy" in by["environment.set.https_proxy"]
    assert "replaced by cvg-run's proxy" in by["environment.pass[0]"]


def test_proxy_variables_without_hosts_are_not_flagged() -> None:
    text = "version: 1\nenvironment:\n  set: {HTTPS_PROXY: x}\n"
    assert check(load_policy(text, filename="p.yaml"), variables={}, env={}) == []


def test_validate_refuses_a_bad_host_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\nnetwork:\n  hosts:\n    - {host: '*.com', ports: [443]}\n")
    assert main([str(p)]) == EXIT_INVALID
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"{p}:4:" in err
    assert "at least two labels" in err
    assert "Traceback" not in err


def test_validate_refuses_the_tcp_connect_overlap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "p.yaml"
    p.write_text(POLICY_TEXT)
    assert main([str(p)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "p.yaml:6: network.hosts[1].ports[0]: error:" in err


def test_explain_states_what_holds(policy_factory: MakePolicy, facts_factory: MakeFacts) -> None:
    policy = policy_factory(network={"hosts": HOSTS})
    report = explain_policy(policy, facts=facts_factory(7), variables=variables())
    hosts = report.rule("network.hosts")
    assert hosts.status == "enforced"
    assert "Landlock connect_tcp allows only the proxy's port" in hosts.mechanism
    assert hosts.note is not None
    for promise in (
        "HTTPS_PROXY",
        "any host is reachable directly",
        "DNS and UDP are denied",
        "IP literals only when listed",
    ):
        assert promise in hosts.note
    first = report.rule("network.hosts[0]")
    assert first.mechanism.startswith("proxy allows api.example.test on port 443")
    wild = report.rule("network.hosts[1]")
    assert "any name ending in .pypi.test on ports 443, 80" in wild.mechanism
    assert "not pypi.test" in wild.mechanism
    # Hosts open TCP sockets: the port rules now speak of the proxy's port.
    assert "proxy's port" in report.rule("network.tcp_connect").mechanism
    limit = next(s for s in STANDING_LIMITS if s.topic == "hosts")
    assert "proxy's port" in limit.reason


def test_explain_below_abi_4_says_the_proxy_can_be_bypassed(
    policy_factory: MakePolicy, facts_factory: MakeFacts
) -> None:
    policy = policy_factory(network={"hosts": HOSTS})
    report = explain_policy(policy, facts=facts_factory(3), variables=variables())
    hosts = report.rule("network.hosts")
    assert hosts.status == "partial"
    assert hosts.lost is not None and "connect to any host and port directly" in hosts.lost
    assert report.rule("network.hosts[0]").status == "unenforceable"


def test_explain_with_udp_says_dns_is_allowed(
    policy_factory: MakePolicy, facts_factory: MakeFacts
) -> None:
    policy = policy_factory(network={"hosts": HOSTS, "udp": True})
    report = explain_policy(policy, facts=facts_factory(7), variables=variables())
    note = report.rule("network.hosts").note
    assert note is not None and "DNS and UDP are allowed" in note
