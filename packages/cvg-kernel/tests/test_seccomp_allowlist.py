"""seccomp allow lists (``seccomp.allow``, ``seccomp.on_violation``): the program checked
against an independent reading of the spec on x86_64 and aarch64, and on the real
kernel, as root and as an unprivileged user."""

from __future__ import annotations

import errno
import json
import os
import pwd
import resource
import signal
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bpf import AUDIT, DEFAULT_SPEC, KILL_PROCESS, err, nrs, reference, specs, u64_args
from test_seccomp import ARCH, NR, confine, in_grandchild, probe, sc

from cvg_kernel.bpf import evaluate, validate
from cvg_kernel.plan import PlanError, prepare
from cvg_kernel.seccomp import Filter, SeccompError, build_program
from cvg_kernel.syscall_table import TABLES
from cvg_testing import attempt, in_child


def allow_reference(
    arch: str, spec: Mapping[str, Any], nr: int, audit_arch: int, args: Sequence[int]
) -> int:
    """What docs/plan-format.md says an allow-list program answers."""
    base = reference(arch, spec, nr, audit_arch, args)
    allow = spec.get("allow")
    if allow is None:
        return base
    numbers = TABLES[arch]
    n = nr & 0xFFFFFFFF
    names = {name for name, number in numbers.items() if number == n}
    decided = set(spec["kill"]) | set(spec["enosys"]) | set(spec["deny"])
    past = n > max(numbers.values()) or (arch == "x86_64" and n >= 0x40000000)
    if audit_arch != AUDIT[arch] or past or names & decided:
        return base  # a foreign arch, x32, a number past the table, or a list decided it
    # A hole in the table (x86_64's 134, once uselib) has no name, so it is not listed.
    if names & set(allow):
        return base  # listed: the argument filters still apply
    if spec.get("on_violation", "errno") == "kill":
        return KILL_PROCESS
    return err(getattr(errno, spec["deny_errno"]))


def _build(arch: str, spec: Mapping[str, Any]) -> list[tuple[int, int, int, int]]:
    return build_program(arch, **spec)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_reference_of_a_small_list(arch: str) -> None:
    # The oracle itself, by hand: listed allowed, unlisted refused, lists still first.
    t = TABLES[arch]
    spec = dict(DEFAULT_SPEC, allow=["read", "socket", "ptrace", "clone3"])
    a = AUDIT[arch]
    assert allow_reference(arch, spec, t["read"], a, [0] * 6) == 0x7FFF0000
    assert allow_reference(arch, spec, t["getpid"], a, [0] * 6) == err(errno.EPERM)
    assert allow_reference(arch, spec, t["ptrace"], a, [0] * 6) == err(errno.EPERM)
    assert allow_reference(arch, spec, t["clone3"], a, [0] * 6) == err(errno.ENOSYS)
    assert allow_reference(arch, spec, t["socket"], a, [16, 3, 0]) == err(errno.EAFNOSUPPORT)
    killing = dict(spec, on_violation="kill")
    assert allow_reference(arch, killing, t["getpid"], a, [0] * 6) == KILL_PROCESS


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("violation", ["errno", "kill"])
def test_every_number_with_a_runtime_sized_list(arch: str, violation: str) -> None:
    names = sorted(TABLES[arch])
    allow = names[::2]  # every other call: many short runs, the worst case for the tree
    spec = dict(DEFAULT_SPEC, allow=allow, on_violation=violation)
    prog = _build(arch, spec)
    validate(prog)
    top = max(TABLES[arch].values())
    for nr in [*range(top + 3), 0x40000000, 0xFFFFFFFF]:
        for args in ([0] * 6, [16, 3, 0, 0, 0, 0], [1, 0x7E020080, 0x5412, 0x20000000, 0, 0]):
            got = evaluate(prog, nr, AUDIT[arch], args)
            assert got == allow_reference(arch, spec, nr, AUDIT[arch], args), (nr, args)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@given(data=st.data())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_allow_list_matches_reference(arch: str, data: st.DataObject) -> None:
    spec = data.draw(specs(arch), label="spec")
    names = sorted(TABLES[arch])
    spec["allow"] = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=360))
    spec["on_violation"] = data.draw(st.sampled_from(["errno", "kill"]))
    prog = _build(arch, spec)
    validate(prog)
    assert all(jt <= 255 and jf <= 255 for _, jt, jf, _ in prog)
    listed = [TABLES[arch][n] for n in spec["allow"]] or [0]
    for _ in range(25):
        nr = data.draw(st.one_of(nrs(arch), st.sampled_from(listed)))
        audit = data.draw(st.sampled_from([AUDIT[arch], AUDIT[arch], 0x40000003]))
        args = data.draw(u64_args)
        assert evaluate(prog, nr, audit, args) == allow_reference(arch, spec, nr, audit, args)


