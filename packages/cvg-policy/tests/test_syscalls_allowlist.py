"""syscalls.mode: allowlist through cvg-validate: checks, --accept-risk, the compiled
plan, the explanation and the YAML written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clihelp import Invoke, PolicyFile
from test_cli import facts_fixture

from cvg_kernel.bpf import evaluate
from cvg_kernel.seccomp import DEFAULT_DENY, LAUNCHER_ALLOW, Filter
from cvg_policy.compile import compile_policy
from cvg_policy.variables import context
from cvg_schema import Policy

ALLOWLIST = """\
version: 1
syscalls:
  mode: allowlist
  allow: [read, write, ptrace, exit_group, clone3]
  on_violation: kill
"""
X86 = 0xC000003E


def _plan(policy: Policy, **kw: bool) -> dict[str, object]:
    plan = compile_policy(policy, variables=context(cwd="/"), abi=6, **kw)
    return dict(plan.model_dump(mode="json")["seccomp"])


def test_deny_list_mode_compiles_as_before() -> None:
    seccomp = _plan(Policy.model_validate({"version": 1, "syscalls": {"allow": ["ptrace"]}}))
    assert "allow" not in seccomp and "on_violation" not in seccomp
    assert "ptrace" not in seccomp["deny"]  # type: ignore[operator]


def test_allowlist_plan_adds_the_launcher_and_keeps_the_deny_list() -> None:
    policy = Policy.model_validate(
        {"version": 1, "syscalls": {"mode": "allowlist", "allow": ["read", "ptrace"]}}
    )
    seccomp = _plan(policy)
    allow = set(seccomp["allow"])  # type: ignore[arg-type]
    assert "read" in allow and "ptrace" not in allow
    assert {n for n in LAUNCHER_ALLOW if n != "dup2"} <= allow
    assert list(seccomp["deny"]) == list(DEFAULT_DENY)  # type: ignore[call-overload]
    assert seccomp["on_violation"] == "errno"
    risky = _plan(policy, accept_risk=True)
    assert "ptrace" in risky["allow"] and "ptrace" not in risky["deny"]  # type: ignore[operator]


def test_the_compiled_program_refuses_what_is_not_listed() -> None:
    policy = Policy.model_validate(
        {"version": 1, "syscalls": {"mode": "allowlist", "allow": ["read", "getpid"]}}
    )
    seccomp = _plan(policy)
    spec = {k: v for k, v in seccomp.items() if k != "sockets"}
    flt = Filter.build("x86_64", **spec)
    from cvg_kernel.syscall_table import TABLES

    t = TABLES["x86_64"]
    assert evaluate(flt.errno_program, t["getpid"], X86, [0] * 6) == 0x7FFF0000
    assert evaluate(flt.errno_program, t["getppid"], X86, [0] * 6) == 0x00050001
    assert evaluate(flt.errno_program, t["ptrace"], X86, [0] * 6) == 0x00050001


@pytest.fixture
def allowlisted(policy_file: PolicyFile, tmp_path: Path) -> tuple[Path, Path]:
    """The allowlist policy and ABI 6 facts, as files."""
    path = policy_file(ALLOWLIST)
    facts = tmp_path / "facts.json"
    facts.write_text(facts_fixture(6).model_dump_json())
    return path, facts


def test_cli_warns_and_accept_risk_opens(cli: Invoke, allowlisted: tuple[Path, Path]) -> None:
    path, facts = allowlisted
    r = cli([str(path)])
    assert r.status == 0
    assert any(
        line.startswith(
            f"{path}:4: syscalls.allow[2]: warning: ptrace is on the default deny "
            "list and stays denied in allowlist mode"
        )
        for line in r.err_lines
    ), r.err
    assert any("clone3 is answered ENOSYS" in line for line in r.err_lines)
    assert "mode: allowlist" in r.out and "on_violation: kill" in r.out
    assert Policy.model_validate(__import__("yaml").safe_load(r.out)).syscalls.mode == "allowlist"

    r = cli(["--compile", "--facts", str(facts), str(path)])
    assert r.status == 0, r.err
    seccomp = json.loads(r.out)["seccomp"]
    assert "ptrace" not in seccomp["allow"] and "ptrace" in seccomp["deny"]
    assert seccomp["on_violation"] == "kill"

    r = cli(["--accept-risk", "--compile", "--facts", str(facts), str(path)])
    assert r.status == 0, r.err
    seccomp = json.loads(r.out)["seccomp"]
    assert "ptrace" in seccomp["allow"] and "ptrace" not in seccomp["deny"]
    assert any("warning: allowing ptrace opens" in line for line in r.err_lines), r.err


def test_cli_explain_names_the_mode(cli: Invoke, allowlisted: tuple[Path, Path]) -> None:
    path, facts = allowlisted
    r = cli(["--explain", "--format", "json", "--facts", str(facts), str(path)])
    assert r.status == 0, r.err
    rules = {rule["address"]: rule for rule in json.loads(r.out)["rules"]}
    assert "kills the process" in rules["syscalls.allow"]["mechanism"]
    assert "stays denied" in rules["syscalls.allow[2]"]["note"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "version: 1\nsyscalls:\n  on_violation: kill\n",
            "syscalls.on_violation: warning: on_violation applies only with mode: allowlist",
        ),
        (
            "version: 1\nsyscalls:\n  mode: allowlist\n",
            "syscalls.allow: warning: allowlist mode with an empty allow list",
        ),
        (
            "version: 1\nsyscalls:\n  mode: allowlist\n  allow: [red]\n",
            "syscalls.allow[0]: error: unknown system call 'red'",
        ),
    ],
)
def test_cli_findings(policy_file: PolicyFile, cli: Invoke, text: str, message: str) -> None:
    path = policy_file(text)
    r = cli([str(path)])
    assert any(message in line for line in r.err_lines), r.err
    assert r.status == (1 if "unknown" in message else 0)


def test_bad_mode_is_one_line_with_the_line_number(policy_file: PolicyFile, cli: Invoke) -> None:
    path = policy_file("version: 1\nsyscalls:\n  mode: allow\n")
    r = cli([str(path)])
    assert r.status == 1
    assert len(r.err_lines) == 1 and r.err_lines[0].startswith(f"{path}:3: syscalls.mode"), r.err
