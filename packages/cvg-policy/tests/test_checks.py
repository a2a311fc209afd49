"""check(): variables, paths, syscall names and risky grants, each a Finding with a line."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

import pytest

from cvg_kernel.seccomp import DEFAULT_DENY
from cvg_policy.checks import DENY_REASONS, RISKY_PORTS, check, errors, warnings
from cvg_policy.errors import Finding
from cvg_policy.load import LoadedPolicy, load_policy
from cvg_schema.policy import Filesystem


def run_check(
    text: str,
    variables: Mapping[str, str] | None = None,
    *,
    strict: bool = False,
    arch: str = "x86_64",
    env: Mapping[str, str] | None = None,
    abi: int | None = None,
) -> list[Finding]:
    loaded = load_policy(text, filename="p.yaml")
    return check(
        loaded,
        variables=variables if variables is not None else {},
        strict=strict,
        arch=arch,
        env=env if env is not None else {},
        abi=abi,
    )


def only(findings: list[Finding], needle: str) -> list[Finding]:
    return [f for f in findings if needle in f.message]


def test_a_clean_policy_has_no_findings(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "tool").write_text("#!/bin/sh\n")
    text = f"""\
version: 1
filesystem:
  read: [{tmp_path}/data, "${{CWD}}"]
  write: ["${{SCRATCH}}"]
  execute: [{tmp_path}/tool]
network:
  tcp_connect: [443, 80]
environment:
  set: {{HOME: "${{SCRATCH}}", PATH: /usr/bin}}
  pass: [LANG, TERM]
