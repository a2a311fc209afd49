"""From records to events: processes, working directories, ops (hand-written traces)."""

from __future__ import annotations

from typing import Any

from conftest import events_of, observe_lines

from cvg_schema import Observation, loads


def ev(lines: list[str], cwd: str = "/w", **kwargs: Any) -> list[dict[str, Any]]:
    return events_of(observe_lines(lines, cwd=cwd, **kwargs))


def brief(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["pid"], e["op"], e.get("path"), e["result"]) for e in events]


def test_relative_paths_follow_each_process_cwd_through_fork() -> None:
    lines = [
        '1 1.0 execve("/bin/sh", ["sh"], 0x1 /* 3 vars */) = 0',
        '1 1.1 chdir("sub") = 0',
        "1 1.2 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x1) = 2",
        '1 1.3 chdir("/elsewhere") = 0',  # the parent moves on; the child keeps sub
        '2 1.4 open("../x", O_RDONLY) = 3',
        '1 1.5 stat("y", 0x7ff) = -1 ENOENT (No such file or directory)',
        '2 1.6 chdir("nope") = -1 ENOENT (No such file or directory)',
        '2 1.7 access("z", R_OK) = 0',  # a failed chdir changes nothing
    ]
    assert brief(ev(lines)) == [
        (1, "execute", "/bin/sh", "ok"),
        (1, "chdir", "/w/sub", "ok"),
        (1, "chdir", "/elsewhere", "ok"),
        (2, "read", "/w/x", "ok"),
        (1, "stat", "/elsewhere/y", "ENOENT"),
        (2, "chdir", "/w/sub/nope", "ENOENT"),
        (2, "stat", "/w/sub/z", "ok"),
    ]


def test_threads_and_clone_fs_share_the_cwd_vfork_copies_it() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        "1 1.1 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD) = 2",
        "1 1.2 vfork() = 3",
        '2 1.3 chdir("/thread") = 0',  # moves the whole thread group
        '1 1.4 open("a", O_RDONLY) = 3',
        '3 1.5 open("b", O_RDONLY) = 3',  # the vfork child copied /w before that
    ]
    assert brief(ev(lines)) == [
        (1, "execute", "/t", "ok"),
        (2, "chdir", "/thread", "ok"),
        (1, "read", "/thread/a", "ok"),
        (3, "read", "/w/b", "ok"),
    ]


def test_child_seen_before_its_fork_returns() -> None:
    # One fork in flight: the new pid is its child, cwd and all.
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        '1 1.1 chdir("d") = 0',
        "1 1.2 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>",
        '2 1.3 open("f", O_RDONLY) = 3',
        "1 1.4 <... clone resumed>, child_tidptr=0x1) = 2",
    ]
    assert brief(ev(lines)) == [
        (1, "execute", "/t", "ok"),
        (1, "chdir", "/w/d", "ok"),
        (2, "read", "/w/d/f", "ok"),
    ]


def test_child_held_back_until_the_fork_that_made_it_returns() -> None:
    # Two forks in flight: which one made pid 3 is known only when one returns it.
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        "1 1.1 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 2",
        '2 1.2 chdir("/two") = 0',
        "1 1.3 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>",
        "2 1.4 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>",
        '3 1.5 open("f", O_RDONLY) = 3',
        "2 1.6 <... clone resumed>) = 3",
        "1 1.7 <... clone resumed>) = 4",
    ]
    obs = observe_lines(lines, cwd="/w")
    assert brief(events_of(obs)) == [
        (1, "execute", "/t", "ok"),
        (2, "chdir", "/two", "ok"),
        (3, "read", "/two/f", "ok"),
    ]
    assert not [n for n in obs["notes"] if "parent" in n]


