"""Seccomp denials through user notification, on the real kernel.

Each attack runs in forked children three ways: with no sandbox (the call works, as an
oracle outside the child sees), under the plain ERRNO filter, and under the notifying
filter served by this process. The notifying run must give exactly the plain run's
errno, leave no effect for the oracle to see, and report pid, name and arguments.
The child pauses after its attempt so the oracle looks at it while it is still alive.
Everything the children use is imported here, before any privilege drop.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import pwd
import select
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvg_kernel import bpf, libc, notify, syscall_table
from cvg_kernel.cli import main
from cvg_kernel.notify import NotifiedCall, NotifyError, Served, Serving, receive_listener
from cvg_kernel.plan import prepare
from cvg_kernel.seccomp import (
    AUDIT_ARCH,
    ENOSYS_VERDICT,
    NOTIFY_PREFIX_LEN,
    Filter,
    _SockFilter,
    _SockFprog,
    compile_spec,
)
from cvg_testing import attempt_name, drop_to, spawn

ARCH = libc.machine()
NR = syscall_table.TABLES[ARCH]
pytestmark = pytest.mark.skipif(ARCH not in ("x86_64", "aarch64"), reason="x86_64/aarch64")

CLONE_NEWUSER = 0x10000000
ADDR_NO_RANDOMIZE = 0x0040000
PERSONALITY_QUERY = 0xFFFFFFFF
AF_INET, SOCK_DGRAM = 2, 2
PTRACE_ATTACH, PTRACE_TRACEME = 16, 0
PR_SET_DUMPABLE = 4
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 8

# Landlock reads everything: these tests are about seccomp, and the child's Python
# must still be able to format a traceback if something goes wrong.
BASE_PLAN: dict[str, Any] = {
    "kind": "cvg.plan",
    "schema_version": "1.0",
    "landlock": {"fs_rules": [{"path": "/", "access": ["read_file", "read_dir", "execute"]}]},
}


def plan_with(**seccomp: Any) -> dict[str, Any]:
    return {**BASE_PLAN, "seccomp": seccomp} if seccomp else dict(BASE_PLAN)


def sc(name: str, *args: int) -> int:
    """Raw syscall by name, every argument a full 64-bit register."""
    return libc.syscall(NR[name], *(ctypes.c_long(a) for a in args))


# ------------------------------------------------------------------------ the harness


@dataclass
class Run:
    pid: int
    value: Any  # what the tool function returned
    seen: Any  # what the oracle saw while the tool was paused after its attempt
    status: int
    calls: list[NotifiedCall] = field(default_factory=list)
    served: Served | None = None


def _tool(
    fn: Callable[[], Any],
    user: pwd.struct_passwd | None,
    prepared: Any,
    gate_r: int,
    out_w: int,
    hold_r: int,
) -> None:
    code = 0
    try:
        if user is not None:
            drop_to(user)
        if prepared is not None:
            prepared.apply()
        os.read(gate_r, 1)  # the supervisor is ready
        payload: dict[str, Any] = {"value": fn()}
    except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
        payload = {"error": traceback.format_exc()}
        code = 70
    try:
        os.write(out_w, json.dumps(payload).encode() + b"\n")
        os.read(hold_r, 1)  # the oracle has looked
    finally:
        os._exit(code)


def run_tool(
    fn: Callable[[], Any],
    user: pwd.struct_passwd | None,
    mode: str,
    *,
    plan: dict[str, Any] | None = None,
    oracle: Callable[[int], Any] | None = None,
    supervisor: Callable[[int, int], Any] | None = None,
) -> Run:
    """Run ``fn`` in a forked child as ``user``: ``mode`` is "bare", "plain" or "notify".

    In "notify" mode this process receives the listener and serves it in a thread,
    unless ``supervisor(listener_sock, tool_pid)`` is given to do something else with
    the socket (it owns it) before the tool makes its attempt.
    """
    plan = plan or BASE_PLAN
    sock_p = sock_c = None
    prepared = None
    if mode == "notify":
        sock_p, sock_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        prepared = prepare(plan, {}, notify_sock=sock_c.fileno())
    elif mode == "plain":
        prepared = prepare(plan, {})
    gate_r, gate_w = os.pipe()
    out_r, out_w = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (gate_w, out_r, hold_w):
            os.close(fd)
        if sock_p is not None:
            sock_p.close()
        _tool(fn, user, prepared, gate_r, out_w, hold_r)
    for fd in (gate_r, out_w, hold_r):
        os.close(fd)
    if prepared is not None:
        prepared.close()
    calls: list[NotifiedCall] = []
    serving = None
    try:
        if sock_p is not None and sock_c is not None:
            sock_c.close()
            if supervisor is not None:
                supervisor(sock_p.detach(), pid)
            else:
                listener = receive_listener(sock_p.fileno(), timeout=10)
                serving = Serving(listener, prepared.filter.errno_program, ARCH, calls.append)
                sock_p.close()
        os.write(gate_w, b"g")
        with os.fdopen(out_r, "rb") as out:
            line = out.readline()
            seen = oracle(pid) if oracle is not None else None
            os.write(hold_w, b"h")
            rest = out.read()
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(gate_w)
        os.close(hold_w)
    payload = json.loads(line) if line else {"error": f"no result; {rest!r}"}
    assert "error" not in payload, payload["error"]
    served = serving.join(timeout=10) if serving is not None else None
    return Run(pid, payload["value"], seen, status, calls, served)


def three_ways(
    fn: Callable[[], Any],
    user: pwd.struct_passwd | None,
    *,
    plan: dict[str, Any] | None = None,
    oracle: Callable[[int], Any] | None = None,
) -> tuple[Run, Run, Run]:
    return (
        run_tool(fn, user, "bare", plan=plan, oracle=oracle),
        run_tool(fn, user, "plain", plan=plan, oracle=oracle),
        run_tool(fn, user, "notify", plan=plan, oracle=oracle),
    )


def the_call(run: Run, name: str) -> NotifiedCall:
    assert run.served is not None and run.served.ended == "hangup", run.served
    assert [c.name for c in run.calls] == [name], run.calls
    call = run.calls[0]
    assert call.pid == run.pid and call.arch == ARCH and call.nr == NR[name]
    assert len(call.args) == 6
    return call


# ---------------------------------------------------------------------------- oracles


def other_user_ns(pid: int) -> bool:
    return os.readlink(f"/proc/{pid}/ns/user") != os.readlink("/proc/self/ns/user")


def personality_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/personality").read_text(), 16)


def socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(link[len("socket:[") : -1])
    return out


def sockets_of(pid: int) -> int:
    """Sockets the process holds. An unbound UDP socket is in no /proc/net table, but
    the tool has no socket at all otherwise (the notify socket is closed before)."""
    return len(socket_inodes(pid))


def tracer_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    raise AssertionError("no TracerPid line")


# ---------------------------------------------------------------------------- attacks


def test_unshare_newuser(identity: pwd.struct_passwd | None) -> None:
    bare, plain, notified = three_ways(
        lambda: attempt_name(lambda: sc("unshare", CLONE_NEWUSER)), identity, oracle=other_user_ns
    )
    assert (bare.value, bare.seen) == ("OK", True)  # the attack works here
    assert (plain.value, plain.seen) == ("EPERM", False)
    assert (notified.value, notified.seen) == ("EPERM", False)
    call = the_call(notified, "unshare")
    assert call.args[0] == CLONE_NEWUSER and call.errno == "EPERM"


def test_configured_errno_is_the_answer(identity: pwd.struct_passwd | None) -> None:
    plan = plan_with(deny_errno="EACCES")
    bare, plain, notified = three_ways(
        lambda: attempt_name(lambda: sc("unshare", CLONE_NEWUSER)),
        identity,
        plan=plan,
        oracle=other_user_ns,
    )
    assert (bare.value, bare.seen) == ("OK", True)
    assert (plain.value, notified.value) == ("EACCES", "EACCES")
    assert notified.seen is False
    assert the_call(notified, "unshare").errno == "EACCES"


def test_udp_socket(identity: pwd.struct_passwd | None) -> None:
    plan = plan_with(sockets=[{"family": "unix"}, {"family": "inet", "types": ["stream"]}])
    bare, plain, notified = three_ways(
        lambda: attempt_name(lambda: sc("socket", AF_INET, SOCK_DGRAM | (1 << 32), 0)),
        identity,
        plan=plan,
        oracle=sockets_of,
    )
    assert (bare.value, bare.seen) == ("OK", 1)
    assert (plain.value, plain.seen) == ("EPERM", 0)
    assert (notified.value, notified.seen) == ("EPERM", 0)
    call = the_call(notified, "socket")
    # All 64 bits of each register reach the report, junk in the high word included.
    assert call.args[:3] == (AF_INET, SOCK_DGRAM | (1 << 32), 0)


def test_socket_family_gets_eafnosupport(identity: pwd.struct_passwd | None) -> None:
    plan = plan_with(sockets=[{"family": "unix"}])
    bare, plain, notified = three_ways(
        lambda: attempt_name(lambda: sc("socket", AF_INET, SOCK_DGRAM, 0)),
        identity,
        plan=plan,
        oracle=sockets_of,
    )
    assert (bare.value, bare.seen) == ("OK", 1)
    assert (plain.value, notified.value) == ("EAFNOSUPPORT", "EAFNOSUPPORT")
    assert notified.seen == 0
    assert the_call(notified, "socket").errno == "EAFNOSUPPORT"


def test_personality(identity: pwd.struct_passwd | None) -> None:
    bare, plain, notified = three_ways(
        lambda: attempt_name(lambda: sc("personality", ADDR_NO_RANDOMIZE)),
        identity,
        oracle=personality_of,
    )
    assert bare.value == "OK" and bare.seen & ADDR_NO_RANDOMIZE
    assert (plain.value, plain.seen & ADDR_NO_RANDOMIZE) == ("EPERM", 0)
    assert (notified.value, notified.seen & ADDR_NO_RANDOMIZE) == ("EPERM", 0)
    assert the_call(notified, "personality").args[0] == ADDR_NO_RANDOMIZE


@pytest.fixture
def sentinel(identity: pwd.struct_passwd | None) -> Any:
    """A sleeping process of the same user, which the tool tries to attach to."""
    pid = os.fork()
    if pid == 0:
        try:
            if identity is not None:
                drop_to(identity)
            libc.prctl(PR_SET_DUMPABLE, 1)  # dropping privileges cleared it
            while True:
                time.sleep(60)
        finally:
            os._exit(0)
    time.sleep(0.05)
    yield pid
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_ptrace_attach(identity: pwd.struct_passwd | None, sentinel: int) -> None:
    def attack() -> str:
        return attempt_name(lambda: sc("ptrace", PTRACE_ATTACH, sentinel, 0, 0))

    bare, plain, notified = three_ways(attack, identity, oracle=lambda _: tracer_of(sentinel))
    assert (bare.value, bare.seen) == ("OK", bare.pid)
    assert (plain.value, plain.seen) == ("EPERM", 0)
    assert (notified.value, notified.seen) == ("EPERM", 0)
    assert the_call(notified, "ptrace").args[:2] == (PTRACE_ATTACH, sentinel)


def test_forked_children_are_covered(identity: pwd.struct_passwd | None) -> None:
    """A grandchild of the supervisor is answered too, under its own pid; the loop
    ends only when the last process under the filter is gone."""

    def tool() -> list[Any]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, attempt_name(lambda: sc("unshare", CLONE_NEWUSER)).encode())
            os._exit(0)
        os.close(w)
        got = os.read(r, 100).decode()
        os.waitpid(pid, 0)
        return [pid, got]

    bare = run_tool(tool, identity, "bare")
    notified = run_tool(tool, identity, "notify")
    assert bare.value[1] == "OK"
    grandchild, result = notified.value
    assert result == "EPERM"
    assert notified.served is not None and notified.served.ended == "hangup"
    assert [(c.pid, c.name, c.args[0]) for c in notified.calls] == [
        (grandchild, "unshare", CLONE_NEWUSER)
    ]


# --------------------------------------------------------------------------- fail-closed


def _personality_notified(
    identity: pwd.struct_passwd | None, supervisor: Callable[[int, int], Any]
) -> Run:
    """personality(ADDR_NO_RANDOMIZE) under the notify filter, ``supervisor`` holding
    the listener."""
    return run_tool(
        lambda: attempt_name(lambda: sc("personality", ADDR_NO_RANDOMIZE)),
        identity,
        "notify",
        oracle=personality_of,
        supervisor=supervisor,
    )


def test_listener_closed_before_the_call(identity: pwd.struct_passwd | None) -> None:
    def close_it(sock_fd: int, tool: int) -> None:
        os.close(receive_listener(sock_fd, timeout=10))
        os.close(sock_fd)

    run = _personality_notified(identity, close_it)
    assert (run.value, run.seen & ADDR_NO_RANDOMIZE) == ("ENOSYS", 0)


def _notify_on_personality(flags: int) -> int:
    """The tool's own filter, sending personality() to a user-notification listener;
    what seccomp() returns (the listener, with SECCOMP_FILTER_FLAG_NEW_LISTENER)."""
    prog = [
        (bpf.LD_W_ABS, 0, 0, bpf.SECCOMP_DATA_NR),
        (bpf.JMP_JEQ_K, 0, 1, NR["personality"]),
        (bpf.RET_K, 0, 0, bpf.SECCOMP_RET_USER_NOTIF),
        (bpf.RET_K, 0, 0, bpf.SECCOMP_RET_ALLOW),
    ]
    array = (_SockFilter * len(prog))(*(_SockFilter(*i) for i in prog))
    fprog = _SockFprog(len(prog), ctypes.cast(array, ctypes.POINTER(_SockFilter)))
    libc.prctl(38, 1)
    return int(
        libc.syscall(
            NR["seccomp"],
            ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
            ctypes.c_ulong(flags),
            ctypes.byref(fprog),
        )
    )


def _own_listener_then_continue() -> list[str]:
    """The tool's way around a closed listener: its own listener answering CONTINUE."""
    try:
        mine = _notify_on_personality(SECCOMP_FILTER_FLAG_NEW_LISTENER)
    except OSError as e:
        return [errno.errorcode[e.errno or 0], attempt_name(lambda: sc("personality", 0x0040000))]

    def answer_continue() -> None:
        req, resp = notify.SeccompNotif(), notify.SeccompNotifResp()
        notify._ioctl(mine, notify.SECCOMP_IOCTL_NOTIF_RECV, ctypes.addressof(req))
        resp.id, resp.flags = req.id, notify.SECCOMP_USER_NOTIF_FLAG_CONTINUE
        notify._ioctl(mine, notify.SECCOMP_IOCTL_NOTIF_SEND, ctypes.addressof(resp))

    t = threading.Thread(target=answer_continue)
    t.start()
    result = attempt_name(lambda: sc("personality", ADDR_NO_RANDOMIZE))
    t.join()
    return ["OK", result]