resources: {{memory_mb: 1024}}
"""
    assert run_check(text, {"CWD": str(tmp_path)}) == []


def test_missing_path_is_a_warning_or_an_error_with_strict(tmp_path: Path) -> None:
    text = f"version: 1\nfilesystem:\n  read:\n    - /usr\n    - {tmp_path}/nope\n"
    (finding,) = [f for f in run_check(text) if "does not exist" in f.message]
    assert finding.severity == "warning"
    assert (finding.address, finding.line, finding.file) == ("filesystem.read[1]", 5, "p.yaml")
    assert str(finding) == f"p.yaml:5: filesystem.read[1]: warning: {tmp_path}/nope does not exist"
    (strict,) = errors(run_check(text, strict=True))
    assert strict.address == "filesystem.read[1]"


def test_a_missing_deny_path_is_not_reported(tmp_path: Path) -> None:
    assert run_check(f"version: 1\nfilesystem:\n  deny: [{tmp_path}/nope]\n") == []


def test_variables_are_expanded_before_the_path_is_checked(tmp_path: Path) -> None:
    text = 'version: 1\nfilesystem:\n  read: ["${CWD}/src", "${POLICY_DIR}"]\n'
    (finding,) = run_check(text, {"CWD": str(tmp_path), "POLICY_DIR": str(tmp_path)})
    assert finding.message == f"${{CWD}}/src ({tmp_path}/src) does not exist"
    (tmp_path / "src").mkdir()
    assert run_check(text, {"CWD": str(tmp_path), "POLICY_DIR": str(tmp_path)}) == []


def test_scratch_is_late_bound_and_never_checked() -> None:
    text = 'version: 1\nfilesystem:\n  write: ["${SCRATCH}/deep/er"]\n'
    assert run_check(text, {}) == []


def test_a_variable_without_a_value_is_reported() -> None:
    text = 'version: 1\nfilesystem:\n  read: ["${POLICY_DIR}/data"]\n'
    (w,) = run_check(text, {"CWD": "/"})
    assert w.severity == "warning" and "${POLICY_DIR} has no value" in w.message
    (e,) = run_check(text, {"CWD": "/"}, strict=True)
    assert e.severity == "error"


def test_an_unknown_variable_is_an_error_even_past_the_schema() -> None:
    loaded = load_policy("version: 1\nfilesystem:\n  read: [/usr]\n", filename="p.yaml")
    # The schema refuses unknown variables; check() must too, for a policy built in code.
    fs = Filesystem.model_construct(read=["${NOPE}/x"], write=[], execute=[], deny=[])
    bad = LoadedPolicy(
        loaded.policy.model_copy(update={"filesystem": fs}), "p.yaml", None, loaded.lines
    )
    (e,) = check(bad, variables={"CWD": "/"}, env={})
    assert e.severity == "error"
    assert e.message.startswith("unknown variable ${NOPE}")
    assert (e.address, e.line) == ("filesystem.read[0]", 3)


def test_symlinks_are_followed(tmp_path: Path) -> None:
    (tmp_path / "usr" / "lib").mkdir(parents=True)
    (tmp_path / "lib").symlink_to("usr/lib")
    (tmp_path / "dangling").symlink_to("/nonexistent/target")
    # Like /etc/resolv.conf -> /run/systemd/resolve/stub-resolv.conf: an absolute target.
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (tmp_path / "resolv.conf").symlink_to(tmp_path / "run" / "stub-resolv.conf")
    text = (
        f"version: 1\nfilesystem:\n  read: [{tmp_path}/lib, {tmp_path}/dangling, "
        f"{tmp_path}/resolv.conf]\n"
    )
    (finding,) = run_check(text)
    assert finding.address == "filesystem.read[1]"
    assert "is a symlink to /nonexistent/target, which does not exist" in finding.message


@pytest.mark.skipif(not os.path.islink("/lib"), reason="/lib is not a symlink here")
def test_host_symlinks_like_lib_are_fine() -> None:
    text = "version: 1\nfilesystem:\n  read: [/lib, /bin]\n"
    assert run_check(text) == []


def test_unknown_syscall_is_an_error_with_a_suggestion() -> None:
    (e,) = run_check("version: 1\nsyscalls:\n  allow:\n    - ptrac\n")
    assert e.severity == "error"
    assert e.message == "unknown system call 'ptrac' on x86_64 (did you mean 'ptrace'?)"
    assert (e.address, e.line) == ("syscalls.allow[0]", 4)


def test_syscall_names_are_checked_for_the_given_arch() -> None:
    text = "version: 1\nsyscalls:\n  allow: [open]\n"
    assert errors(run_check(text, arch="x86_64")) == []
    (e,) = errors(run_check(text, arch="aarch64"))
    assert "on aarch64" in e.message
    # x86-only names on the deny list are not unknown on aarch64: the deny list names them.
    assert errors(run_check("version: 1\nsyscalls:\n  allow: [iopl]\n", arch="aarch64")) == []
    (w,) = run_check(text, arch="riscv64")
    assert w.severity == "warning" and "no syscall table for riscv64" in w.message


def test_every_deny_list_call_has_its_own_reason_once() -> None:
    """The deny list and its reasons share one source (cvg_kernel.seccomp.DENY_GROUPS):
    no call may sit in two groups, and no reason may be empty."""
    from cvg_kernel.seccomp import DENY_GROUPS

    names = [n for group, _ in DENY_GROUPS for n in group]
    assert len(names) == len(set(names)) == len(DEFAULT_DENY)
    assert all(reason.strip() for _, reason in DENY_GROUPS)


@pytest.mark.parametrize("name", ["ptrace", "bpf", "mount", "open_by_handle_at", "keyctl"])
def test_allowing_a_denied_call_says_what_it_opens(name: str) -> None:
    (w,) = run_check(f"version: 1\nsyscalls:\n  allow: [{name}]\n")
    assert w.severity == "warning"
    assert w.message == f"allowing {name} opens what the deny list closes: {DENY_REASONS[name]}"


@pytest.mark.parametrize("name", ["getpid", "clone3"])
def test_allowing_a_call_that_is_not_denied_changes_nothing(name: str) -> None:
    (w,) = run_check(f"version: 1\nsyscalls:\n  allow: [{name}]\n")
    assert w.severity == "warning" and "changes nothing" in w.message


@pytest.mark.parametrize("tree", ["/", "/etc", "/usr", "/proc", "/sys", "/dev", "/run"])
def test_writing_a_system_tree_is_a_warning(tree: str) -> None:
    findings = run_check(f"version: 1\nfilesystem:\n  write: ['{tree}']\n")
    (w,) = only(findings, "as a whole")
    assert w.severity == "warning"
    assert w.message.startswith(f"writes {tree} as a whole: ")
    assert w.address == "filesystem.write[0]"


def test_writing_beneath_a_system_tree_is_not_that_warning(tmp_path: Path) -> None:
    findings = run_check("version: 1\nfilesystem:\n  write: [/etc/cvg-test-nonexistent]\n")
    assert only(findings, "as a whole") == []


def test_writing_what_resolves_to_a_system_tree_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "innocent").symlink_to("/etc")
    (w,) = only(run_check(f"version: 1\nfilesystem:\n  write: [{tmp_path}/innocent]\n"), "whole")
    assert w.message.startswith(f"writes {tmp_path}/innocent (resolves to /etc) as a whole")


def test_writing_the_whole_home_is_a_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    variables = {"HOME": str(home), "CWD": str(home)}
    (w,) = run_check('version: 1\nfilesystem:\n  write: ["${HOME}"]\n', variables)
    assert "the whole home directory" in w.message
    (w,) = run_check(f"version: 1\nfilesystem:\n  write: [{home}/]\n", variables)
    assert "the whole home directory" in w.message
    assert run_check('version: 1\nfilesystem:\n  write: ["${HOME}/project"]\n', variables) == []


@pytest.mark.parametrize(
    "value",
    [
        "${HOME}/.bashrc",
        "${HOME}/.local/bin",
        "${HOME}/.config/autostart",
        "${HOME}/.cache/cvg",
        "${HOME}/.cache/cvg/plans",
        "${CWD}/.git/config",
        "${CWD}/.git/hooks",
        "${CWD}/.vscode",
        "${CWD}/.mcp.json",
    ],
)
def test_writing_a_protected_path_is_a_warning(tmp_path: Path, value: str) -> None:
    variables = {"HOME": str(tmp_path / "home"), "CWD": str(tmp_path / "work")}
    found = only(
        run_check(f'version: 1\nfilesystem:\n  write: ["{value}"]\n', variables),
        "a protected path",
    )
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].message.startswith(f"writes {value}") and "a protected path" in found[0].message
    assert found[0].address == "filesystem.write[0]" and found[0].line == 3


def test_protected_paths_under_xdg_and_by_reading_are_judged_as_such(tmp_path: Path) -> None:
    variables = {"HOME": str(tmp_path / "home")}
    cache = tmp_path / "xdg-cache"
    text = f"version: 1\nfilesystem:\n  write: [{cache}/cvg]\n"
    assert only(run_check(text, variables, env={"XDG_CACHE_HOME": str(cache)}), "a protected path")
    assert not only(run_check(text, variables), "a protected path")
    # Reading one is what git and a shell do: no warning.
    text = 'version: 1\nfilesystem:\n  read: ["${HOME}/.bashrc"]\n'
    assert not only(run_check(text, variables), "a protected path")


@pytest.mark.parametrize("sock", ["/var/run/docker.sock", "/run/docker.sock"])
@pytest.mark.parametrize("field", ["read", "write", "execute"])
def test_the_docker_socket_in_any_grant_is_a_warning(sock: str, field: str) -> None:
    findings = run_check(f"version: 1\nfilesystem:\n  {field}: [{sock}]\n")
    (w,) = only(findings, "docker socket")
    assert w.message.startswith(f"{field} grant on {sock}: the docker socket")
    assert w.address == f"filesystem.{field}[0]"


def test_the_ssh_agent_socket_and_its_directory(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    path = agent_dir / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        env = {"SSH_AUTH_SOCK": str(path)}
        (w,) = run_check(f"version: 1\nfilesystem:\n  read: [{path}]\n", env=env)
        assert "ssh-agent socket ($SSH_AUTH_SOCK)" in w.message
        (w,) = run_check(f"version: 1\nfilesystem:\n  write: [{agent_dir}]\n", env=env)
        assert "ssh-agent socket's directory" in w.message
        # A grant on a tree that holds the agent's socket reaches it too.
        (w,) = run_check(f"version: 1\nfilesystem:\n  read: [{tmp_path}]\n", env=env)
        assert f"which holds {agent_dir}" in w.message
        # Without the agent in the environment, the same tree is just a directory.
        assert run_check(f"version: 1\nfilesystem:\n  read: [{tmp_path}]\n", env={}) == []
    finally:
        server.close()


def test_tmp_ssh_directories_are_agent_sockets() -> None:
    findings = run_check("version: 1\nfilesystem:\n  read: [/tmp/ssh-XXXXabcd/agent.42]\n")
    (w,) = only(findings, "ssh-agent")
    assert w.address == "filesystem.read[0]"


def test_write_and_execute_on_the_same_tree(tmp_path: Path) -> None:
    (tmp_path / "out" / "bin").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    text = f"""\
