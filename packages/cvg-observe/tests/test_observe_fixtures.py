"""Recorded strace 6.1 output (tests/fixtures, made by fixtures/record.py) through the
whole reading path: cvg-trace's parser and tracker, then the observation written here."""

from __future__ import annotations

from collections import Counter
from typing import Any

from conftest import FIXTURE_CWD, FIXTURES


def _with(events: list[dict[str, Any]], needle: str) -> list[dict[str, Any]]:
    out = []
    for e in events:
        e = dict(e)
        e.pop("time", None)
        e.pop("pid", None)
        if needle in (e.get("path") or "") or needle in (e.get("path2") or ""):
            out.append(e)
    return out


def test_fixture_python_startup(fixture_events: Any) -> None:
    obs = fixture_events("python_startup")
    events = obs["events"]
    assert events[0]["op"] == "execute" and events[0]["syscall"] == "execve"
    assert events[0]["path"] == "/work/main/.venv/bin/python" and events[0]["result"] == "ok"
    assert [e["id"] for e in events] == [f"e{i}" for i in range(1, len(events) + 1)]
    assert {e["pid"] for e in events} == {events[0]["pid"]}
    assert obs["executables"] == [
        {
            "path": "/work/main/.venv/bin/python",
            "interpreter": obs["executables"][0]["interpreter"],
            "shebang": [],
            "event_id": "e1",
        }
    ]
    counts = Counter((e["op"], e["syscall"], e["result"]) for e in events)
    assert counts == {
        ("stat", "newfstatat", "ENOENT"): 32,
        ("read", "openat", "ENOENT"): 25,
        ("stat", "newfstatat", "ok"): 17,  # the 22 fstat-like calls on descriptors: none
        ("read", "openat", "ok"): 14,
        ("stat", "readlink", "ok"): 2,
        ("stat", "readlink", "EINVAL"): 2,
        ("execute", "execve", "ok"): 1,
        ("stat", "access", "ENOENT"): 1,
    }
    assert [(e["op"], e["path"], e["result"]) for e in events[:2]] == [
        ("execute", "/work/main/.venv/bin/python", "ok"),
        ("stat", "/etc/ld.so.preload", "ENOENT"),
    ]
    assert any(e["path"] == "/work/main/.venv/pyvenv.cfg" and e["op"] == "read" for e in events)
    assert all(e["path"].startswith("/") for e in events)
    text = (FIXTURES / "python_startup.trace").read_text()
    assert text.count("AT_EMPTY_PATH) = 0") == 22


def test_fixture_shell_pipeline(fixture_events: Any) -> None:
    obs = fixture_events("shell_pipeline")
    ev = obs["events"]
    execs = [(e["pid"], e["path"]) for e in ev if e["op"] == "execute"]
    assert [p for _, p in execs] == ["/bin/sh", "/usr/bin/cat", "/usr/bin/wc", "/usr/bin/ls"]
    assert len({pid for pid, _ in execs}) == 4  # each in its own forked process
    assert [x["path"] for x in obs["executables"]] == [p for _, p in execs]
    assert _with(ev, "/etc/hostname") == [
        {"id": "e100", "op": "read", "syscall": "openat", "path": "/etc/hostname", "result": "ok"}
    ]
    assert _with(ev, "missing") == [
        {"id": "e162", "op": "stat", "syscall": "statx", "path": f"{FIXTURE_CWD}/missing",
         "result": "ENOENT"},
        {"id": "e163", "op": "stat", "syscall": "statx", "path": f"{FIXTURE_CWD}/missing",
         "result": "ENOENT"},
    ]  # fmt: skip
    assert _with(ev, "/dev/null") == [
        {"id": "e107", "op": "create", "syscall": "openat", "path": "/dev/null", "result": "ok"}
    ]


