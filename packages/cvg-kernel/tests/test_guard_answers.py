"""What a guard of the ``paths`` and ``unix`` groups can answer, on the real kernel: a
descriptor of the supervisor's placed in the tool's table (SECCOMP_IOCTL_NOTIF_ADDFD),
a value returned, and a refusal for a supervised call nobody gave a guard for.

The tool runs in a forked child, as root and as the unprivileged user, under a plan
whose Landlock rules grant no read of the canary; the canary's content coming back
proves the descriptor is the supervisor's, opened where the tool could not. Bare, the
tool reads it itself (the test's premise).
"""

from __future__ import annotations

import ctypes
import errno
import os
import pwd
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_notify import ARCH, plan_with, run_tool, sc

from cvg_kernel.guard import Performed
from cvg_kernel.notify import Serving, receive_listener
from cvg_testing import shared_dir

CANARY = b"canary-7f3e"


@pytest.fixture
def canary() -> Iterator[Path]:
    with shared_dir("cvg-answers-") as d:  # pytest's tmp_path is 0700 root
        path = d / "canary.txt"
        path.write_bytes(CANARY)
        path.chmod(0o644)
        yield path


def confined_plan(tmp_path: Path, group: str) -> dict[str, Any]:
    plan = plan_with(supervise=[group])
    # Read everything but the canary's directory: /usr, /lib and the like suffice to
    # run the forked interpreter, which has imported all it needs.
    rules = [
        {"path": p, "access": ["read_file", "read_dir", "execute"]}
        for p in ("/usr", "/lib", "/lib64", "/etc", "/proc", "/dev")
        if os.path.exists(p)
    ]
    plan["landlock"] = {"fs_rules": rules}
    return plan


def serve_with(plan: dict[str, Any], group: str, guards: dict[str, Any],
               calls: list[Any]) -> Callable[[int, int], None]:  # fmt: skip
    def supervisor(sock_fd: int, pid: int) -> None:
        from cvg_kernel.plan import prepare

        program = prepare(plan, {}).filter.errno_program
        listener = receive_listener(sock_fd, timeout=10)
        os.close(sock_fd)
        Serving(listener, program, ARCH, calls.append, supervised=[group], guards=guards)

    return supervisor


def reader(path: str) -> Callable[[], list[Any]]:
    def tool() -> list[Any]:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            return ["refused", e.errno]
        try:
            flags = __import__("fcntl").fcntl(fd, 1)  # F_GETFD: was O_CLOEXEC asked for?
            return [os.read(fd, 100).decode(), flags]
        finally:
            os.close(fd)

    return tool


def test_an_injected_descriptor_reaches_the_tool(
    identity: pwd.struct_passwd | None, canary: Path, tmp_path: Path
) -> None:
    bare = run_tool(reader(str(canary)), identity, "bare")
    assert bare.value[0] == CANARY.decode()
    plan = confined_plan(tmp_path, "paths")
    landlock_only = {**plan, "seccomp": {}}
    plain = run_tool(reader(str(canary)), identity, "plain", plan=landlock_only)
    assert plain.value == ["refused", errno.EACCES]  # Landlock alone keeps it out

    def openat(tid: int, args: tuple[int, ...], pending: Callable[[], bool]) -> Performed:
        return Performed(install=os.open(canary, os.O_RDONLY), cloexec=True)

    calls: list[Any] = []
    run = run_tool(reader(str(canary)), identity, "notify", plan=plan,
                   supervisor=serve_with(plan, "paths", {"openat": openat}, calls))  # fmt: skip
    assert run.value == [CANARY.decode(), 1]  # the supervisor's open, FD_CLOEXEC set
    assert calls == []  # performed, not refused


def test_a_performed_value_is_the_calls_return(identity: pwd.struct_passwd | None,
                                               tmp_path: Path) -> None:  # fmt: skip
    def tool() -> list[Any]:
        name = ctypes.create_string_buffer(b"/nonexistent/x")
        try:
            return [sc("truncate", ctypes.addressof(name), 0)]
        except OSError as e:
            return ["refused", e.errno]

    def truncate(tid: int, args: tuple[int, ...], pending: Callable[[], bool]) -> Performed:
        return Performed(4242)

    bare = run_tool(tool, identity, "bare")
    assert bare.value == ["refused", errno.ENOENT]
    plan = confined_plan(tmp_path, "paths")
    run = run_tool(tool, identity, "notify", plan=plan,
                   supervisor=serve_with(plan, "paths", {"truncate": truncate}, []))  # fmt: skip
    assert run.value == [4242]


def test_a_group_call_without_a_guard_is_refused(
    identity: pwd.struct_passwd | None, canary: Path, tmp_path: Path
) -> None:
    plan = confined_plan(tmp_path, "paths")
    calls: list[Any] = []
    run = run_tool(reader("/etc/hostname"), identity, "notify", plan=plan,
                   supervisor=serve_with(plan, "paths", {}, calls))  # fmt: skip
    assert run.value == ["refused", errno.EPERM]
    assert [c.name for c in calls] == ["openat"]