def test_tool_cannot_take_over_a_closed_listener(identity: pwd.struct_passwd | None) -> None:
    def close_it(sock_fd: int, tool: int) -> None:
        os.close(receive_listener(sock_fd, timeout=10))
        os.close(sock_fd)

    bare = run_tool(_own_listener_then_continue, identity, "bare", oracle=personality_of)
    assert bare.value == ["OK", "OK"] and bare.seen & ADDR_NO_RANDOMIZE  # the trick works
    run = run_tool(
        _own_listener_then_continue,
        identity,
        "notify",
        oracle=personality_of,
        supervisor=close_it,
    )
    assert run.value == ["EBUSY", "ENOSYS"]
    assert run.seen & ADDR_NO_RANDOMIZE == 0


def _own_notify_filter_without_listener() -> str:
    _notify_on_personality(0)
    return attempt_name(lambda: sc("personality", ADDR_NO_RANDOMIZE))


def test_a_tool_can_hide_a_denial_but_not_run_it(identity: pwd.struct_passwd | None) -> None:
    """A known limit, pinned down: the newest USER_NOTIF verdict wins, so a tool that
    installs its own listener-less USER_NOTIF filter takes the notification away from
    the supervisor. The call then fails with ENOSYS, unreported, and never runs."""
    bare = run_tool(_own_notify_filter_without_listener, identity, "bare", oracle=personality_of)
    assert bare.value == "ENOSYS"  # the tool's own filter alone already refuses it
    run = run_tool(_own_notify_filter_without_listener, identity, "notify", oracle=personality_of)
    assert (run.value, run.seen & ADDR_NO_RANDOMIZE) == ("ENOSYS", 0)
    assert run.calls == [] and run.served == Served(0, 0, "hangup")


