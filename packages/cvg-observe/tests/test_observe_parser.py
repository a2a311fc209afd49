"""The strace line parser: hand-written edge cases, then recorded strace 6.1 output."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from conftest import FIXTURE_CWD, FIXTURES

from cvg_run.strace.parse import Fd, Record, TraceParser, parse_fd, split_args, string_arg, unescape


def feed_all(lines: list[str]) -> tuple[list[Record], TraceParser]:
    p = TraceParser()
    out = [r for r in (p.feed(line) for line in lines) if r is not None]
    return out, p


# ---------------------------------------------------------------- pieces


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain", "plain"),
        (r"a\nb", "a\nb"),
        (r"a\76b", "a>b"),
        (r"a\74b\76", "a<b>"),
        (r"q\"uote", 'q"uote'),
        (r"back\\slash", "back\\slash"),
        (r"tab\there", "tab\there"),
        (r"\303\251t\303\251", "été"),  # UTF-8 bytes as octal escapes
        (r"\x41\x42", "AB"),
        (r"\377", "\\xff"),  # not UTF-8: kept visible, not lost
        (r"\0", "\0"),
    ],
)
def test_unescape(raw: str, expected: str) -> None:
    assert unescape(raw) == expected


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("3</etc/hostname>", Fd(3, "/etc/hostname")),
        ("AT_FDCWD</work>", Fd(None, "/work")),
        ("AT_FDCWD", Fd(None, None)),
        ("7", Fd(7, None)),
        ("1</dev/null<char 1:3>>", Fd(1, "/dev/null")),
        ("3</tmp/a\\76b\\nc>", Fd(3, "/tmp/a>b\nc")),
        ("4</tmp/gone (deleted)>", Fd(4, "/tmp/gone")),
        (
            "5<TCP:[127.0.0.1:40000->127.0.0.1:5000]>",
            Fd(5, "TCP:[127.0.0.1:40000->127.0.0.1:5000]"),
        ),
        ('6<UNIX-STREAM:[123,"/run/x.sock"]>', Fd(6, 'UNIX-STREAM:[123,"/run/x.sock"]')),
        ("O_RDONLY", None),
    ],
)
def test_parse_fd(arg: str, expected: Fd | None) -> None:
    assert parse_fd(arg) == expected


def test_fd_path_is_only_for_files() -> None:
    assert Fd(3, "/etc/x").path == "/etc/x"
    assert Fd(3, "pipe:[12]").path is None
    assert Fd(None, None).path is None


def test_string_arg() -> None:
    assert string_arg('"/etc/x"') == "/etc/x"
    assert string_arg('"a\\"b"') == 'a"b'
    assert string_arg('"long"...') == "long"
    assert string_arg("NULL") is None
    assert string_arg("AT_FDCWD") is None


def test_split_args_keeps_groups_strings_and_descriptors_whole() -> None:
    text = (
        '3</tmp/a(b, c\\76>, "x, y) = 1", {sa_family=AF_INET, sin_port=htons(80), '
        'sin_addr=inet_addr("1.2.3.4")}, [{fd=4</p>, events=POLLIN}], 16'
    )
    assert split_args(text) == [
        "3</tmp/a(b, c\\76>",
        '"x, y) = 1"',
        '{sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("1.2.3.4")}',
        "[{fd=4</p>, events=POLLIN}]",
        "16",
    ]


# ---------------------------------------------------------------- lines


def test_complete_call_with_errno_and_time() -> None:
    (rec,), _ = feed_all(
        [
            '42 1700000000.250000 openat(AT_FDCWD</w>, "x", O_RDONLY) = -1 ENOENT '
            "(No such file or directory)\n"
        ]
    )
    assert rec == Record(
        "syscall",
        42,
        1700000000.25,
        "openat",
        ["AT_FDCWD</w>", '"x"', "O_RDONLY"],
        ret="-1",
        errno="ENOENT",
    )


def test_returned_descriptor_is_decoded() -> None:
    (rec,), _ = feed_all(['9 1.5 openat(AT_FDCWD, "/a\\76b", O_RDONLY) = 3</a\\76b>'])
    assert (rec.ret, rec.ret_fd, rec.errno) == ("3", "/a>b", None)


def test_unfinished_and_resumed_are_joined_by_pid() -> None:
    recs, p = feed_all(
        [
            '10 1.0 openat(AT_FDCWD</w>, "fifo", O_RDONLY <unfinished ...>',
            '11 1.1 newfstatat(AT_FDCWD</w>, "x",  <unfinished ...>',
            "11 1.2 <... newfstatat resumed>{st_mode=S_IFREG|0644, ...}, 0) = 0",
            "10 1.3 <... openat resumed>) = 3</w/fifo>",
        ]
    )
    assert [(r.pid, r.time, r.name, r.args, r.ret) for r in recs] == [
        (11, 1.1, "newfstatat", ["AT_FDCWD</w>", '"x"', "{st_mode=S_IFREG|0644, ...}", "0"], "0"),
        (10, 1.0, "openat", ["AT_FDCWD</w>", '"fifo"', "O_RDONLY"], "3"),
    ]
    assert p.pending() == 0 and p.unmatched == 0


def test_resumed_again_unfinished() -> None:
    recs, p = feed_all(
        [
            "5 1.0 wait4(-1,  <unfinished ...>",
            "5 1.1 <... wait4 resumed> <unfinished ...>",
            "5 1.2 <... wait4 resumed>0x7ffd, 0, NULL) = 6",
        ]
    )
    assert [(r.name, r.args, r.ret) for r in recs] == [
        ("wait4", ["-1", "0x7ffd", "0", "NULL"], "6")
    ]
    assert p.pending() == 0


def test_resumed_without_first_half_is_counted() -> None:
    recs, p = feed_all(["7 1.0 <... openat resumed>) = 3</x>"])
    assert [(r.name, r.ret_fd) for r in recs] == [("openat", "/x")]
    assert p.unmatched == 1


def test_exit_group_never_returns_and_exit_lines() -> None:
    recs, p = feed_all(
        [
            "3 1.0 exit_group(0)                     = ?",
            "3 1.1 +++ exited with 0 +++",
            "4 1.2 +++ killed by SIGKILL +++",
            "5 1.3 +++ killed by SIGSEGV (core dumped) +++",
            "6 1.4 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=9} ---",
            "6 1.5 +++ superseded by execve in pid 7 +++",
        ]
    )
    assert [(r.kind, r.pid, r.name, r.ret, r.status) for r in recs] == [
        ("syscall", 3, "exit_group", "?", None),
        ("exit", 3, "", None, 0),
        ("killed", 4, "SIGKILL", None, 9),
        ("killed", 5, "SIGSEGV", None, 11),
        ("signal", 6, "SIGCHLD", None, None),
    ]
    assert p.skipped == 0


def test_unfinished_call_dropped_when_its_process_dies() -> None:
    recs, p = feed_all(["8 1.0 read(0,  <unfinished ...>", "8 1.1 +++ killed by SIGKILL +++"])
    assert [r.kind for r in recs] == ["killed"]
    assert p.pending() == 0


def test_interrupted_call_keeps_its_pseudo_errno() -> None:
    (rec,), _ = feed_all(
        ["9 1.0 wait4(-1, 0x7f, 0, NULL) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)"]
    )
    assert (rec.ret, rec.errno) == ("?", "ERESTARTSYS")


def test_terminal_format_and_no_time() -> None:
    recs, _ = feed_all(['[pid  1234] chdir("/x") = 0', 'unlink("y") = 0'])
    assert [(r.pid, r.time, r.name) for r in recs] == [(1234, None, "chdir"), (0, None, "unlink")]


def test_foreign_and_broken_lines_are_skipped_not_fatal() -> None:
    recs, p = feed_all(
        [
            "strace: Process 5 attached",
            "",
            '12 1.0 openat(AT_FDCWD, "unterminated',
            '12 1.1 chdir("/ok") = 0',
        ]
    )
    assert [r.name for r in recs] == ["chdir"]
    assert p.skipped == 2


def test_clone3_with_arrow_in_arguments() -> None:
    (rec,), _ = feed_all(
        [
            "1 1.0 clone3({flags=CLONE_VM|CLONE_FS|CLONE_THREAD, child_tid=0x7f} => "
            "{parent_tid=[2]}, 88) = 2"
        ]
    )
    assert rec.ret == "2"
    assert rec.args == [
        "{flags=CLONE_VM|CLONE_FS|CLONE_THREAD, child_tid=0x7f} => {parent_tid=[2]}",
        "88",
    ]


# ---------------------------------------------------------------- recorded strace 6.1


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
        {"id": "e95", "op": "read", "syscall": "openat", "path": sub, "result": "ok"},
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