def test_an_empty_list_allows_nothing() -> None:
    prog = build_program("x86_64", allow=[])
    for name in ("read", "exit_group", "getpid"):
        assert evaluate(prog, TABLES["x86_64"][name], AUDIT["x86_64"], [0] * 6) == err(1)


def test_spec_errors() -> None:
    with pytest.raises(SeccompError, match="allow: unknown syscall 'nope'"):
        build_program("x86_64", allow=["read", "nope"])
    with pytest.raises(SeccompError, match="on_violation must be one of errno, kill"):
        build_program("x86_64", allow=["read"], on_violation="trap")
    with pytest.raises(SeccompError, match="list of names"):
        build_program("x86_64", allow="read")
    # x86-only names are skipped on aarch64, as in deny: one list serves both.
    assert "iopl" in Filter.build("aarch64", allow=["read", "iopl"], deny=[]).skipped


def test_plan_keys() -> None:
    plan = {"kind": "cvg.plan", "schema_version": "1.0", "arch": ARCH}
    plain = prepare({**plan, "landlock": {"required": False}}).filter.errno_program
    listed = prepare(
        {**plan, "landlock": {"required": False}, "seccomp": {"allow": ["read"]}}
    ).filter.errno_program
    assert evaluate(plain, NR["getpid"], AUDIT[ARCH], [0] * 6) == 0x7FFF0000
    assert evaluate(listed, NR["getpid"], AUDIT[ARCH], [0] * 6) == err(errno.EPERM)
    null = prepare({**plan, "landlock": {"required": False}, "seccomp": {"allow": None}})
    assert null.filter.errno_program == plain
    with pytest.raises(PlanError, match=r"\$.seccomp.allow: must be a list of strings"):
        prepare({**plan, "seccomp": {"allow": "read"}})
    with pytest.raises(PlanError, match="on_violation must be one of"):
        prepare({**plan, "seccomp": {"allow": ["read"], "on_violation": "log"}})


def test_notifying_variant_reports_unlisted_calls() -> None:
    # Unlisted calls go to the supervisor (USER_NOTIF) with their errno computed from the
    # plain program; a kill stays a kill.
    flt = Filter.build(ARCH, allow=sorted(set(NR) - {"getppid"}))
    notifying = flt.with_listener()
    data = [0] * 6
    assert evaluate(notifying.instructions, NR["getppid"], AUDIT[ARCH], data) == 0x7FC00000
    assert evaluate(notifying.errno_program, NR["getppid"], AUDIT[ARCH], data) == err(1)
    killing = Filter.build(ARCH, allow=["read"], on_violation="kill").with_listener()
    assert evaluate(killing.instructions, NR["getppid"], AUDIT[ARCH], data) == KILL_PROCESS


# ------------------------------------------------------------------------ real kernel

EVERYTHING_BUT = sorted(set(NR) - {"getppid", "getpgrp"})


def test_unlisted_call_gets_eperm(identity: pwd.struct_passwd | None) -> None:
    flt = Filter.build(allow=EVERYTHING_BUT)

    def calls() -> list[int]:
        return [attempt(lambda: sc("getppid")), attempt(lambda: sc("getpid"))]

    assert probe(calls, identity, None) == [0, 0]
    assert probe(calls, identity, flt) == [errno.EPERM, 0]


def test_unlisted_call_kills_with_sigsys(identity: pwd.struct_passwd | None) -> None:
    flt = Filter.build(allow=EVERYTHING_BUT, on_violation="kill")

    def call() -> int:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        return sc("getpgrp")

    assert probe(call, identity, None) > 0
    child = in_child(lambda: (confine(flt), call()), user=identity)
    assert child.signal == signal.SIGSYS, (child.status, child.error)


def test_a_narrow_list_on_the_kernel(identity: pwd.struct_passwd | None) -> None:
    # Four calls in all: the process can ask for its pid and exit, and nothing else.
    flt = Filter.build(allow=["getpid", "exit_group", "exit", "write"])
    r, w = os.pipe()

    def body() -> int:
        confine(flt)
        first = attempt(lambda: sc("getpid"))
        second = attempt(lambda: sc("getppid"))
        third = attempt(lambda: sc("getuid"))
        os.write(w, json.dumps([first, second, third]).encode())
        return 0

    def unconfined() -> int:
        return in_grandchild(lambda: attempt(lambda: sc("getuid")))

    assert probe(unconfined, identity, None) == 0
    child = in_child(lambda: in_grandchild(body), user=identity)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        seen = json.loads(f.read() or b"null")
    assert child.value == 0, child.error
    assert seen == [0, errno.EPERM, errno.EPERM]