def test_pending_call_fails_when_the_supervisor_dies(identity: pwd.struct_passwd | None) -> None:
    """A supervisor that holds the listener but never answers: the call waits, with
    no effect; once that supervisor is killed, the waiting call gets ENOSYS."""
    state: dict[str, Any] = {}

    def watch_then_kill(supervisor: int, pending: int, tool: int) -> None:
        os.read(pending, 1)
        os.close(pending)
        time.sleep(0.2)  # still waiting: the call has neither run nor failed
        state["during"] = personality_of(tool) & ADDR_NO_RANDOMIZE
        state["syscall"] = Path(f"/proc/{tool}/syscall").read_text().split()[0]
        os.kill(supervisor, signal.SIGKILL)
        os.waitpid(supervisor, 0)

    def hold_then_die(sock_fd: int, tool: int) -> None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                listener = receive_listener(sock_fd, timeout=10)
                poller = select.poll()
                poller.register(listener, select.POLLIN)
                poller.poll(10_000)  # a call is waiting for an answer that never comes
                os.write(w, b"p")
                time.sleep(60)
            finally:
                os._exit(0)
        os.close(w)
        os.close(sock_fd)
        state["thread"] = threading.Thread(target=watch_then_kill, args=(pid, r, tool))
        state["thread"].start()

    run = _personality_notified(identity, hold_then_die)
    state["thread"].join()
    assert state["during"] == 0 and state["syscall"] == str(NR["personality"])
    assert (run.value, run.seen & ADDR_NO_RANDOMIZE) == ("ENOSYS", 0)


