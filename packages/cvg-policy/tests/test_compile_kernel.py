"""Compiled plans on the real kernel: deny inside allow holds, as root and unprivileged.

Each test compiles a policy, prepares the plan in the test process (as cvg-exec does
before fork) and applies it in a forked child, which then tries things and reports
errno names. Every denial is paired with an oracle: the same access succeeds in an
unconfined child of the same identity, so EACCES is Landlock's doing and not the
file mode's.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cvg_kernel.plan import Prepared, prepare
from cvg_policy.compile import compile_policy
from cvg_policy.variables import context
from cvg_schema import Plan, dumps
from cvg_testing import needs_abi

pytestmark = needs_abi(1)

# Generous limits: the child is a fork of pytest, whose address space and descriptors
# may already be large; the test is about the filesystem, not the rlimits.
RESOURCES = {"memory_mb": 65536, "open_files": 4096, "processes": 4096}


def make_home(world: Path) -> Path:
    """A fake home that every identity could read without Landlock."""
    home = world / "home"
    for d in ("docs", ".ssh", ".config"):
        (home / d).mkdir(parents=True)
    (home / "notes.txt").write_text("notes\n")
    (home / "docs" / "a.txt").write_text("a\n")
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / ".ssh" / "known_hosts").write_text("host\n")
    (home / ".config" / "c").write_text("c\n")
    (home / "keylink").symlink_to(".ssh/id_rsa")  # a child symlink into the denied dir
    (home / "noteslink").symlink_to("notes.txt")  # and one that stays inside the grant
    for root, _dirs, files in os.walk(world):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return home


def as_plan_json(plan: Plan) -> dict[str, Any]:
    """The plan's Landlock layer alone: the supervisor that serves the held directories
    (seccomp ``paths``) is tested with cvg-run, which runs it."""
    data: dict[str, Any] = json.loads(dumps(plan))
    supervise = data["seccomp"].get("supervise") or []
    data["seccomp"]["supervise"] = [s for s in supervise if s != "paths"]
    return data


def probe(forkrun: SimpleNamespace, paths: dict[str, str]) -> dict[str, Any]:
    """A child function: read each path (a directory is listed) and report errno names."""

    def fn() -> dict[str, str]:
        out = {}
        for name, path in paths.items():
            if name.startswith("ls "):
                out[name] = forkrun.attempt(lambda p=path: os.listdir(p))
            else:
                out[name] = forkrun.attempt(forkrun.read_file(path))
        return out

    return fn  # type: ignore[return-value]


def confined(prepared: Prepared, fn: Any) -> Any:
    def run() -> Any:
        prepared.apply()
        return fn()

    return run


def run_confined(
    forkrun: SimpleNamespace, plan: Plan, fn: Any, user: pwd.struct_passwd | None
) -> Any:
    """The child that ran ``fn`` as ``user`` under ``plan`` (no variables bound)."""
    prepared = prepare(as_plan_json(plan), {})
    try:
        return forkrun.in_child(confined(prepared, fn), user=user)
    finally:
        prepared.close()


def test_deny_inside_allow_on_the_kernel(
    world_dir: Path,
    identity: pwd.struct_passwd | None,
    forkrun: SimpleNamespace,
    policy_factory: Any,
) -> None:
    home = make_home(world_dir)
    scratch = world_dir / "scratch"
    scratch.mkdir(mode=0o777)
    scratch.chmod(0o777)
    policy = policy_factory(
        filesystem={"read": ["${HOME}"], "write": ["${SCRATCH}"], "deny": ["${HOME}/.ssh"]},
        resources=RESOURCES,
    )
    plan = compile_policy(policy, variables=context(home=str(home)))
    assert plan.expansions and plan.expansions[0].denied == [str(home / ".ssh")]

    # Created after compilation, inside the expanded directory: no rule covers it.
    (home / "later.txt").write_text("later\n")
    (home / "later.txt").chmod(0o644)

    paths = {
        "id_rsa": str(home / ".ssh" / "id_rsa"),
        "known_hosts": str(home / ".ssh" / "known_hosts"),
        "ls .ssh": str(home / ".ssh"),
        "keylink": str(home / "keylink"),
        "notes": str(home / "notes.txt"),
        "noteslink": str(home / "noteslink"),
        "docs/a": str(home / "docs" / "a.txt"),
        "config": str(home / ".config" / "c"),
        "ls docs": str(home / "docs"),
        "later": str(home / "later.txt"),
        "etc": "/etc/hostname",
    }
    fn = probe(forkrun, paths)

    # Oracle: unconfined, this identity reads everything.
    oracle = forkrun.in_child(fn, user=identity)
    assert oracle.error is None, oracle.error
    assert set(oracle.value.values()) == {"OK"}, oracle.value

    prepared = prepare(as_plan_json(plan), {"SCRATCH": str(scratch)})
    try:
        assert prepared.notes == []

        def write_scratch() -> str:
            return forkrun.attempt(lambda: (scratch / "out").write_text("x"))

        def both() -> dict[str, str]:
            out = fn()
            out["write scratch"] = write_scratch()
            out["write home"] = forkrun.attempt(lambda: (home / "docs" / "new").write_text("x"))
            return out  # type: ignore[no-any-return]

        child = forkrun.in_child(confined(prepared, both), user=identity)
    finally:
        prepared.close()
    assert child.error is None, child.error
    assert child.value == {
        "id_rsa": "EACCES",
        "known_hosts": "EACCES",
        "ls .ssh": "EACCES",
        "keylink": "EACCES",  # resolves into the denied directory
        "notes": "OK",
        "noteslink": "OK",
        "docs/a": "OK",
        "config": "OK",
        "ls docs": "OK",
        # The documented cost: created in an expanded directory after compilation.
        "later": "EACCES",
        "etc": "EACCES",  # never granted
        "write scratch": "OK",  # ${SCRATCH} bound when applied
        "write home": "EACCES",  # read only
    }


def test_symlinked_grants_follow_their_target(
    world_dir: Path,
    identity: pwd.struct_passwd | None,
    forkrun: SimpleNamespace,
    policy_factory: Any,
) -> None:
    # /etc/resolv.conf -> /run/.../stub-resolv.conf and /lib -> usr/lib, in miniature.
    etc, run, usr = world_dir / "etc", world_dir / "run", world_dir / "usr" / "lib"
    for d in (etc, run, usr):
        d.mkdir(parents=True)
    (run / "stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (run / "other").write_text("other\n")
    (usr / "libc.so").write_text("elf\n")
    (etc / "resolv.conf").symlink_to(run / "stub-resolv.conf")
    (world_dir / "lib").symlink_to("usr/lib")
    for root, _dirs, files in os.walk(world_dir):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    policy = policy_factory(
        filesystem={"read": [f"{etc}/resolv.conf", f"{world_dir}/lib"]}, resources=RESOURCES
    )
    plan = compile_policy(policy, variables=context())
    assert {r.path for r in plan.landlock.fs_rules} == {
        str(run / "stub-resolv.conf"),
        str(usr),
    }
    fn = probe(
        forkrun,
        {
            "resolv.conf": f"{etc}/resolv.conf",
            "stub": str(run / "stub-resolv.conf"),
            "other": str(run / "other"),
            "lib/libc": f"{world_dir}/lib/libc.so",
            "usr/lib/libc": str(usr / "libc.so"),
        },
    )
    oracle = forkrun.in_child(fn, user=identity)
    assert set(oracle.value.values()) == {"OK"}, (oracle.value, oracle.error)
    child = run_confined(forkrun, plan, fn, identity)
    assert child.error is None, child.error
    assert child.value == {
        "resolv.conf": "OK",
        "stub": "OK",
        "other": "EACCES",
        "lib/libc": "OK",
        "usr/lib/libc": "OK",
    }


def test_no_network_policy_denies_inet_sockets(
    identity: pwd.struct_passwd | None, forkrun: SimpleNamespace, policy_factory: Any
) -> None:
    import socket

    plan = compile_policy(policy_factory(resources=RESOURCES), variables=context())

    def fn() -> dict[str, str]:
        def make(family: int, kind: int) -> None:
            socket.socket(family, kind).close()

        return {
            "tcp": forkrun.attempt(lambda: make(socket.AF_INET, socket.SOCK_STREAM)),
            "udp6": forkrun.attempt(lambda: make(socket.AF_INET6, socket.SOCK_DGRAM)),
            "unix": forkrun.attempt(lambda: make(socket.AF_UNIX, socket.SOCK_STREAM)),
            "socketpair": forkrun.attempt(lambda: [s.close() for s in socket.socketpair()]),
        }

    oracle = forkrun.in_child(fn, user=identity)
    assert oracle.value == {"tcp": "OK", "udp6": "OK", "unix": "OK", "socketpair": "OK"}
    child = run_confined(forkrun, plan, fn, identity)
    assert child.error is None, child.error
    assert child.value == {
        "tcp": "EAFNOSUPPORT",
        "udp6": "EAFNOSUPPORT",
        "unix": "EAFNOSUPPORT",
        "socketpair": "OK",
    }