def test_fixture_chdir_fchdir_and_relative_paths(fixture_events: Any) -> None:
    ev = fixture_events("chdir")["events"]
    sh_pid = next(e["pid"] for e in ev if e["op"] == "execute" and e["path"] == "/bin/sh")
    interesting = [
        (e["pid"] == sh_pid, e["op"], e["syscall"], e["path"])
        for e in ev
        if e["op"] == "chdir"
        or e["path"] in (f"{FIXTURE_CWD}/x", f"{FIXTURE_CWD}/sub/deeper/y")
        or (e["op"] == "read" and e["path"] == f"{FIXTURE_CWD}/sub")
    ]
    assert interesting == [
        (True, "chdir", "chdir", f"{FIXTURE_CWD}/sub"),            # sh: cd sub
        (False, "read", "openat", f"{FIXTURE_CWD}/x"),             # cat ../x, cwd inherited
        (True, "chdir", "chdir", f"{FIXTURE_CWD}/sub/deeper"),     # cd deeper
        (False, "read", "openat", f"{FIXTURE_CWD}/sub/deeper/y"),  # cat y
        (False, "read", "openat", f"{FIXTURE_CWD}/sub"),           # python: os.open('sub')
        (False, "chdir", "fchdir", f"{FIXTURE_CWD}/sub"),          # os.fchdir(fd)
        (False, "read", "openat", f"{FIXTURE_CWD}/sub/deeper/y"),  # open('deeper/y')
        (False, "chdir", "chdir", FIXTURE_CWD),                    # os.chdir('..')
        (False, "read", "openat", f"{FIXTURE_CWD}/x"),             # open('x')
    ]  # fmt: skip


def test_fixture_dirfds(fixture_events: Any) -> None:
    ev = _with(fixture_events("dirfd")["events"], f"{FIXTURE_CWD}/sub")
    sub = f"{FIXTURE_CWD}/sub"
    assert ev == [
        {"id": "e95", "op": "read", "syscall": "openat", "path": sub, "result": "ok",
         "directory": True},  # os.open(sub, O_DIRECTORY)
        {"id": "e96", "op": "create", "syscall": "openat", "path": f"{sub}/new", "result": "ok"},
        {"id": "e97", "op": "stat", "syscall": "newfstatat", "path": f"{sub}/new", "result": "ok"},
        {"id": "e98", "op": "rename", "syscall": "renameat", "path": f"{sub}/new",
         "path2": f"{sub}/renamed", "result": "ok"},
        {"id": "e99", "op": "link", "syscall": "linkat", "path": f"{sub}/renamed",
         "path2": f"{sub}/linked", "result": "ok"},
        {"id": "e100", "op": "create", "syscall": "mkdirat", "path": f"{sub}/dir", "result": "ok"},
        {"id": "e101", "op": "remove", "syscall": "unlinkat", "path": f"{sub}/dir", "result": "ok"},
        {"id": "e102", "op": "remove", "syscall": "unlinkat", "path": f"{sub}/renamed",
         "result": "ok"},
        {"id": "e103", "op": "remove", "syscall": "unlinkat", "path": f"{sub}/linked",
         "result": "ok"},
        {"id": "e104", "op": "create", "syscall": "symlinkat", "path": f"{sub}/sym",
         "result": "ok"},
        {"id": "e105", "op": "stat", "syscall": "readlinkat", "path": f"{sub}/sym", "result": "ok"},
        {"id": "e106", "op": "remove", "syscall": "unlinkat", "path": f"{sub}/sym", "result": "ok"},
    ]  # fmt: skip


def test_fixture_threads_unfinished_resumed(fixture_events: Any) -> None:
    text = (FIXTURES / "threads.trace").read_text()
    assert "<unfinished ...>" in text and "resumed>" in text  # the fixture does interleave
    obs = fixture_events("threads")
    assert not [n for n in obs["notes"] if "skipped" in n or "first half" in n]
    ev = obs["events"]
    main_pid = ev[0]["pid"]
    got = [(e["pid"] == main_pid, e["op"], e["syscall"]) for e in _with_pid(ev, "/fifo", "/x")]
    assert got == [
        (True, "create", "mknodat"),
        (True, "stat", "newfstatat"),  # os.stat('x') while the reader thread blocks
        (True, "create", "openat"),  # the writer's open
        (False, "read", "openat"),  # the thread's open, resumed after the writer's
        (True, "remove", "unlink"),
    ]