def test_a_failing_report_closes_the_listener() -> None:
    """An exception from on_denial ends the loop loudly (join re-raises it), and the
    loop's last act is closing the listener: the tool's next denial gets ENOSYS."""
    state: dict[str, Any] = {}

    def boom(call: NotifiedCall) -> None:
        raise RuntimeError(f"cannot record {call.name}")

    def serve_badly(sock_fd: int, tool: int) -> None:
        listener = receive_listener(sock_fd, timeout=10)
        os.close(sock_fd)
        state["serving"] = Serving(listener, Filter.build().errno_program, ARCH, boom)

    run = run_tool(
        lambda: [attempt_name(lambda: sc("personality", ADDR_NO_RANDOMIZE)) for _ in range(2)],
        None,
        "notify",
        oracle=personality_of,
        supervisor=serve_badly,
    )
    assert run.value == ["EPERM", "ENOSYS"] and run.seen & ADDR_NO_RANDOMIZE == 0
    with pytest.raises(RuntimeError, match="cannot record personality"):
        state["serving"].join(timeout=10)


def test_ten_thousand_denials(identity: pwd.struct_passwd | None) -> None:
    n = 10_000

    def flood() -> list[Any]:
        t0 = time.perf_counter()
        results = {attempt_name(lambda: sc("personality", PERSONALITY_QUERY)) for _ in range(n)}
        return [sorted(results), time.perf_counter() - t0]

    plain = run_tool(flood, identity, "plain")
    notified = run_tool(flood, identity, "notify")
    assert plain.value[0] == notified.value[0] == ["EPERM"]
    assert notified.served == Served(n, 0, "hangup")
    assert len(notified.calls) == n
    per_call_us = notified.value[1] / n * 1e6
    plain_us = plain.value[1] / n * 1e6
    sys.stderr.write(f"\n10000 denials: {per_call_us:.1f} us/call notified, {plain_us:.2f} plain\n")
    assert per_call_us < 2000, per_call_us