def test_orphan_that_never_finds_its_parent_is_kept_and_noted() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        '9 1.1 open("rel", O_RDONLY) = 3',
        '9 1.2 open("/abs", O_RDONLY) = 3',
    ]
    obs = observe_lines(lines, cwd="/w")
    assert brief(events_of(obs)) == [
        (1, "execute", "/t", "ok"),
        (9, "read", "rel", "ok"),  # as reported: nothing to resolve it against
        (9, "read", "/abs", "ok"),
    ]
    assert any("1 processes appeared before their parent" in n for n in obs["notes"])


def test_at_fdcwd_decoded_by_yy_wins_over_the_tracked_cwd() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        '1 1.1 openat(AT_FDCWD</real>, "a", O_RDONLY) = 3</real/a>',
        '1 1.2 open("b", O_RDONLY) = 4',  # the decoded cwd is remembered
        '1 1.3 openat(AT_FDCWD, "c", O_RDONLY) = 5',
    ]
    assert [e["path"] for e in ev(lines)] == ["/t", "/real/a", "/real/b", "/real/c"]


def test_dirfds_and_empty_paths() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        '1 1.1 openat(3</d\\76x>, "f", O_RDONLY) = 4</d\\76x/f>',
        '1 1.2 newfstatat(4</d\\76x/f>, "", {st_mode=S_IFREG|0644, ...}, AT_EMPTY_PATH) = 0',
        "1 1.3 utimensat(4</d/f>, NULL, NULL, 0) = 0",
        '1 1.4 openat(7, "g", O_RDONLY) = -1 EBADF (Bad file descriptor)',
        '1 1.5 unlinkat(3</d>, "sub", AT_REMOVEDIR) = 0',
        '1 1.6 renameat2(AT_FDCWD</w>, "a", 3</d>, "b", RENAME_NOREPLACE) = 0',
        '1 1.7 statx(AT_FDCWD</w>, "/abs/../p", AT_STATX_SYNC_AS_STAT, STATX_ALL, 0x7f) = 0',
    ]
    got = [(e["op"], e["syscall"], e.get("path"), e.get("path2"), e["result"]) for e in ev(lines)]
    assert got == [
        ("execute", "execve", "/t", None, "ok"),
        ("read", "openat", "/d>x/f", None, "ok"),
        # fstat of an open descriptor: no event
        ("other", "utimensat", "/d/f", None, "ok"),
        ("read", "openat", "g", None, "EBADF"),  # an undecoded descriptor: as reported
        ("remove", "unlinkat", "/d/sub", None, "ok"),
        ("rename", "renameat2", "/w/a", "/d/b", "ok"),
        ("stat", "statx", "/p", None, "ok"),
    ]


def test_open_flags_decide_the_op() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        '1 1.1 openat(AT_FDCWD</w>, "r", O_RDONLY|O_CLOEXEC) = 3',
        '1 1.2 openat(AT_FDCWD</w>, "w", O_WRONLY|O_TRUNC) = 3',
        '1 1.3 openat(AT_FDCWD</w>, "rw", O_RDWR) = 3',
        '1 1.4 openat(AT_FDCWD</w>, "c", O_WRONLY|O_CREAT|O_EXCL, 0600) = 3',
        '1 1.5 openat(AT_FDCWD</w>, "p", O_PATH|O_CLOEXEC) = 3',
        '1 1.6 openat(AT_FDCWD</w>, "a", O_WRONLY|O_APPEND) = 3',
        '1 1.7 openat2(AT_FDCWD</w>, "h", {flags=O_RDWR|O_CREAT, mode=0644, resolve=0}, 24) = 3',
        '1 1.8 open("/tmp", O_RDWR|O_TMPFILE, 0600) = 3',
        '1 1.9 creat("k", 0644) = 3',
        '1 2.0 truncate("k", 0) = 0',
    ]
    assert [(e["op"], e["path"]) for e in ev(lines)][1:] == [
        ("read", "/w/r"),
        ("write", "/w/w"),
        ("write", "/w/rw"),
        ("create", "/w/c"),
        ("stat", "/w/p"),
        ("write", "/w/a"),
        ("create", "/w/h"),
        ("create", "/tmp"),
        ("create", "/w/k"),
        ("write", "/w/k"),
    ]