def _with_pid(events: list[dict[str, Any]], *suffixes: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("path") and e["path"].endswith(suffixes)]


def test_fixture_path_with_newline_quote_and_angle(fixture_events: Any) -> None:
    name = f'{FIXTURE_CWD}/a>b\nc"d(e) = 1'
    ev = _with(fixture_events("weird_path")["events"], "a>b")
    assert ev == [
        {"id": "e95", "op": "create", "syscall": "openat", "path": name, "result": "ok"},
        {"id": "e96", "op": "stat", "syscall": "newfstatat", "path": name, "result": "ok"},
        {"id": "e97", "op": "remove", "syscall": "unlink", "path": name, "result": "ok"},
    ]


def _net(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        if e["op"] in ("socket", "connect", "bind", "send"):
            e = dict(e)
            e.pop("time")
            e.pop("pid")
            out.append(e)
    return out


def test_fixture_tcp_connect_bind_and_udp_send(fixture_events: Any) -> None:
    line = next(x for x in (FIXTURES / "tcp.trace").open() if " connect(" in x)
    port = int(line.split("htons(", 1)[1].split(")", 1)[0])
    assert port == 59029  # the listener's ephemeral port when it was recorded
    assert _net(fixture_events("tcp")["events"]) == [
        {"id": "e176", "op": "socket", "syscall": "socket", "family": "inet",
         "sock_type": "stream", "result": "ok"},
        {"id": "e177", "op": "bind", "syscall": "bind", "port": 0, "address": "127.0.0.1",
         "family": "inet", "sock_type": "stream", "result": "ok"},
        {"id": "e178", "op": "socket", "syscall": "socket", "family": "inet",
         "sock_type": "stream", "result": "ok"},
        {"id": "e179", "op": "connect", "syscall": "connect", "port": port,
         "address": "127.0.0.1", "family": "inet", "sock_type": "stream", "result": "ok"},
        {"id": "e180", "op": "socket", "syscall": "socket", "family": "inet6",
         "sock_type": "dgram", "result": "ok"},
        {"id": "e181", "op": "send", "syscall": "sendto", "port": 9, "address": "::1",
         "family": "inet6", "sock_type": "dgram", "result": "ok"},
    ]  # fmt: skip


def test_fixture_unix_sockets(fixture_events: Any) -> None:
    sock = f"{FIXTURE_CWD}/sock"
    assert _net(fixture_events("unix")["events"]) == [
        {"id": "e176", "op": "socket", "syscall": "socket", "family": "unix",
         "sock_type": "stream", "result": "ok"},
        {"id": "e177", "op": "bind", "syscall": "bind", "path": sock, "address": "sock",
         "family": "unix", "sock_type": "stream", "result": "ok"},
        {"id": "e178", "op": "socket", "syscall": "socket", "family": "unix",
         "sock_type": "stream", "result": "ok"},
        {"id": "e179", "op": "connect", "syscall": "connect", "path": sock, "address": "sock",
         "family": "unix", "sock_type": "stream", "result": "ok"},
        {"id": "e180", "op": "socket", "syscall": "socket", "family": "unix",
         "sock_type": "stream", "result": "ok"},
        {"id": "e181", "op": "bind", "syscall": "bind", "address": "@cvg-abstract",
         "family": "unix", "sock_type": "stream", "result": "ok"},
    ]  # fmt: skip


def test_fixture_exit_group_and_signal(fixture_events: Any) -> None:
    text = (FIXTURES / "exit_group.trace").read_text()
    assert "exit_group(3)" in text and "= ?" in text
    obs = fixture_events("exit_group")
    ev = obs["events"]
    inner = next(e for e in ev if e["op"] == "execute" and e["path"] == "/usr/bin/sh")
    sig = [e for e in ev if e["op"] == "signal"]
    assert [(e["syscall"], e["pid"], e["target_pid"], e["result"]) for e in sig] == [
        ("kill", inner["pid"], inner["pid"], "ok")
    ]
    assert not any(e["syscall"] in ("exit_group", "exit") for e in ev)
    # -qq leaves out "+++ exited with" lines: the status comes from strace's own exit.
    assert obs["exit_status"] is None