def test_stop_ends_the_loop_under_a_flood_and_later_calls_fail() -> None:
    """A tool denied in a tight loop cannot keep the supervisor from stopping; after
    the stop its calls get ENOSYS, never success."""
    sock_p, sock_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    prepared = prepare(BASE_PLAN, {}, notify_sock=sock_c.fileno())
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.close(r)
            sock_p.close()
            prepared.apply()
            seen: set[str] = set()
            for _ in range(2_000_000):
                got = attempt_name(lambda: sc("personality", ADDR_NO_RANDOMIZE))
                if got not in seen:
                    seen.add(got)
                    os.write(w, got.encode() + b"\n")
                if got != "EPERM":
                    break
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    prepared.close()
    sock_c.close()
    calls: list[NotifiedCall] = []
    serving = Serving(receive_listener(sock_p.fileno(), 10), prepared.filter.errno_program, ARCH,
                      calls.append)  # fmt: skip
    sock_p.close()
    with os.fdopen(r, "rb") as out:
        assert out.readline() == b"EPERM\n"
        time.sleep(0.3)
        t0 = time.monotonic()
        serving.stop()
        served = serving.join(timeout=5)
        stop_s = time.monotonic() - t0
        after = out.readline()
    _, status = os.waitpid(pid, 0)
    assert served.ended == "stopped" and served.answered > 100
    assert stop_s < 1.0
    assert after == b"ENOSYS\n"
    assert os.waitstatus_to_exitcode(status) == 0