def test_network_events() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        "1 1.1 socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK, IPPROTO_TCP) = 3<TCP:[1]>",
        "1 1.2 connect(3<TCP:[1]>, {sa_family=AF_INET, sin_port=htons(443), "
        'sin_addr=inet_addr("93.184.216.34")}, 16) = -1 EINPROGRESS (Operation now in progress)',
        "1 1.3 connect(4<TCPv6:[2]>, {sa_family=AF_INET6, sin6_port=htons(8080), "
        'sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28)'
        " = -1 ECONNREFUSED (Connection refused)",
        "1 1.4 socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 5<NETLINK:[3]>",
        "1 1.5 socket(AF_VSOCK, SOCK_STREAM, 0) = -1 EAFNOSUPPORT (Address family not supported)",
        "1 1.6 sendmsg(6<UDP:[4]>, {msg_name={sa_family=AF_INET, sin_port=htons(53), "
        'sin_addr=inet_addr("127.0.0.53")}, msg_namelen=16, msg_iov=[{iov_base="x", iov_len=1}],'
        " msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) = 1",
        '1 1.7 sendto(6<UDP:[4]>, "x", 1, MSG_NOSIGNAL, NULL, 0) = 1',  # connected: no event
        '1 1.8 connect(7<UNIX-STREAM:[5]>, {sa_family=AF_UNIX, sun_path="/run/a\\"b.sock"}, 110)'
        " = 0",
        "1 1.9 bind(8<TCP:[6]>, {sa_family=AF_INET, sin_port=htons(5000), "
        'sin_addr=inet_addr("0.0.0.0")}, 16) = -1 EACCES (Permission denied)',
    ]
    got = [{k: v for k, v in e.items() if k not in ("id", "pid", "syscall")} for e in ev(lines)[1:]]
    assert got == [
        {"op": "socket", "family": "inet", "sock_type": "stream", "result": "ok"},
        {"op": "connect", "port": 443, "address": "93.184.216.34", "family": "inet",
         "sock_type": "stream", "result": "ok"},
        {"op": "connect", "port": 8080, "address": "::1", "family": "inet6",
         "sock_type": "stream", "result": "ECONNREFUSED"},
        {"op": "socket", "family": "netlink", "sock_type": "raw", "result": "ok"},
        {"op": "socket", "family": 40, "sock_type": "stream", "result": "EAFNOSUPPORT"},
        {"op": "send", "port": 53, "address": "127.0.0.53", "family": "inet",
         "sock_type": "dgram", "result": "ok"},
        {"op": "connect", "path": '/run/a"b.sock', "address": '/run/a"b.sock', "family": "unix",
         "sock_type": "stream", "result": "ok"},
        {"op": "bind", "port": 5000, "address": "0.0.0.0", "family": "inet",
         "sock_type": "stream", "result": "EACCES"},
    ]  # fmt: skip


def test_signals_and_denied_calls() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1 /* 3 vars */) = 0',
        "1 1.1 kill(-5, SIGTERM) = 0",
        "1 1.2 tgkill(7, 8, SIGUSR1) = -1 ESRCH (No such process)",
        "1 1.3 pidfd_send_signal(3<anon_inode:[pidfd]<pid:42>>, SIGKILL, NULL, 0) = 0",
        "1 1.4 unshare(CLONE_NEWUSER) = -1 EPERM (Operation not permitted)",
        '1 1.5 mount("none", "/mnt", "tmpfs", 0, NULL) = -1 EPERM (Operation not permitted)',
        "1 1.6 clone(child_stack=NULL, flags=CLONE_NEWNS|SIGCHLD) = -1 EPERM (Operation not "
        "permitted)",
        "1 1.7 clone3({flags=CLONE_VM, exit_signal=SIGCHLD}, 88) = -1 ENOSYS (Function not "
        "implemented)",
        "1 1.8 wait4(-1, NULL, 0, NULL) = -1 ECHILD (No child processes)",
    ]
    got = [
        (e["op"], e["syscall"], e.get("target_pid"), e.get("path"), e["result"]) for e in ev(lines)
    ]
    assert got[1:] == [
        ("signal", "kill", -5, None, "ok"),
        ("signal", "tgkill", 7, None, "ESRCH"),
        ("signal", "pidfd_send_signal", 42, None, "ok"),
        ("other", "unshare", None, None, "EPERM"),
        ("other", "mount", None, "/mnt", "EPERM"),  # the mount point
        ("other", "clone", None, None, "EPERM"),
    ]


