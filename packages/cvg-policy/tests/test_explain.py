"""Per-rule enforcement status from cvg-probe facts, and the standing limits."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cvg_policy.explain import STANDING_LIMITS, explain_policy, report_dict
from cvg_policy.variables import context
from cvg_schema import Facts, Policy

MakeFacts = Callable[..., Facts]
MakePolicy = Callable[..., Policy]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    (h / "docs").mkdir(parents=True)
    (h / "notes.txt").write_text("n")
    (h / ".ssh").mkdir()
    return h


@pytest.fixture
def policy(home: Path, policy_factory: MakePolicy) -> Policy:
    return policy_factory(
        filesystem={
            "read": ["${HOME}", "/lib", f"{home}/missing"],
            "write": ["${SCRATCH}", "${HOME}/docs"],
            "execute": ["/usr/bin/env"],
            "deny": ["${HOME}/.ssh", "/opt/not-granted"],
        },
        network={"tcp_connect": [443, 80], "tcp_bind": [8080]},
        ipc={"signal_outside": False},
        environment={"set": {"HOME": "${SCRATCH}", "PATH": "/usr/bin"}, "pass": ["LANG", "TERM"]},
        syscalls={"allow": ["personality", "read"]},
    )


EXPECTED_ADDRESSES = {
    "filesystem.read[0]",
    "filesystem.read[1]",
    "filesystem.read[2]",
    "filesystem.write[0]",
    "filesystem.write[1]",
    "filesystem.execute[0]",
    "filesystem.deny[0]",
    "filesystem.deny[1]",
    "network.tcp_connect",
    "network.tcp_connect[0]",
    "network.tcp_connect[1]",
    "network.tcp_bind",
    "network.tcp_bind[0]",
    "network.udp",
    "network.unix",
    "ipc.signal_outside",
    "resources.wall_clock_seconds",
    "resources.cpu_seconds",
    "resources.memory_mb",
    "resources.file_size_mb",
    "resources.open_files",
    "resources.processes",
    "environment.set.HOME",
    "environment.set.PATH",
    "environment.pass[0]",
    "environment.pass[1]",
    "syscalls.allow",
    "syscalls.allow[0]",
    "syscalls.allow[1]",
}


def explain(policy: Policy, facts: Facts, home: Path):  # type: ignore[no-untyped-def]
    return explain_policy(policy, facts=facts, variables=context(home=str(home)))


ReportAt = Callable[..., Any]


@pytest.fixture
def report_at(policy: Policy, facts_factory: MakeFacts, home: Path) -> ReportAt:
    """The report on this test's policy for a kernel of Landlock ABI ``abi`` on which
    every feature of it is proven (facts_factory's options after it)."""
    return lambda abi, **facts: explain(policy, facts_factory(abi, **facts), home)


def test_every_rule_gets_a_status(report_at: ReportAt, policy: Policy) -> None:
    report = report_at(7)
    addresses = [r.address for r in report.rules]
    assert set(addresses) == EXPECTED_ADDRESSES
    assert len(addresses) == len(set(addresses))
    for r in report.rules:
        assert r.status in ("enforced", "partial", "unenforceable")
        assert r.mechanism
        assert (r.lost is None) == (r.status == "enforced"), r
    # Every address is one the policy model understands.
    for r in report.rules:
        policy.rule(r.address)


def test_abi_7_with_everything_proven_is_enforced(report_at: ReportAt) -> None:
    report = report_at(7)
    assert {r.address: r.status for r in report.rules if r.status != "enforced"} == {}
    assert report.degraded == []
    assert report.abi == 7


def test_abi_4_scopes_signals_in_the_supervisor(report_at: ReportAt) -> None:
    report = report_at(4)
    signal = report.rule("ipc.signal_outside")
    assert signal.status == "enforced"
    assert "supervisor" in signal.mechanism and "user notification" in signal.mechanism
    # Ports are filtered at ABI 4.
    assert report.rule("network.tcp_connect[0]").status == "enforced"
    assert report.rule("network.tcp_connect").status == "enforced"
    # What compile lists as degraded is never reported enforced.
    for d in report.degraded:
        assert d.rule is not None
        assert report.rule(d.rule).status != "enforced", d


def test_abi_3_loses_port_filtering(report_at: ReportAt) -> None:
    report = report_at(3)
    assert report.rule("network.tcp_connect[1]").status == "unenforceable"
    assert "every port" in (report.rule("network.tcp_connect[1]").lost or "")
    # seccomp still keeps MPTCP/SCTP out: partial, not nothing.
    assert report.rule("network.tcp_connect").status == "partial"
    for d in report.degraded:
        assert report.rule(d.rule or "").status != "enforced", d


def test_abi_2_read_grants_lose_truncate(report_at: ReportAt) -> None:
    report = report_at(2)
    read = report.rule("filesystem.read[0]")
    assert read.status == "partial"
    assert "truncated" in (read.lost or "")
    # A write grant grants truncate anyway: nothing lost for it.
    assert report.rule("filesystem.write[1]").status == "enforced"


def test_abi_1_write_notes_refer(report_at: ReportAt) -> None:
    report = report_at(1)
    note = report.rule("filesystem.write[1]").note or ""
    assert "refer" in note and "more restrictive" in note
    assert report.rule("filesystem.write[1]").status == "enforced"


def test_no_landlock_makes_filesystem_unenforceable(report_at: ReportAt) -> None:
    report = report_at(0)
    for address in (
        "filesystem.read[0]",
        "filesystem.read[1]",
        "filesystem.write[0]",
        "filesystem.execute[0]",
        "filesystem.deny[0]",
        "network.tcp_connect[0]",
    ):
        assert report.rule(address).status == "unenforceable", address
    assert "no Landlock" in (report.rule("filesystem.read[0]").lost or "")
    # seccomp and rlimits do not need Landlock.
    assert report.rule("network.udp").status == "enforced"
    assert report.rule("resources.cpu_seconds").status == "enforced"


def test_missing_feature_proofs(policy: Policy, facts_factory: MakeFacts, home: Path) -> None:
    report = explain(
        policy,
        facts_factory(
            7,
            unproven=("seccomp.filter", "landlock.scope.signal", "landlock.fs.read_dir"),
            absent=("rlimit.cpu", "rlimit.nproc"),
        ),
        home,
    )
    cpu = report.rule("resources.cpu_seconds")
    assert cpu.status == "unenforceable"
    assert "rlimit.cpu not proven: not probed" in (cpu.lost or "")
    udp = report.rule("network.udp")
    assert udp.status == "unenforceable"
    assert "seccomp.filter not proven: probe failed" in (udp.lost or "")
    assert report.rule("syscalls.allow").status == "unenforceable"
    # The supervisor still counts processes: partial without the rlimit backstop.
    assert report.rule("resources.processes").status == "partial"
    # Some rights proven, one not: partial.
    read = report.rule("filesystem.read[0]")
    assert read.status == "partial" and "landlock.fs.read_dir" in (read.lost or "")
    # A file grant needs no read_dir.
    assert report.rule("filesystem.execute[0]").status == "enforced"
    # DAC without CAP_KILL still holds: partial.
    assert report.rule("ipc.signal_outside").status == "partial"
    # The environment needs no kernel feature.
    assert report.rule("environment.set.PATH").status == "enforced"


def test_unix_true_below_abi_9(
    home: Path,
    policy_factory: MakePolicy,
    facts_factory: MakeFacts,
) -> None:
    # Below ABI 9 cvg-run's supervisor mediates connect and the sends to an address.
    policy = policy_factory(network={"unix": True}, filesystem={"read": [str(home)]})
    for abi in (4, 7, 9):
        rule = explain(policy, facts_factory(abi), home).rule("network.unix")
        assert rule.status == "enforced", (abi, rule.lost)
        assert "supervisor" in rule.mechanism


def test_notes_report_symlinks_expansions_and_missing_paths(report_at: ReportAt) -> None:
    report = report_at(7)
    if os.path.islink("/lib"):
        assert f"the rule is on {os.path.realpath('/lib')}" in (
            report.rule("filesystem.read[1]").note or ""
        )
    assert "narrowed around" in (report.rule("filesystem.read[0]").note or "")
    assert "not covered" in (report.rule("filesystem.read[0]").note or "")
    missing = report.rule("filesystem.read[2]")
    assert missing.status == "enforced" and "nothing is granted" in missing.mechanism
    assert "narrowed" in report.rule("filesystem.deny[0]").mechanism
    assert "changes nothing" in report.rule("filesystem.deny[1]").mechanism
    assert "loader" in (report.rule("filesystem.execute[0]").note or "")
    assert "no effect" in (report.rule("syscalls.allow[1]").note or "")
    warned = {f.address for f in report.findings}
    assert {"filesystem.read[2]", "filesystem.deny[1]"} <= warned


def test_root_processes_note(report_at: ReportAt) -> None:
    note = report_at(7, euid=0).rule("resources.processes").note
    assert note is not None and "root" in note


def test_standing_limits() -> None:
    topics = {s.topic for s in STANDING_LIMITS}
    assert {
        "hosts",
        "file metadata",
        "dynamic loader",
        "deny expansion",
        "signals below ABI 6",
        "supervisor killed",
    } <= topics
    for s in STANDING_LIMITS:
        assert s.reason and "\n" not in s.reason


def test_report_dict_is_json(report_at: ReportAt) -> None:
    report = report_at(4)
    data = json.loads(json.dumps(report_dict(report)))
    assert data["landlock_abi"] == 4
    assert sum(data["summary"].values()) == len(EXPECTED_ADDRESSES)
    assert data["summary"]["enforced"] >= 1
    assert {r["address"] for r in data["rules"]} == EXPECTED_ADDRESSES
    assert set(data["rules"][0]) == {"address", "status", "mechanism", "abi", "lost", "note"}
    assert [s["topic"] for s in data["standing_limits"]] == [s.topic for s in STANDING_LIMITS]
    assert data["degraded"] == []  # below ABI 6 the supervisor scopes signals