# --------------------------------------------------------------------- the launcher


def test_launcher_notify_fd(identity: pwd.struct_passwd | None, world_dir: Path) -> None:
    """cvg-exec --notify-fd: the denial of a real command is reported, and neither the
    socket nor the listener reaches the command."""
    plan = world_dir / "plan.json"
    plan.write_text(json.dumps(BASE_PLAN))
    plan.chmod(0o644)
    unshare = ["/usr/bin/unshare", "-U", "/usr/bin/true"]
    bare = spawn(lambda: os.execv(unshare[0], unshare), user=identity)
    assert bare.exitcode == 0, bare.stderr

    def launch(argv: list[str]) -> tuple[Any, list[NotifiedCall], Served]:
        sock_p, sock_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        calls: list[NotifiedCall] = []
        result: dict[str, Any] = {}

        def supervise() -> None:
            listener = receive_listener(sock_p.fileno(), timeout=10)
            result["served"] = notify.serve(
                listener, Filter.build().errno_program, ARCH, calls.append
            )

        t = threading.Thread(target=supervise)
        t.start()
        fd = sock_c.fileno()
        out = spawn(
            lambda: main(["--plan", str(plan), "--notify-fd", str(fd), "--", *argv]),
            user=identity,
        )
        sock_c.close()
        t.join(10)
        sock_p.close()
        return out, calls, result["served"]

    out, calls, served = launch(unshare)
    assert out.exitcode == 1 and b"Operation not permitted" in out.stderr, out.stderr
    assert served.ended == "hangup"
    assert [(c.name, c.args[0], c.errno) for c in calls] == [("unshare", CLONE_NEWUSER, "EPERM")]

    out, calls, served = launch(["/usr/bin/ls", "-l", "/proc/self/fd/"])
    assert out.exitcode == 0, out.stderr
    assert b"pipe:" in out.stdout  # the listing worked
    assert b"socket:" not in out.stdout and b"seccomp" not in out.stdout, out.stdout
    assert calls == [] and served.ended == "hangup"


