"""The strace line parser: hand-written edge cases, then recorded strace 6.1 output."""

from __future__ import annotations

import pytest

from cvg_trace.parse import Fd, Record, TraceParser, parse_fd, split_args, string_arg, unescape


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


# ---------------------------------------------------------------- sockets' ends


@pytest.mark.parametrize(
    ("line", "name", "args", "ret_fd"),
    [
        (
            "7 1.0 socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, "
            "[3<UNIX-STREAM:[39975->39976]>, 8<UNIX-STREAM:[39976->39975]>]) = 0",
            "socketpair",
            ["AF_UNIX", "SOCK_STREAM|SOCK_CLOEXEC", "0",
             "[3<UNIX-STREAM:[39975->39976]>, 8<UNIX-STREAM:[39976->39975]>]"],
            None,
        ),
        (
            '7 1.0 sendto(8<UNIX-STREAM:[39976->39975]>, "\\0", 1, 0, NULL, 0) = 1',
            "sendto",
            ["8<UNIX-STREAM:[39976->39975]>", '"\\0"', "1", "0", "NULL", "0"],
            None,
        ),
        (
            '7 1.0 sendto(5<TCP:[127.0.0.1:40000->127.0.0.1:8080]>, "GET /", 5, '
            "MSG_NOSIGNAL, NULL, 0) = 5",
            "sendto",
            ["5<TCP:[127.0.0.1:40000->127.0.0.1:8080]>", '"GET /"', "5", "MSG_NOSIGNAL",
             "NULL", "0"],
            None,
        ),
        (
            "7 1.0 accept4(3<TCPv6:[[::1]:8080]>, {sa_family=AF_INET6, sin6_port=htons(5),"
            ' sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), '
            "sin6_scope_id=0}, [28], SOCK_CLOEXEC) = 4<TCPv6:[[::1]:8080->[::1]:40000]>",
            "accept4",
            None,
            "TCPv6:[[::1]:8080->[::1]:40000]",
        ),
        (
            '7 1.0 connect(3<UNIX-STREAM:[5->6,"/run/a>b.sock"]>, {sa_family=AF_UNIX, '
            'sun_path="/run/x.sock"}, 110) = 0',
            "connect",
            ['3<UNIX-STREAM:[5->6,"/run/a>b.sock"]>',
             '{sa_family=AF_UNIX, sun_path="/run/x.sock"}', "110"],
            None,
        ),
    ],
)  # fmt: skip
def test_a_sockets_ends_do_not_end_its_annotation(
    line: str, name: str, args: list[str] | None, ret_fd: str | None
) -> None:
    """strace joins a connected socket's ends with "->" inside its brackets; the ">"
    there is not the end of the annotation, so the line is understood whole."""
    (rec,), p = feed_all([line])
    assert p.skipped == 0
    assert rec.name == name
    if args is not None:
        assert rec.args == args
    assert rec.ret_fd == ret_fd


def test_a_resumed_half_with_a_sockets_ends_is_understood() -> None:
    lines = [
        "7 1.0 getsockname(3<UNIX-STREAM:[39975->39976]>,  <unfinished ...>",
        "7 1.1 <... getsockname resumed>{sa_family=AF_UNIX}, [128 => 2]) = 0",
        "7 1.2 recvfrom(3<UNIX-STREAM:[39975->39976]>,  <unfinished ...>",
        "7 1.3 <... recvfrom resumed>0x28d94ca0, 4096, 0, NULL, NULL) = -1 EAGAIN "
        "(Resource temporarily unavailable)",
    ]
    recs, p = feed_all(lines)
    assert p.skipped == 0
    assert [r.name for r in recs] == ["getsockname", "recvfrom"]
    assert recs[1].errno == "EAGAIN"


def test_skipped_lines_are_counted_by_call_and_kept() -> None:
    """What was not understood stays visible: by call, and the first few lines."""
    bad = ['7 1.0 openat(AT_FDCWD, "/etc/unterminated', "7 1.1 not a strace line at all"]
    bad += [f'7 1.{i} <... futex resumed>"unterminated' for i in range(2, 9)]
    _, p = feed_all(bad)
    assert p.skipped == len(bad)
    assert p.skipped_by_call == {"openat": 1, "": 1, "futex": 7}
    assert p.skipped_lines == bad[: TraceParser.KEPT_LINES]
