"""Policy -> plan: each policy key's mapping, symlinks, degradations, and the plan is one
cvg-schema validates and cvg-kernel's prepare() accepts."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cvg_kernel.landlock import FILE_RIGHTS
from cvg_kernel.plan import PlanError, prepare
from cvg_kernel.seccomp import DEFAULT_DENY
from cvg_policy.compile import (
    EXECUTE_RIGHTS,
    READ_RIGHTS,
    WRITE_RIGHTS,
    compile_policy,
    compile_report,
    handled_fs_for,
)
from cvg_policy.errors import PolicyError
from cvg_policy.variables import (
    LATE_BOUND,
    VARIABLES,
    concrete,
    context,
    expand,
    system_python,
)
from cvg_schema import Facts, Plan, Policy, digest, dumps

MIB = 1024 * 1024
Make = Callable[..., Policy]


def fs_rules(plan: Plan) -> dict[str, list[str]]:
    return {r.path: list(r.access) for r in plan.landlock.fs_rules}


def sockets(plan: Plan) -> list[dict[str, Any]]:
    return [s.model_dump(exclude_none=True) for s in plan.seccomp.sockets]


def degraded(plan: Plan) -> set[tuple[str | None, int | None]]:
    return {(d.rule, d.abi) for d in plan.degraded}


def prepared_ok(plan: Plan, scratch: str) -> list[str]:
    """prepare() the plan as cvg-exec would (from its JSON); return its notes."""
    p = prepare(json.loads(dumps(plan)), {"SCRATCH": scratch})
    try:
        return [str(n) for n in p.notes]
    finally:
        p.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / "docs").mkdir(parents=True)
    (h / "docs" / "a.txt").write_text("a")
    (h / "notes.txt").write_text("n")
    (h / ".ssh").mkdir()
    (h / ".ssh" / "id_rsa").write_text("k")
    return Path(os.path.realpath(h))


# ---------------------------------------------------------------- variables


def test_variables_api() -> None:
    assert VARIABLES == ("CWD", "SCRATCH", "HOME", "POLICY_DIR", "PYTHON", "PYTHON_STDLIB")
    assert frozenset({"SCRATCH"}) == LATE_BOUND
    ctx = context(cwd="/w", home="/h")
    assert ctx == {"CWD": "/w", "HOME": "/h", "POLICY_DIR": "/w", **system_python()}
    assert context(cwd="/w", home="/h", policy_dir="/p")["POLICY_DIR"] == "/p"
    assert context()["CWD"] == os.getcwd()
    assert expand("${HOME}/x/${SCRATCH}/${CWD}", ctx) == "/h/x/${SCRATCH}//w"
    assert expand("${SCRATCH}", {"SCRATCH": "/s"}, keep=()) == "/s"
    assert not concrete("${SCRATCH}/out")
    assert concrete("/usr")
    with pytest.raises(PolicyError) as e:
        expand("${NOPE}/x", ctx)
    assert str(e.value) == (
        "unknown variable ${NOPE} (known: CWD, HOME, POLICY_DIR, PYTHON, PYTHON_STDLIB, SCRATCH)"
    )
    with pytest.raises(PolicyError, match="POLICY_DIR"):
        expand("${POLICY_DIR}", {"CWD": "/w"})
    with pytest.raises(PolicyError, match="unterminated"):
        expand("${HOME", ctx)


def test_python_is_the_real_file_python3_names_and_its_stdlib_beside_it() -> None:
    found = system_python()
    python3 = shutil.which("python3", path="/usr/bin:/bin")
    if python3 is None:  # nothing to name: the variables have no value
        assert found == {}
        return
    assert found["PYTHON"] == os.path.realpath(python3)
    assert os.path.isfile(os.path.join(found["PYTHON_STDLIB"], "os.py"))
    assert os.path.basename(found["PYTHON_STDLIB"]) == os.path.basename(found["PYTHON"])


def test_python_variables_follow_the_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cvg_policy.variables as variables

    usr, bare = tmp_path / "usr", tmp_path / "bare"
    (usr / "bin").mkdir(parents=True)
    (usr / "lib" / "python3.13").mkdir(parents=True)
    (usr / "lib" / "python3.13" / "os.py").write_text("")
    exe = usr / "bin" / "python3.13"
    exe.write_text("")
    exe.chmod(0o755)
    (usr / "bin" / "python3").symlink_to("python3.13")
    bare.mkdir()
    (bare / "python3").write_text("")
    (bare / "python3").chmod(0o755)
    real = os.path.realpath(usr)

    monkeypatch.setattr(variables, "_SYSTEM_BIN", (str(tmp_path / "none"), str(usr / "bin")))
    assert system_python() == {
        "PYTHON": f"{real}/bin/python3.13", "PYTHON_STDLIB": f"{real}/lib/python3.13",
    }  # fmt: skip
    # No version in the name: no standard library to name beside it.
    monkeypatch.setattr(variables, "_SYSTEM_BIN", (str(bare),))
    assert system_python() == {"PYTHON": os.path.realpath(bare / "python3")}
    monkeypatch.setattr(variables, "_SYSTEM_BIN", (str(tmp_path / "none"),))
    assert system_python() == {}
    with pytest.raises(PolicyError, match=r"variable \$\{PYTHON\} has no value here"):
        expand("${PYTHON}", context(cwd="/w", home="/h"))


def test_home_default_falls_back_to_passwd(monkeypatch: pytest.MonkeyPatch) -> None:
    import pwd

    monkeypatch.delenv("HOME", raising=False)
    assert context()["HOME"] == pwd.getpwuid(os.geteuid()).pw_dir


# ---------------------------------------------------------------- filesystem


def test_filesystem_rights_for_directories_and_files(home: Path, policy_factory: Make) -> None:
    h = str(home)
    policy = policy_factory(
        filesystem={
            "read": [f"{h}/docs", f"{h}/notes.txt"],
            "write": [f"{h}/w"],
            "execute": [f"{h}/bin", f"{h}/bin/tool"],
        }
    )
    (home / "w").mkdir()
    (home / "bin").mkdir()
    (home / "bin" / "tool").write_text("#!/bin/sh\n")
    plan = compile_policy(policy, variables=context(), abi=7)
    rules = fs_rules(plan)
    assert set(rules[f"{h}/docs"]) == {"read_file", "read_dir"}
    assert rules[f"{h}/notes.txt"] == ["read_file"]
    assert set(rules[f"{h}/w"]) == WRITE_RIGHTS
    assert "make_char" not in rules[f"{h}/w"] and "make_block" not in rules[f"{h}/w"]
    assert set(rules[f"{h}/bin"]) == EXECUTE_RIGHTS
    assert rules[f"{h}/bin/tool"] == ["execute", "read_file"]
    assert READ_RIGHTS < WRITE_RIGHTS


def test_same_path_in_several_lists_merges_rights(home: Path, policy_factory: Make) -> None:
    h = str(home)
    policy = policy_factory(
        filesystem={"read": [h, f"{h}/docs/a.txt"], "write": [h], "execute": [f"{h}/docs/a.txt"]}
    )
    c = compile_report(policy, variables=context(), abi=7)
    rules = fs_rules(c.plan)
    assert set(rules) == {h, f"{h}/docs/a.txt"}
    assert set(rules[h]) == WRITE_RIGHTS
    assert rules[f"{h}/docs/a.txt"] == ["execute", "read_file"]
    # Canonical (bit) order, no duplicates.
    assert rules[h] == [r for r in handled_fs_for(7) if r in WRITE_RIGHTS]


def test_variables_are_expanded_except_scratch(home: Path, policy_factory: Make) -> None:
    cwd = home / "cwd"
    cwd.mkdir()
    pdir = home / "pdir"
    pdir.mkdir()
    policy = policy_factory(
        filesystem={
            "read": ["${HOME}/docs", "${CWD}", "${POLICY_DIR}"],
            "write": ["${SCRATCH}", "${SCRATCH}/out"],
        },
        environment={"set": {"HOME": "${SCRATCH}", "W": "${CWD}:${HOME}"}, "pass": ["LANG"]},
    )
    ctx = context(cwd=str(cwd), home=str(home), policy_dir=str(pdir))
    plan = compile_policy(policy, variables=ctx, abi=7)
    rules = fs_rules(plan)
    assert set(rules) == {f"{home}/docs", str(cwd), str(pdir), "${SCRATCH}", "${SCRATCH}/out"}
    # A late-bound path is resolved only when applied; the kernel layer keeps just the
    # file rights if it turns out to be a file.
    assert set(rules["${SCRATCH}/out"]) == WRITE_RIGHTS
    assert plan.variables == ["SCRATCH"]
    assert plan.environment.set == {"HOME": "${SCRATCH}", "W": f"{cwd}:{home}"}
    assert plan.environment.pass_ == ["LANG"]


def test_no_late_bound_variable_declares_none(home: Path, policy_factory: Make) -> None:
    plan = compile_policy(
        policy_factory(filesystem={"read": [str(home)]}), variables=context(), abi=7
    )
    assert plan.variables == []


def test_variable_value_containing_a_variable_is_refused(policy_factory: Make) -> None:
    policy = policy_factory(filesystem={"read": ["${CWD}"]})
    with pytest.raises(PolicyError) as e:
        compile_policy(policy, variables=context(cwd="/tmp/${SCRATCH}"), abi=7)
    assert e.value.address == "filesystem.read[0]"


@pytest.mark.skipif(not os.path.islink("/lib"), reason="/lib is not a symlink on this host")
def test_lib_symlink_becomes_its_real_path(policy_factory: Make, tmp_path: Path) -> None:
    real = os.path.realpath("/lib")
    assert real != "/lib"
    policy = policy_factory(filesystem={"read": ["/lib"], "execute": ["/lib"]})
    c = compile_report(policy, variables=context(), abi=7)
    assert set(fs_rules(c.plan)) == {real}
    assert c.resolved == {
        "filesystem.read[0]": ("/lib", real),
        "filesystem.execute[0]": ("/lib", real),
    }
    assert prepared_ok(c.plan, str(tmp_path)) == []


def test_file_symlink_like_resolv_conf(tmp_path: Path, policy_factory: Make) -> None:
    # /etc/resolv.conf -> /run/systemd/resolve/stub-resolv.conf, in miniature.
    etc, run = tmp_path / "etc", tmp_path / "run" / "resolve"
    etc.mkdir()
    run.mkdir(parents=True)
    (run / "stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (etc / "resolv.conf").symlink_to(run / "stub-resolv.conf")
    (etc / "rel").symlink_to("../run/resolve")  # a relative link to a directory
    policy = policy_factory(filesystem={"read": [f"{etc}/resolv.conf", f"{etc}/rel"]})
    c = compile_report(policy, variables=context(), abi=7)
    target = os.path.realpath(run / "stub-resolv.conf")
    assert fs_rules(c.plan) == {
        target: ["read_file"],
        os.path.realpath(run): ["read_file", "read_dir"],
    }
    assert c.resolved["filesystem.read[0]"] == (f"{etc}/resolv.conf", target)
    assert prepared_ok(c.plan, str(tmp_path)) == []


def test_missing_path_is_kept_out(tmp_path: Path, policy_factory: Make) -> None:
    policy = policy_factory(filesystem={"read": [f"{tmp_path}/nope", str(tmp_path)]})
    c = compile_report(policy, variables=context(), abi=7)
    assert set(fs_rules(c.plan)) == {os.path.realpath(tmp_path)}
    assert c.missing == {"filesystem.read[0]": f"{tmp_path}/nope"}
    assert [(f.severity, f.address) for f in c.findings] == [("warning", "filesystem.read[0]")]


def test_deny_expansion_lands_in_the_plan(home: Path, policy_factory: Make) -> None:
    policy = policy_factory(filesystem={"read": ["${HOME}"], "deny": ["${HOME}/.ssh"]})
    plan = compile_policy(policy, variables=context(home=str(home)), abi=7)
    assert fs_rules(plan) == {
        f"{home}/docs": ["read_file", "read_dir"],
        f"{home}/notes.txt": ["read_file"],
    }
    (e,) = plan.expansions
    assert (e.rule, e.path, e.denied, e.rules) == (
        "filesystem.read[0]",
        str(home),
        [f"{home}/.ssh"],
        2,
    )


def test_deny_with_a_late_bound_variable_is_refused(policy_factory: Make) -> None:
    policy = policy_factory(filesystem={"write": ["${SCRATCH}"], "deny": ["${SCRATCH}/.git"]})
    with pytest.raises(PolicyError) as e:
        compile_policy(policy, variables=context(), abi=7)
    assert e.value.address == "filesystem.deny[0]"
    assert "SCRATCH" in e.value.message


def test_max_rules(home: Path, policy_factory: Make) -> None:
    policy = policy_factory(filesystem={"read": ["${HOME}"], "deny": ["${HOME}/.ssh"]})
    compile_policy(policy, variables=context(home=str(home)), abi=7, max_rules=2)
    with pytest.raises(PolicyError) as e:
        compile_policy(policy, variables=context(home=str(home)), abi=7, max_rules=1)
    assert e.value.address == "filesystem.read[0]"
    assert str(home) in e.value.message and "2 rules" in e.value.message


# ---------------------------------------------------------------- handled sets per ABI


@pytest.mark.parametrize(
    ("abi", "fs_last", "net", "scoped"),
    [
        (1, "make_sym", [], []),
        (2, "refer", [], []),
        (3, "truncate", [], []),
        (4, "truncate", ["bind_tcp", "connect_tcp"], []),
        (5, "ioctl_dev", ["bind_tcp", "connect_tcp"], []),
        (6, "ioctl_dev", ["bind_tcp", "connect_tcp"], ["abstract_unix_socket", "signal"]),
        (7, "ioctl_dev", ["bind_tcp", "connect_tcp"], ["abstract_unix_socket", "signal"]),
        (9, "resolve_unix", ["bind_tcp", "connect_tcp"], ["abstract_unix_socket", "signal"]),
    ],
)
def test_handled_lists_are_explicit_for_the_target(
    abi: int, fs_last: str, net: list[str], scoped: list[str], policy_factory: Make
) -> None:
    plan = compile_policy(policy_factory(), variables=context(), abi=abi)
    ll = plan.landlock
    assert isinstance(ll.handled_fs, list)
    assert ll.handled_fs[-1] == fs_last
    assert "make_char" in ll.handled_fs and "make_block" in ll.handled_fs
    assert ll.handled_net == net
    assert ll.scoped == scoped
    assert ll.best_effort is False
    assert ll.required is True
    assert ll.flags == []


def test_abi_zero_is_written_for_abi_one_and_not_required(
    policy_factory: Make, tmp_path: Path
) -> None:
    policy = policy_factory(filesystem={"read": ["/usr"]})
    plan = compile_policy(policy, variables=context(), abi=0)
    assert plan.landlock.handled_fs == handled_fs_for(1)
    assert plan.landlock.required is False
    assert fs_rules(plan) == {"/usr": ["read_file", "read_dir"]}
    assert prepared_ok(plan, str(tmp_path)) == []


def test_plan_for_a_newer_abi_fails_loudly_on_an_older_kernel(
    policy_factory: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = compile_policy(
        policy_factory(network={"tcp_connect": [443]}), variables=context(), abi=4
    )
    monkeypatch.setenv("CVG_LANDLOCK_ABI_MAX", "3")
    with pytest.raises(PlanError, match=r"net\.bind_tcp|net\.connect_tcp"):
        prepared_ok(plan, str(tmp_path))
    monkeypatch.setenv("CVG_LANDLOCK_ABI_MAX", "4")
    assert prepared_ok(plan, str(tmp_path)) == []


# ---------------------------------------------------------------- network


def test_tcp_ports_become_net_rules_and_tcp_only_sockets(policy_factory: Make) -> None:
    policy = policy_factory(network={"tcp_connect": [443, 80], "tcp_bind": [8080, 443]})
    plan = compile_policy(policy, variables=context(), abi=4)
    assert [(r.port, r.access) for r in plan.landlock.net_rules] == [
        (80, ["connect_tcp"]),
        (443, ["bind_tcp", "connect_tcp"]),
        (8080, ["bind_tcp"]),
    ]
    assert sockets(plan) == [
        {"family": "inet", "types": ["stream"], "protocols": [0, 6]},
        {"family": "inet6", "types": ["stream"], "protocols": [0, 6]},
    ]


def test_udp_adds_datagram_sockets_for_udp_only(policy_factory: Make) -> None:
    policy = policy_factory(network={"tcp_connect": [53], "udp": True})
    assert sockets(compile_policy(policy, variables=context(), abi=7)) == [
        {"family": "inet", "types": ["stream"], "protocols": [0, 6]},
        {"family": "inet", "types": ["dgram"], "protocols": [0, 17]},
        {"family": "inet6", "types": ["stream"], "protocols": [0, 6]},
        {"family": "inet6", "types": ["dgram"], "protocols": [0, 17]},
    ]
    udp_only = policy_factory(network={"udp": True})
    assert sockets(compile_policy(udp_only, variables=context(), abi=7)) == [
        {"family": "inet", "types": ["dgram"], "protocols": [0, 17]},
        {"family": "inet6", "types": ["dgram"], "protocols": [0, 17]},
    ]


@pytest.mark.parametrize("abi", [0, 3, 4, 7])
def test_no_network_drops_inet_entirely(abi: int, policy_factory: Make) -> None:
    plan = compile_policy(policy_factory(), variables=context(), abi=abi)
    assert sockets(plan) == []
    assert plan.landlock.net_rules == []
    assert not {d.rule for d in plan.degraded} & {"network.tcp_connect", "network.tcp_bind"}


def test_unix(policy_factory: Make) -> None:
    plan = compile_policy(policy_factory(network={"unix": True}), variables=context(), abi=7)
    assert sockets(plan) == [{"family": "unix", "types": ["stream", "dgram", "seqpacket"]}]
    plan = compile_policy(
        policy_factory(network={"unix": True, "tcp_connect": [1], "udp": True}),
        variables=context(),
        abi=7,
    )
    families = {s["family"] for s in sockets(plan)}
    types = {t for s in sockets(plan) for t in s["types"]}
    assert families == {"unix", "inet", "inet6"}
    assert "raw" not in types


# ---------------------------------------------------------------- ipc, resources, env, syscalls


def test_signal_scope(policy_factory: Make) -> None:
    plan = compile_policy(policy_factory(ipc={"signal_outside": True}), variables=context(), abi=6)
    assert plan.landlock.scoped == ["abstract_unix_socket"]
    plan = compile_policy(policy_factory(), variables=context(), abi=6)
    assert plan.landlock.scoped == ["abstract_unix_socket", "signal"]


def test_resources(policy_factory: Make) -> None:
    policy = policy_factory(
        resources={
            "wall_clock_seconds": 90,
            "cpu_seconds": 7,
            "memory_mb": 300,
            "file_size_mb": 5,
            "open_files": 99,
            "processes": 12,
        }
    )
    plan = compile_policy(policy, variables=context(), abi=7)
    assert plan.rlimits == {"cpu": 7, "data": 300 * MIB, "fsize": 5 * MIB, "nofile": 99, "core": 0}
    assert plan.processes == 12
    assert plan.wall_clock_seconds == 90
    defaults = compile_policy(policy_factory(), variables=context(), abi=7)
    assert defaults.rlimits["data"] == 512 * MIB
    assert defaults.processes == 64 and defaults.wall_clock_seconds == 60


def test_a_null_wall_clock_is_no_limit_and_absent_is_the_default() -> None:
    from cvg_policy.load import load_policy

    unlimited = load_policy(
        b"version: 1\nresources:\n  wall_clock_seconds: null\n", filename="p.yaml"
    )
    assert compile_policy(unlimited.policy, variables=context(), abi=7).wall_clock_seconds is None
    absent = load_policy(b"version: 1\nresources:\n  cpu_seconds: 5\n", filename="p.yaml")
    assert compile_policy(absent.policy, variables=context(), abi=7).wall_clock_seconds == 60


def test_wall_clock_beyond_what_a_plan_holds_is_refused_on_load() -> None:
    from cvg_policy.load import load_policy

    with pytest.raises(PolicyError) as e:
        load_policy(b"version: 1\nresources:\n  wall_clock_seconds: 691200\n", filename="p.yaml")
    assert e.value.address == "resources.wall_clock_seconds"
    assert e.value.line == 3


def test_syscalls_allow(policy_factory: Make) -> None:
    plan = compile_policy(
        policy_factory(syscalls={"allow": ["personality", "ptrace", "read", "iopl"]}),
        variables=context(),
        abi=7,
    )
    assert plan.seccomp.deny == [
        n for n in DEFAULT_DENY if n not in {"personality", "ptrace", "iopl"}
    ]
    default = compile_policy(policy_factory(), variables=context(), abi=7)
    assert default.seccomp.deny == list(DEFAULT_DENY)
    assert default.seccomp.enosys == ["clone3"]


def test_unknown_syscall_is_an_error(policy_factory: Make) -> None:
    policy = policy_factory(syscalls={"allow": ["read", "frobnicate"]})
    with pytest.raises(PolicyError) as e:
        compile_policy(policy, variables=context(), abi=7)
    assert e.value.address == "syscalls.allow[1]"
    assert "frobnicate" in str(e.value)


# ---------------------------------------------------------------- degraded


def _full_policy(home: Path, policy_factory: Make, **network: Any) -> Policy:
    return policy_factory(
        filesystem={
            "read": [str(home), "/dev/tty"],
            "write": [f"{home}/docs"],
            "execute": ["/usr/bin/env"],
        },
        network={"tcp_connect": [443], **network},
    )


def test_degraded_at_abi_7_and_6_is_empty(home: Path, policy_factory: Make) -> None:
    for abi in (6, 7):
        policy = _full_policy(home, policy_factory)
        assert compile_policy(policy, variables=context(), abi=abi).degraded == []


def test_unix_sockets_are_supervised_below_abi_9(home: Path, policy_factory: Make) -> None:
    # Below resolve_unix the supervisor resolves, checks and performs connect and the
    # sends to an address: nothing is degraded, and the plan says what may be reached.
    for abi in (4, 6, 7, 8):
        plan = compile_policy(
            _full_policy(home, policy_factory, unix=True), variables=context(), abi=abi
        )
        assert ("network.unix", 9) not in degraded(plan)
        assert ("network.unix", 6) not in degraded(plan)  # abstract addresses: refused
        assert "unix" in plan.seccomp.supervise
        assert plan.unix is not None and plan.unix.reach
        assert all(e.beneath for e in plan.unix.reach)
    plan = compile_policy(_full_policy(home, policy_factory, unix=True), variables=context(), abi=9)
    assert plan.degraded == []
    assert "unix" not in plan.seccomp.supervise and plan.unix is None


def test_unix_reach_follows_the_grants_and_their_denies(
    tmp_path: Path, policy_factory: Make
) -> None:
    (tmp_path / "proj" / "inner").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    policy = policy_factory(
        filesystem={"read": [str(tmp_path / "proj")], "write": ["${SCRATCH}"],
                    "deny": [str(tmp_path / "proj" / "inner")]},
        network={"unix": True},
    )  # fmt: skip
    plan = compile_policy(policy, variables=context(), abi=7)
    assert plan.unix is not None
    reach = {e.path for e in plan.unix.reach}
    assert "${SCRATCH}" in reach
    assert str(tmp_path / "proj") not in reach  # narrowed around the deny
    assert not any(p.startswith(str(tmp_path / "proj" / "inner")) for p in reach)
    assert "SCRATCH" in plan.variables


def test_unix_as_a_list_names_sockets_and_trees(tmp_path: Path, policy_factory: Make) -> None:
    (tmp_path / "run").mkdir()
    policy = policy_factory(network={"unix": [str(tmp_path / "run"), str(tmp_path / "agent.sock")]})
    for abi in (4, 7, 9):
        plan = compile_policy(policy, variables=context(), abi=abi)
        assert "unix" in plan.seccomp.supervise  # Landlock has no rule for a list
        assert plan.unix is not None
        assert [(e.path, e.beneath) for e in plan.unix.reach] == [
            (str(tmp_path / "run"), True),
            (str(tmp_path / "agent.sock"), False),  # not there yet: kept, exact
        ]
        assert sockets(plan) == [{"family": "unix", "types": ["stream", "dgram", "seqpacket"]}]
    with pytest.raises(PolicyError, match="not absolute"):
        compile_policy(policy_factory(network={"unix": ["x.sock"]}), variables=context(), abi=7)


def test_degraded_at_abi_4(home: Path, policy_factory: Make) -> None:
    plan = compile_policy(_full_policy(home, policy_factory), variables=context(), abi=4)
    # Signals are scoped by the supervisor instead of Landlock: not degraded.
    assert degraded(plan) == {("filesystem.read[1]", 5)}
    assert plan.seccomp.supervise == ["signal"]
    plan = compile_policy(_full_policy(home, policy_factory, unix=True), variables=context(), abi=4)
    assert degraded(plan) == {("filesystem.read[1]", 5)}
    assert plan.seccomp.supervise == ["listen", "unix", "signal"]


def test_signals_are_supervised_only_below_abi_6(home: Path, policy_factory: Make) -> None:
    for abi, expected in ((0, ["signal"]), (2, ["signal"]), (5, ["signal"]), (6, []), (7, [])):
        plan = compile_policy(_full_policy(home, policy_factory), variables=context(), abi=abi)
        assert plan.seccomp.supervise == expected, abi
    outside = policy_factory(ipc={"signal_outside": True})
    assert compile_policy(outside, variables=context(), abi=4).seccomp.supervise == []
    # A bind grant adds listen, at every ABI.
    server = policy_factory(network={"tcp_bind": [8080]})
    assert compile_policy(server, variables=context(), abi=7).seccomp.supervise == ["listen"]
    assert compile_policy(server, variables=context(), abi=4).seccomp.supervise == [
        "listen",
        "signal",
    ]


def test_reading_memory_devices_is_not_degraded_at_abi_4(policy_factory: Make) -> None:
    """/dev/urandom and friends have no ioctl worth having without capabilities:
    a policy reading them must still run on a stock Ubuntu 24.04 kernel."""
    devices = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"]
    plan = compile_policy(
        policy_factory(filesystem={"read": devices}, ipc={"signal_outside": True}),
        variables=context(),
        abi=4,
    )
    assert degraded(plan) == set()
    tty = compile_policy(
        policy_factory(filesystem={"read": ["/dev/tty"]}, ipc={"signal_outside": True}),
        variables=context(),
        abi=4,
    )
    assert degraded(tty) == {("filesystem.read[0]", 5)}


def test_degraded_below_abi_4_and_3(home: Path, policy_factory: Make) -> None:
    plan = compile_policy(_full_policy(home, policy_factory), variables=context(), abi=2)
    assert degraded(plan) == {
        ("network.tcp_connect", 4),
        ("network.tcp_bind", 4),
        # read-only grants: truncate (ABI 3); /dev/tty also device ioctls (ABI 5)
        ("filesystem.read[0]", 3),
        ("filesystem.read[1]", 3),
        ("filesystem.read[1]", 5),
        ("filesystem.execute[0]", 3),
    }
    # refer is missing at ABI 1 too, but that only denies more: never listed.
    plan1 = compile_policy(_full_policy(home, policy_factory), variables=context(), abi=1)
    assert degraded(plan1) == degraded(plan)


def test_degraded_without_landlock(home: Path, policy_factory: Make) -> None:
    policy = policy_factory(
        filesystem={"read": [str(home)], "write": [f"{home}/docs"], "deny": [f"{home}/.ssh"]}
    )
    plan = compile_policy(policy, variables=context(), abi=0)
    assert degraded(plan) == {
        ("filesystem.read[0]", 1),
        ("filesystem.write[0]", 1),
        ("filesystem.deny[0]", 1),
    }


# ---------------------------------------------------------------- target, source, validity


def test_target_comes_from_facts(
    home: Path, policy_factory: Make, facts_factory: Callable[..., Facts]
) -> None:
    facts = facts_factory(7, cap=4)
    policy = _full_policy(home, policy_factory)
    plan = compile_policy(policy, variables=context(), facts=facts, abi=7, policy_path="/p/x.yaml")
    assert plan.landlock.handled_fs == handled_fs_for(4)
    assert plan.arch == "x86_64"
    assert plan.source is not None
    assert plan.source.policy_digest == digest(policy)
    assert plan.source.facts_digest == digest(facts)
    assert plan.source.policy_path == "/p/x.yaml"
    with pytest.raises(PolicyError, match="architecture"):
        compile_policy(policy, variables=context(), facts=facts_factory(7, arch="riscv64"))


def test_without_facts_the_running_kernel_is_the_target(
    policy_factory: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CVG_LANDLOCK_ABI_MAX", "3")
    plan = compile_policy(policy_factory(), variables=context())
    assert plan.landlock.handled_fs == handled_fs_for(3)
    assert plan.source is not None and plan.source.facts_digest is None


@pytest.mark.parametrize("abi", [0, 1, 2, 3, 4, 5, 6, 7])
def test_plan_validates_and_prepare_accepts_it(
    abi: int, home: Path, policy_factory: Make, tmp_path: Path
) -> None:
    h = str(home)
    policy = policy_factory(
        filesystem={
            "read": ["/usr", "/lib", "/etc/ld.so.cache", h],
            "write": ["${SCRATCH}", f"{h}/docs"],
            "execute": ["/usr/bin/env"],
            "deny": [f"{h}/.ssh"],
        },
        network={"tcp_connect": [443], "tcp_bind": [8080], "udp": True, "unix": True},
        environment={"set": {"HOME": "${SCRATCH}", "PATH": "/usr/bin"}, "pass": ["LANG"]},
        syscalls={"allow": ["personality"]},
    )
    plan = compile_policy(policy, variables=context(home=h), abi=abi)
    # Round trip through JSON and the schema: the compiler writes only valid plans.
    again = Plan.model_validate(json.loads(dumps(plan)))
    assert again == plan
    prepared = prepare(json.loads(dumps(plan)), {"SCRATCH": str(tmp_path)})
    try:
        assert prepared.env["HOME"] == str(tmp_path)
        assert prepared.env["PATH"] == "/usr/bin"
        assert prepared.notes == []
        assert prepared.ruleset is not None and prepared.ruleset.enforced
        added = {p for p, _ in prepared.ruleset.fs_rules}
        assert str(tmp_path) in added
        assert f"{h}/.ssh" not in added and h not in added
    finally:
        prepared.close()


def test_file_rights_on_late_bound_files_are_trimmed_by_the_kernel(
    policy_factory: Make, tmp_path: Path
) -> None:
    (tmp_path / "f").write_text("x")
    plan = compile_policy(
        policy_factory(filesystem={"write": ["${SCRATCH}/f"]}), variables=context(), abi=7
    )
    prepared = prepare(json.loads(dumps(plan)), {"SCRATCH": str(tmp_path)})
    try:
        assert prepared.ruleset is not None
        ((path, mask),) = prepared.ruleset.fs_rules
        assert path == f"{tmp_path}/f"
        from cvg_kernel.landlock import FS_RIGHTS, mask_names

        assert set(mask_names(FS_RIGHTS, mask)) == WRITE_RIGHTS & FILE_RIGHTS
    finally:
        prepared.close()


def test_dotdot_after_scratch_is_refused(policy_factory: Make) -> None:
    policy = policy_factory(filesystem={"read": ["${SCRATCH}/../etc"]})
    with pytest.raises(PolicyError) as e:
        compile_policy(policy, variables=context(), abi=7)
    assert e.value.address == "filesystem.read[0]"
    ok = policy_factory(filesystem={"read": ["${SCRATCH}/./a//b"]})
    assert fs_rules(compile_policy(ok, variables=context(), abi=7)) == {
        "${SCRATCH}/a/b": ["read_file", "read_dir"]
    }


def test_dotdot_in_a_concrete_path_resolves(tmp_path: Path, policy_factory: Make) -> None:
    (tmp_path / "a").mkdir()
    policy = policy_factory(filesystem={"read": [f"{tmp_path}/a/../a"]})
    assert set(fs_rules(compile_policy(policy, variables=context(), abi=7))) == {
        os.path.realpath(tmp_path / "a")
    }


def test_unreadable_paths_are_policy_errors(policy_factory: Make) -> None:
    from cvg_policy.expand import DictView

    class Locked(DictView):
        def kind(self, path: str):  # type: ignore[no-untyped-def]
            if path.startswith("/locked"):
                raise PermissionError(13, "Permission denied")
            return super().kind(path)

    view = Locked(
        {"/locked/x": "file", "/h/a": "file", "/h/locked": "-> /locked", "/h/d/x": "file"}
    )
    policy = policy_factory(filesystem={"read": ["/h", "/locked/x"]})
    with pytest.raises(PolicyError) as e:
        compile_report(policy, variables=context(), abi=7, view=view)
    assert e.value.address == "filesystem.read[1]"
    assert "cannot look at /locked/x" in str(e.value)
    # The same view, compiled purely: /h is narrowed around /h/d/x without the disk.
    denied = policy_factory(filesystem={"read": ["/h"], "deny": ["/h/d/x"]})
    plan = compile_report(denied, variables=context(), abi=7, view=view).plan
    assert fs_rules(plan) == {"/h/a": ["read_file"]}