def test_launcher_refuses_a_bad_notify_fd(world_dir: Path) -> None:
    plan = world_dir / "plan.json"
    plan.write_text(json.dumps(BASE_PLAN))
    r, w = os.pipe()
    try:
        for fd in (str(r), "999"):
            out = spawn(lambda fd=fd: main(["--plan", str(plan), "--notify-fd", fd, "--", "true"]))
            assert out.exitcode == 2
            assert out.stderr.decode() == f"cvg-exec: --notify-fd {fd}: not an open socket\n"
        a, b = socket.socketpair()
        out = spawn(
            lambda: main(["--plan", str(plan), "--notify-fd", "0", "--", "true"]),
            before=lambda: os.dup2(a.fileno(), 0),
        )
        a.close()
        b.close()
        assert out.exitcode == 2
        assert out.stderr == b"cvg-exec: --notify-fd 0: 0, 1 and 2 are the command's stdio\n"
    finally:
        os.close(r)
        os.close(w)


def test_launcher_without_a_listener_does_not_start(world_dir: Path) -> None:
    """If the listener cannot be sent (the supervisor's end is gone), nothing runs."""
    plan = world_dir / "plan.json"
    plan.write_text(json.dumps(BASE_PLAN))
    marker = world_dir / "ran"
    sock_p, sock_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock_p.close()
    fd = sock_c.fileno()
    out = spawn(
        lambda: main(
            ["--plan", str(plan), "--notify-fd", str(fd), "--", "/usr/bin/touch", str(marker)]
        )
    )
    sock_c.close()
    assert out.exitcode == 125
    assert out.stderr.startswith(b"cvg-exec: confinement failed:"), out.stderr
    assert not marker.exists()


# ------------------------------------------------------------------- the pieces alone


def test_ioctl_numbers_and_sizes_match_the_kernel() -> None:
    assert notify.SECCOMP_IOCTL_NOTIF_RECV == 0xC0502100
    assert notify.SECCOMP_IOCTL_NOTIF_SEND == 0xC0182101
    assert notify.SECCOMP_IOCTL_NOTIF_ID_VALID == 0x40082102
    assert notify.kernel_sizes() == (80, 24, 64)


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"deny_errno": "ENOSYS"},
        {"sockets": [{"family": "unix"}], "kill": ["getpid"], "enosys": ["clone3", "rseq"]},
    ],
)
def test_notifying_program_changes_only_denials(arch: str, spec: dict[str, Any]) -> None:
    """For every syscall number of the table and a spread of arguments: the same
    verdict, or USER_NOTIF exactly where the plain program answered an ERRNO
    denial (not its ENOSYS verdict, even when the denial errno is ENOSYS too)."""
    compiled = compile_spec(arch, **spec)
    comments = [c for _, c in compiled.annotated]
    plain = Filter.build(arch, **spec)
    notifying = plain.with_listener()
    assert plain.instructions == plain.errno_program == notifying.errno_program
    assert notifying.instructions[NOTIFY_PREFIX_LEN - 1] == (
        bpf.RET_K, 0, 0, bpf.ret_errno(errno.EBUSY)
    )  # fmt: skip
    audit = AUDIT_ARCH[arch]
    numbers = syscall_table.TABLES[arch]
    arg_sets = [[0, 0, 0, 0], [CLONE_NEWUSER, 3, 0, 0], [AF_INET, SOCK_DGRAM, 0, 0x20000000],
                [38, 3, 0x5412, 0]]  # fmt: skip
    notified = 0
    for nr in [*numbers.values(), 0x40000000 + 1, max(numbers.values()) + 1]:
        for args in arg_sets:
            action, visited = bpf.trace(plain.instructions, nr, audit, args)
            by_design = comments[visited[-1]] == ENOSYS_VERDICT
            denial = action & 0xFFFF0000 == bpf.SECCOMP_RET_ERRNO and not by_design
            expected = bpf.SECCOMP_RET_USER_NOTIF if denial else action
            assert bpf.evaluate(notifying.instructions, nr, audit, args) == expected, (nr, args)
            notified += denial
    assert notified > 50
    # The one addition: seccomp() asking for a listener of its own.
    listen = [SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER]
    seccomp_nr = numbers["seccomp"]
    assert bpf.evaluate(plain.instructions, seccomp_nr, audit, listen) == bpf.SECCOMP_RET_ALLOW
    assert bpf.evaluate(notifying.instructions, seccomp_nr, audit, listen) == bpf.ret_errno(
        errno.EBUSY
    )
    assert bpf.evaluate(notifying.instructions, seccomp_nr, audit, [1, 0]) == (
        bpf.SECCOMP_RET_ALLOW
    )
    assert bpf.evaluate(notifying.instructions, seccomp_nr, 0x40000003, listen) == (
        bpf.SECCOMP_RET_KILL_PROCESS
    )