version: 1
filesystem:
  write: [{tmp_path}/out]
  execute:
    - {tmp_path}/bin
    - {tmp_path}/out/bin
"""
    findings = run_check(text)
    (w,) = only(findings, "overlaps write")
    assert (w.address, w.line) == ("filesystem.execute[1]", 6)
    assert "filesystem.write[0]" in w.message
    (nested,) = only(findings, "inside the write grant")
    assert nested.address == "filesystem.execute[1]" and "symlink" in nested.message
    outer = f"version: 1\nfilesystem:\n  write: [{tmp_path}/out/bin]\n  execute: [{tmp_path}]\n"
    assert len(only(run_check(outer), "overlaps")) == 1
    late = 'version: 1\nfilesystem:\n  write: ["${SCRATCH}"]\n  execute: ["${SCRATCH}/x"]\n'
    assert len(only(run_check(late), "overlaps")) == 1


@pytest.mark.parametrize("port", sorted(RISKY_PORTS))
def test_exfiltration_ports_are_warnings(port: int) -> None:
    (w,) = run_check(f"version: 1\nnetwork:\n  tcp_connect: [443, {port}]\n")
    assert w.address == "network.tcp_connect[1]"
    assert w.message == f"may connect to port {port} on any host: {RISKY_PORTS[port]}"


def test_ordinary_ports_and_bind_wording() -> None:
    assert run_check("version: 1\nnetwork:\n  tcp_connect: [80, 443, 8443]\n") == []
    (w,) = run_check("version: 1\nnetwork:\n  tcp_bind: [4444]\n")
    assert w.message.startswith("may listen on port 4444")


def test_unix_sockets_below_abi_9() -> None:
    text = "version: 1\nnetwork:\n  unix: true\n"
    (w,) = run_check(text)
    assert (w.address, w.line) == ("network.unix", 3)
    assert "D-Bus" in w.message and "ABI 9" in w.message
    assert run_check(text, abi=4) == [w]
    assert run_check(text, abi=9) == []


def test_udp_signals_and_secrets() -> None:
    text = """\