def test_launcher_events_are_dropped_until_the_command_is_execd() -> None:
    lines = [
        '1 1.0 execve("/usr/bin/python3", ["python3", "-m", "cvg_kernel"], 0x1) = 0',
        '1 1.1 openat(AT_FDCWD</w>, "/usr/lib/python3/cvg_kernel.py", O_RDONLY) = 3',
        '1 1.2 execve("/usr/local/bin/cat", ["cat", "f"], 0x2) = -1 ENOENT (No such file)',
        '1 1.3 execve("/usr/bin/cat", ["cat", "f"], 0x2) = 0',
        '1 1.4 openat(AT_FDCWD</w>, "f", O_RDONLY) = 3</w/f>',
        "1 1.5 exit_group(0) = ?",
        "1 1.6 +++ exited with 0 +++",
    ]
    obs = observe_lines(lines, skip_execs=1)
    assert brief(events_of(obs)) == [
        (1, "execute", "/usr/bin/cat", "ok"),
        (1, "read", "/w/f", "ok"),
    ]
    assert [e["id"] for e in obs["events"]] == ["e1", "e2"]
    assert obs["executables"][0]["event_id"] == "e1"
    assert obs["exit_status"] == 0


def test_an_attached_trace_starts_at_the_commands_exec() -> None:
    """strace attached to the held process before it exec'd: its last calls (signals
    reset, the PATH search) are not the tool's, and neither are their counts."""
    lines = [
        "7 1.0 rt_sigaction(SIGPIPE, {sa_handler=SIG_DFL}, NULL, 8) = 0",
        '7 1.1 execve("/usr/local/bin/cat", ["cat", "f"], 0x2) = -1 ENOENT (No such file)',
        '7 1.2 execve("/usr/bin/cat", ["cat", "f"], 0x2) = 0',
        '7 1.3 openat(AT_FDCWD</w>, "f", O_RDONLY) = 3</w/f>',
        "7 1.4 exit_group(0) = ?",
    ]
    obs = observe_lines(lines, attached=True)
    assert brief(events_of(obs)) == [
        (7, "execute", "/usr/bin/cat", "ok"),
        (7, "read", "/w/f", "ok"),
    ]
    assert obs["syscalls"] == {"execve": 1, "exit_group": 1, "openat": 1}


def test_exit_status_of_the_first_process_only() -> None:
    lines = [
        '1 1.0 execve("/t", ["t"], 0x1) = 0',
        "1 1.1 clone(child_stack=NULL, flags=SIGCHLD) = 2",
        "2 1.2 +++ exited with 9 +++",
        "1 1.3 +++ killed by SIGTERM +++",
    ]
    assert observe_lines(lines)["exit_status"] == 128 + 15


def test_observation_is_a_valid_message_with_times() -> None:
    lines = ['1 1700000000.5 execve("/t", ["t"], 0x1) = 0', '1 1700000000.75 chdir("/x") = 0']
    obs = observe_lines(lines, cwd="/w", argv=["t"], home="/h", scratch=["/tmp/s"])
    import orjson

    msg = loads(orjson.dumps(obs))
    assert isinstance(msg, Observation)
    assert [(e.id, e.time) for e in msg.events] == [("e1", 1700000000.5), ("e2", 1700000000.75)]
    assert (msg.cwd, msg.home, msg.scratch, msg.strace_version) == ("/w", "/h", ["/tmp/s"], "6.1")
    assert msg.event("e2").op == "chdir"