def test_answer_is_never_success() -> None:
    program = Filter.build(deny_errno="EACCES").errno_program
    audit = bpf.AUDIT_ARCH_X86_64 if ARCH == "x86_64" else bpf.AUDIT_ARCH_AARCH64

    def data(name: str, *args: int) -> notify.SeccompData:
        d = notify.SeccompData()
        d.nr, d.arch = NR[name], audit
        for i, a in enumerate(args):
            d.args[i] = a
        return d

    assert notify.answer(program, data("unshare", CLONE_NEWUSER)) == errno.EACCES
    assert notify.answer(program, data("clone3")) == errno.ENOSYS
    # A call the program allows cannot be a real notification: refused all the same.
    assert notify.answer(program, data("read")) == errno.EPERM


def test_serve_refuses_the_notifying_program() -> None:
    r, w = os.pipe()
    with pytest.raises(NotifyError, match="plain ERRNO program"):
        notify.serve(r, Filter.build().with_listener().instructions, ARCH, print)
    with pytest.raises(OSError):
        os.fstat(r)  # serve owns the listener and closed it
    os.close(w)


def test_receive_listener_checks_what_arrives() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    try:
        a.send(b"L%d %d" % (os.getpid(), r))
        with pytest.raises(NotifyError, match=r"pipe.*not a seccomp listener"):
            receive_listener(b.fileno(), timeout=5)
        a.send(b"garbage")
        with pytest.raises(NotifyError, match="expected 'L PID FD'"):
            receive_listener(b.fileno(), timeout=5)
        a.send(b"L%d 9999" % os.getpid())
        with pytest.raises(NotifyError, match="could not take descriptor 9999"):
            receive_listener(b.fileno(), timeout=5)
        with pytest.raises(NotifyError, match=r"within 0\.1s"):
            receive_listener(b.fileno(), timeout=0.1)
        a.close()
        with pytest.raises(NotifyError, match="without sending"):
            receive_listener(b.fileno(), timeout=5)
        assert b.fileno() >= 0  # the caller's socket is left open
    finally:
        b.close()
        os.close(r)
        os.close(w)


@settings(max_examples=300, deadline=None)
@given(
    nr=st.sampled_from(sorted(NR.values())) | st.integers(0, 2**32 - 1),
    args=st.lists(
        st.sampled_from([0, 1, 2, 3, 10, 16, 0x8, 0x10, 0x5412, CLONE_NEWUSER, 1 << 32])
        | st.integers(0, 2**64 - 1),
        min_size=6,
        max_size=6,
    ),
    ip=st.integers(0, 2**64 - 1),
)
def test_remembered_answers_are_the_interpreters(nr: int, args: list[int], ip: int) -> None:
    """The per-loop cache keys on the words the program loads; it must never give a
    different answer from running the program."""
    answers = notify._Answers(ANSWER_PROGRAM)
    audit = bpf.AUDIT_ARCH_X86_64 if ARCH == "x86_64" else bpf.AUDIT_ARCH_AARCH64
    d = notify.SeccompData()
    d.nr, d.arch, d.instruction_pointer = ctypes.c_int32(nr).value, audit, ip
    for i, a in enumerate(args):
        d.args[i] = a
    first = answers(d)
    assert first == answers(d) == notify.answer(ANSWER_PROGRAM, d)
    # Change what the program never reads: the instruction pointer, the high halves.
    d.instruction_pointer ^= 0xFFFF
    for i in range(6):
        d.args[i] ^= 0xFFFF << 40
    assert answers(d) == notify.answer(ANSWER_PROGRAM, d) == first


ANSWER_PROGRAM = Filter.build(
    sockets=[{"family": "inet", "types": ["stream"], "protocols": [6]}, {"family": "unix"}]
).errno_program