version: 1
network:
  udp: true
ipc:
  signal_outside: true
environment:
  pass: [LANG, GITHUB_TOKEN, SSH_AUTH_SOCK, AWS_SECRET_ACCESS_KEY]
"""
    findings = run_check(text)
    assert [f.address for f in findings] == [
        "network.udp",
        "ipc.signal_outside",
        "environment.pass[1]",
        "environment.pass[2]",
        "environment.pass[3]",
    ]
    assert all(f.severity == "warning" for f in findings)
    assert warnings(findings) == findings


def test_a_secret_written_into_environment_set_is_warned_about() -> None:
    text = "version: 1\nenvironment:\n  set:\n    MODE: fast\n    GITHUB_TOKEN: ghp_x\n"
    (w,) = run_check(text)
    assert (w.address, w.line, w.severity) == ("environment.set.GITHUB_TOKEN", 5, "warning")
    assert "environment.pass" in w.message


def test_findings_carry_the_file_and_line() -> None:
    text = "version: 1\nnetwork:\n  tcp_connect:\n    - 443\n    - 25\n"
    (w,) = run_check(text)
    assert str(w) == (
        "p.yaml:5: network.tcp_connect[1]: warning: may connect to port 25 on any host: "
        + RISKY_PORTS[25]
    )


def test_a_grant_nested_in_a_write_grant_is_warned_about(tmp_path: Path) -> None:
    (tmp_path / "work" / "data").mkdir(parents=True)
    text = f"version: 1\nfilesystem:\n  write: [{tmp_path}/work]\n  read: [{tmp_path}/work/data]\n"
    (w,) = run_check(text)
    assert w.address == "filesystem.read[0]" and "refuses to run (125)" in w.message
    apart = f"version: 1\nfilesystem:\n  write: [{tmp_path}/work]\n  read: [{tmp_path}]\n"
    assert only(run_check(apart), "inside the write grant") == []
