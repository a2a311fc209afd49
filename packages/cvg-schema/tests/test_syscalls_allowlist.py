"""The allowlist additions: policy `syscalls.mode`/`on_violation`, plan `seccomp.allow`,
observation `syscalls`; old messages dump (and digest) exactly as before."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from cvg_schema import Observation, Plan, Policy, digest


def test_deny_list_policy_dumps_as_before() -> None:
    policy = Policy.model_validate({"version": 1, "syscalls": {"allow": ["ptrace"]}})
    assert policy.syscalls.mode == "denylist"
    assert policy.model_dump(mode="json")["syscalls"] == {"allow": ["ptrace"]}
    same = Policy.model_validate(
        {"version": 1, "syscalls": {"allow": ["ptrace"], "mode": "denylist"}}
    )
    assert digest(policy) == digest(same)


def test_allowlist_policy_round_trips() -> None:
    data = {"mode": "allowlist", "allow": ["read", "exit_group"], "on_violation": "kill"}
    policy = Policy.model_validate({"version": 1, "syscalls": data})
    assert policy.model_dump(mode="json")["syscalls"] == data
    assert Policy.model_validate(policy.model_dump(mode="json", by_alias=True)) == policy
    assert digest(policy) != digest(Policy.model_validate({"version": 1}))


@pytest.mark.parametrize(
    "syscalls",
    [{"mode": "allow"}, {"on_violation": "trap"}, {"allow": ["not a name"]}],
)
def test_bad_syscalls_sections(syscalls: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Policy.model_validate({"version": 1, "syscalls": syscalls})


def test_plan_allow_list() -> None:
    plain = Plan.model_validate({"kind": "cvg.plan"})
    assert "allow" not in plain.model_dump(mode="json")["seccomp"]
    assert "on_violation" not in plain.model_dump(mode="json")["seccomp"]
    listed = Plan.model_validate(
        {"kind": "cvg.plan", "seccomp": {"allow": ["read"], "on_violation": "kill"}}
    )
    seccomp = listed.model_dump(mode="json")["seccomp"]
    assert seccomp["allow"] == ["read"] and seccomp["on_violation"] == "kill"


def test_observation_syscalls() -> None:
    base = {"kind": "cvg.observation", "argv": ["true"], "cwd": "/"}
    bare = Observation.model_validate(base)
    assert "syscalls" not in bare.model_dump(mode="json")
    counted = Observation.model_validate({**base, "syscalls": {"exit_group": 1, "read": 3}})
    assert counted.model_dump(mode="json")["syscalls"] == {"exit_group": 1, "read": 3}
    with pytest.raises(ValidationError):
        Observation.model_validate({**base, "syscalls": {"read": 0}})
