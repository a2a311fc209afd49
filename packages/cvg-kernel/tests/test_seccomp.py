"""The seccomp filter on the real kernel, and the spec checks of the builder.

Every enforcement test runs the attack twice in separate forked children, once
without the filter (to prove the attack works here, or to record the errno the
kernel itself gives) and once with it, as root and as an unprivileged user.
Everything the children use is imported here, before any privilege drop.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import pwd
import resource
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from system_calls import syscalls

from cvg_kernel import libc, syscall_table
from cvg_kernel.seccomp import (
    DEFAULT_DENY,
    DEFAULT_SOCKETS,
    Filter,
    SeccompError,
    _SockFilter,
    _SockFprog,
    build_program,
    compile_spec,
)
from cvg_testing import Child, Sink, attempt, in_child, needs_abi

ARCH = libc.machine()
NR = syscall_table.TABLES[ARCH]
PR_SET_NO_NEW_PRIVS = 38
x86_only = pytest.mark.skipif(ARCH != "x86_64", reason="x86_64 only")

# Socket constants from <sys/socket.h>; the named ones exist in the socket module too, but
# spelling them out keeps these tests independent of what Python was built with.
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_PACKET = 1, 2, 3, 10
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000
IPPROTO_ICMP, IPPROTO_UDP = 1, 17
ETH_P_ALL_BE = 0x0300
CLONE_NEWUSER = 0x10000000
TIOCSTI, TIOCLINUX, TIOCSCTTY, TIOCGWINSZ = 0x5412, 0x541C, 0x540E, 0x5413
MFD_CLOEXEC, MFD_NOEXEC_SEAL, MFD_EXEC = 0x1, 0x8, 0x10
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
JUNK = 1 << 32  # set in the high word of an int argument: the kernel never sees it

DEFAULT = Filter.build()


def sc(name: str, *args: int | object) -> int:
    """Raw syscall by name; ints go as full 64-bit longs so high words reach the kernel."""
    return libc.syscall(NR[name], *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))


def confine(filt: Filter) -> None:
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
    filt.install()


def probe(fn: Callable[[], Any], user: pwd.struct_passwd | None, filt: Filter | None) -> Any:
    """Run ``fn`` in a child, under ``filt`` if given; return what it returned."""

    def body() -> Any:
        if filt is not None:
            confine(filt)
        return fn()

    child = in_child(body, user=user)
    assert child.error is None, child.error
    assert child.exitcode == 0, child.status
    return child.value


def both(
    fn: Callable[[], Any], user: pwd.struct_passwd | None, filt: Filter = DEFAULT
) -> tuple[Any, Any]:
    """(result without the filter, result with it), each from its own child."""
    return probe(fn, user, None), probe(fn, user, filt)


def in_grandchild(fn: Callable[[], int]) -> int:
    """Run ``fn`` in a further fork; its return value is the exit status."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            code = fn()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def is_root(user: pwd.struct_passwd | None) -> bool:
    return user is None and os.geteuid() == 0


# ----------------------------------------------------------------- whole-syscall denials


def test_unshare_is_denied(identity: pwd.struct_passwd | None) -> None:
    def attack() -> int:
        return attempt(lambda: sc("unshare", 0))  # a no-op that succeeds when allowed

    assert both(attack, identity) == (0, errno.EPERM)


def test_deny_errno_is_configurable(identity: pwd.struct_passwd | None) -> None:
    filt = Filter.build(deny_errno="EACCES")

    def attack() -> int:
        return attempt(lambda: sc("unshare", 0))

    assert both(attack, identity, filt) == (0, errno.EACCES)


def test_ptrace_traceme_is_denied(identity: pwd.struct_passwd | None) -> None:
    # In a grandchild, so the tracer it asks for is the child, never pytest.
    def attack() -> int:
        return in_grandchild(lambda: attempt(lambda: sc("ptrace", 0, 0, 0, 0)))

    assert both(attack, identity) == (0, errno.EPERM)


def test_execveat_is_denied(identity: pwd.struct_passwd | None) -> None:
    argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
    envp = (ctypes.c_char_p * 1)(None)

    def attack() -> int:
        return in_grandchild(
            lambda: attempt(lambda: sc("execveat", AT_FDCWD, b"/bin/true", argv, envp, 0))
        )

    assert both(attack, identity) == (0, errno.EPERM)  # 0 is /bin/true's own exit status


def test_kill_list_kills_the_process(identity: pwd.struct_passwd | None) -> None:
    filt = Filter.build(kill=["getppid"])

    def call() -> int:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        return sc("getppid")

    assert probe(call, identity, None) > 0
    child = in_child(lambda: (confine(filt), call()), user=identity)
    assert child.signal == signal.SIGSYS, (child.status, child.error)


@needs_abi(4)  # Linux 6.7+, so MFD_NOEXEC_SEAL (6.3) is there to require
def test_allowed_calls_still_work(identity: pwd.struct_passwd | None) -> None:
    def work() -> dict[str, Any]:
        master, slave = os.openpty()
        winsize = ctypes.create_string_buffer(8)
        a, b = socket.socketpair()
        return {
            "getpid": sc("getpid") == os.getpid(),
            "listdir": len(os.listdir("/")) > 0,
            "read": len(Path("/etc/passwd").read_bytes()) > 0,
            "socketpair": a.send(b"hi") == 2 and b.recv(2) == b"hi",
            "unix": attempt(lambda: sc("socket", AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)),
            "unix_seqpacket": attempt(lambda: sc("socket", AF_UNIX, 5, 0)),
            "inet": attempt(lambda: sc("socket", AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)),
            "inet6_dgram": attempt(lambda: sc("socket", AF_INET6, SOCK_DGRAM, 0)),
            "tiocgwinsz": attempt(lambda: sc("ioctl", slave, TIOCGWINSZ, winsize)),
            "sealed_memfd": attempt(
                lambda: sc("memfd_create", b"ok", MFD_NOEXEC_SEAL | MFD_CLOEXEC)
            ),
            "pipe": os.pipe() is not None,
            "master": master >= 0,
        }

    unfiltered, filtered = both(work, identity)
    assert unfiltered == filtered
    assert all(v in (True, 0) for v in filtered.values()), filtered


# ----------------------------------------------------------------------------- sockets


def test_netlink_gets_eafnosupport_even_with_junk_high_bits(
    identity: pwd.struct_passwd | None,
) -> None:
    def attack() -> list[int]:
        return [
            attempt(lambda: sc("socket", AF_NETLINK, SOCK_RAW, 0)),
            attempt(lambda: sc("socket", AF_NETLINK | JUNK, SOCK_RAW, 0)),
        ]

    unfiltered, filtered = both(attack, identity)
    assert unfiltered == [0, 0]  # the kernel reads an int: the junk is invisible to it
    assert filtered == [errno.EAFNOSUPPORT] * 2


def test_packet_sockets_are_refused(identity: pwd.struct_passwd | None) -> None:
    def attack() -> list[int]:
        return [
            attempt(lambda: sc("socket", AF_PACKET, SOCK_RAW, ETH_P_ALL_BE)),
            # Linux turns (AF_INET, SOCK_PACKET) into a packet socket.
            attempt(lambda: sc("socket", AF_INET, SOCK_PACKET, ETH_P_ALL_BE)),
        ]

    unfiltered, filtered = both(attack, identity)
    assert unfiltered == ([0, 0] if is_root(identity) else [errno.EPERM] * 2)
    assert filtered == [errno.EAFNOSUPPORT, errno.EPERM]


def test_raw_inet_needs_explicit_listing(identity: pwd.struct_passwd | None) -> None:
    def attack() -> list[int]:
        return [
            attempt(lambda: sc("socket", AF_INET, SOCK_RAW, IPPROTO_ICMP)),
            attempt(lambda: sc("socket", AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP)),
            attempt(lambda: sc("socket", AF_INET6, SOCK_RAW, 58)),
        ]

    unfiltered, filtered = both(attack, identity)
    kernel = 0 if is_root(identity) else errno.EPERM  # CAP_NET_RAW
    assert unfiltered == [kernel] * 3
    assert filtered == [errno.EPERM] * 3
    listed = Filter.build(sockets=[{"family": "inet", "types": ["raw"]}])
    assert probe(attack, identity, listed) == [kernel, kernel, errno.EAFNOSUPPORT]


def test_socket_types_and_families(identity: pwd.struct_passwd | None) -> None:
    filt = Filter.build(sockets=[{"family": "inet", "types": ["stream"]}])

    def attack() -> dict[str, int]:
        return {
            "stream": attempt(lambda: sc("socket", AF_INET, SOCK_STREAM, 0)),
            "stream_junk": attempt(lambda: sc("socket", AF_INET, SOCK_STREAM | JUNK, 0)),
            "stream_flags": attempt(
                lambda: sc("socket", AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)
            ),
            "dgram": attempt(lambda: sc("socket", AF_INET, SOCK_DGRAM, 0)),
            "dgram_junk": attempt(lambda: sc("socket", AF_INET | JUNK, SOCK_DGRAM | JUNK, 0)),
            "inet6": attempt(lambda: sc("socket", AF_INET6, SOCK_STREAM, 0)),
            "unix": attempt(lambda: sc("socket", AF_UNIX, SOCK_STREAM, 0)),
        }

    unfiltered, filtered = both(attack, identity, filt)
    assert set(unfiltered.values()) == {0}
    assert filtered == {
        "stream": 0,
        "stream_junk": 0,
        "stream_flags": 0,
        "dgram": errno.EPERM,
        "dgram_junk": errno.EPERM,
        "inet6": errno.EAFNOSUPPORT,
        "unix": errno.EAFNOSUPPORT,
    }


def test_socket_protocols(identity: pwd.struct_passwd | None) -> None:
    filt = Filter.build(
        sockets=[{"family": "inet", "types": ["dgram"], "protocols": [IPPROTO_UDP]}]
    )

    def attack() -> list[int]:
        return [
            attempt(lambda: sc("socket", AF_INET, SOCK_DGRAM, IPPROTO_UDP)),
            attempt(lambda: sc("socket", AF_INET, SOCK_DGRAM, IPPROTO_UDP | JUNK)),
            attempt(lambda: sc("socket", AF_INET, SOCK_DGRAM, 0)),
        ]

    unfiltered, filtered = both(attack, identity, filt)
    assert unfiltered == [0, 0, 0]
    assert filtered == [0, 0, errno.EPERM]


# ------------------------------------------------------------------------ clone, clone3


def _raw_clone(flags: int) -> int:
    # A fork-like clone (no new stack): the child returns 0 here and leaves at once.
    pid = sc("clone", flags, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _userns_restricted() -> bool:
    for knob, restricting in (
        ("kernel/unprivileged_userns_clone", "0"),  # Debian, Ubuntu
        ("kernel/apparmor_restrict_unprivileged_userns", "1"),  # Ubuntu 23.10+
        ("user/max_user_namespaces", "0"),
    ):
        try:
            if Path("/proc/sys", knob).read_text().strip() == restricting:
                return True
        except FileNotFoundError:
            pass
    return False


def test_clone_with_namespace_flags_is_denied(identity: pwd.struct_passwd | None) -> None:
    sigchld = int(signal.SIGCHLD)

    def attack() -> list[int]:
        return [
            attempt(lambda: _raw_clone(CLONE_NEWUSER | sigchld)),
            attempt(lambda: _raw_clone(CLONE_NEWUSER | sigchld | JUNK)),
            attempt(lambda: _raw_clone(sigchld)),
        ]

    unfiltered, filtered = both(attack, identity)
    if is_root(identity) or not _userns_restricted():
        assert unfiltered == [0, 0, 0]
    else:  # the host itself refuses unprivileged user namespaces
        assert unfiltered[0] == unfiltered[1] != 0 and unfiltered[2] == 0
    assert filtered == [errno.EPERM, errno.EPERM, 0]
    allowed = Filter.build(clone_namespaces=True, enosys=[])
    assert probe(attack, identity, allowed) == unfiltered


def test_clone3_gets_enosys(identity: pwd.struct_passwd | None) -> None:
    sigchld = int(signal.SIGCHLD)

    def clone3(flags: int) -> int:
        args = (ctypes.c_uint64 * 8)(flags, 0, 0, 0, sigchld, 0, 0, 0)
        pid = sc("clone3", args, ctypes.sizeof(args))
        if pid == 0:
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    def attack() -> list[int]:
        return [attempt(lambda: clone3(0)), attempt(lambda: clone3(CLONE_NEWUSER))]

    unfiltered, filtered = both(attack, identity)
    assert unfiltered == [0, 0]
    assert filtered == [errno.ENOSYS, errno.ENOSYS]


def test_fork_threads_and_subprocess_work_under_the_filter(
    identity: pwd.struct_passwd | None,
) -> None:
    def work() -> dict[str, Any]:
        seen: list[int] = []
        t = threading.Thread(target=lambda: seen.append(threading.get_native_id()))
        t.start()
        t.join()
        spawned = os.posix_spawn("/bin/true", ["true"], {})
        done = subprocess.run(["/bin/echo", "hi"], stdout=subprocess.PIPE, check=False)
        return {
            "fork": in_grandchild(lambda: 7),
            "thread": len(seen) == 1 and seen[0] != threading.get_native_id(),
            "posix_spawn": os.waitstatus_to_exitcode(os.waitpid(spawned, 0)[1]),
            "subprocess": [done.returncode, done.stdout.decode()],
        }

    expected = {"fork": 7, "thread": True, "posix_spawn": 0, "subprocess": [0, "hi\n"]}
    assert both(work, identity) == (expected, expected)


# ------------------------------------------------------------------------------- ioctl


def _legacy_tiocsti() -> bool:
    try:
        return Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() == "1"
    except FileNotFoundError:  # before 6.2 there was no switch: TIOCSTI always worked
        return True


def test_tiocsti_and_tioclinux_are_denied(identity: pwd.struct_passwd | None) -> None:
    def attack() -> dict[str, Any]:
        os.setsid()
        _master, slave = os.openpty()
        fcntl.ioctl(slave, TIOCSCTTY, 0)  # TIOCSTI wants the caller's own terminal
        os.set_blocking(slave, False)
        out: dict[str, Any] = {}
        for name, request in (("plain", TIOCSTI), ("junk", TIOCSTI | JUNK)):
            results = [
                attempt(lambda c=c, r=request: sc("ioctl", slave, r, ctypes.c_char_p(c)))
                for c in (b"x", b"\n")
            ]
            out[name] = results
        out["pushed"] = ""
        try:
            while True:  # canonical mode hands out one line per read
                out["pushed"] += os.read(slave, 16).decode()
        except BlockingIOError:
            pass
        buf = ctypes.create_string_buffer(64)
        out["tioclinux"] = attempt(lambda: sc("ioctl", slave, TIOCLINUX, buf))
        out["tioclinux_junk"] = attempt(lambda: sc("ioctl", slave, TIOCLINUX | JUNK, buf))
        return out

    unfiltered, filtered = both(attack, identity)
    if _legacy_tiocsti() or is_root(identity):
        assert unfiltered["plain"] == [0, 0] and unfiltered["junk"] == [0, 0]
        assert unfiltered["pushed"] == "x\nx\n"  # the bytes really arrived as input
    else:
        assert unfiltered["plain"] == [errno.EIO] * 2
    # A pty is not a VT: the kernel itself answers TIOCLINUX with ENOTTY.
    assert unfiltered["tioclinux"] == unfiltered["tioclinux_junk"] == errno.ENOTTY
    assert filtered == {
        "plain": [errno.EPERM] * 2,
        "junk": [errno.EPERM] * 2,
        "pushed": "",
        "tioclinux": errno.EPERM,
        "tioclinux_junk": errno.EPERM,
    }


# ------------------------------------------------------------------------------- memfd


@needs_abi(4)  # Linux 6.7+, so MFD_NOEXEC_SEAL (6.3) is there to require
def test_memfd_create_must_seal_exec(identity: pwd.struct_passwd | None) -> None:
    def attack() -> dict[str, int]:
        return {
            "plain": attempt(lambda: sc("memfd_create", b"x", 0)),
            "exec": attempt(lambda: sc("memfd_create", b"x", MFD_EXEC)),
            "seal_in_high_word": attempt(lambda: sc("memfd_create", b"x", MFD_NOEXEC_SEAL << 32)),
            "sealed": attempt(lambda: sc("memfd_create", b"x", MFD_NOEXEC_SEAL | MFD_CLOEXEC)),
            "sealed_junk": attempt(lambda: sc("memfd_create", b"x", MFD_NOEXEC_SEAL | JUNK)),
        }

    unfiltered, filtered = both(attack, identity)
    assert set(unfiltered.values()) == {0}
    assert filtered == {
        "plain": errno.EPERM,
        "exec": errno.EPERM,
        "seal_in_high_word": errno.EPERM,
        "sealed": 0,
        "sealed_junk": 0,
    }


@needs_abi(4)  # Linux 6.7+, so MFD_NOEXEC_SEAL (6.3) is there to require
def test_memfd_exec_escape_is_closed(identity: pwd.struct_passwd | None) -> None:
    program = Path("/bin/true").read_bytes()

    def run_from_memfd(flags: int) -> int:
        try:
            fd = sc("memfd_create", b"payload", flags)
        except OSError as e:
            return 100 + (e.errno or 0)
        os.write(fd, program)

        def go() -> int:
            try:
                os.execv(f"/proc/self/fd/{fd}", ["true"])
            except OSError as e:
                return 100 + (e.errno or 0)
            return 99

        return in_grandchild(go)

    def attack() -> list[int]:
        return [run_from_memfd(0), run_from_memfd(MFD_NOEXEC_SEAL)]

    unfiltered, filtered = both(attack, identity)
    assert unfiltered == [0, 100 + errno.EACCES]  # an unsealed memfd runs: the escape
    assert filtered == [100 + errno.EPERM, 100 + errno.EACCES]


# ---------------------------------------------------------- foreign ABIs, x32, new numbers

I386_GETPID = syscalls().load_arch_table("i386")["getpid"]


def _int80_stub() -> Callable[[], int]:
    # Callee-saved registers are pushed and popped around the trap in case the compat
    # entry path does not preserve them for a 64-bit caller.
    code = bytes(
        [
            0x53,
            0x55,
            0x41,
            0x54,
            0x41,
            0x55,
            0x41,
            0x56,
            0x41,
            0x57,  # push rbx..r15
            0xB8,
            *I386_GETPID.to_bytes(4, "little"),  # mov eax, __NR_getpid (i386)
            0xCD,
            0x80,  # int 0x80
            0x41,
            0x5F,
            0x41,
            0x5E,
            0x41,
            0x5D,
            0x41,
            0x5C,
            0x5D,
            0x5B,  # pop r15..rbx
            0xC3,  # ret
        ]
    )
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(address)
    fn.page = page  # type: ignore[attr-defined]  # keep the mapping alive with the function
    return fn  # type: ignore[no-any-return]


@x86_only
def test_int80_from_a_64_bit_process_is_killed(identity: pwd.struct_passwd | None) -> None:
    stub = _int80_stub()

    def attack() -> bool:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        return bool(stub() == os.getpid())

    assert probe(attack, identity, None) is True  # i386 getpid works on this kernel
    child: Child = in_child(lambda: (confine(DEFAULT), attack()), user=identity)
    assert child.signal == signal.SIGSYS, (child.status, child.value, child.error)
    assert child.value is None


@x86_only
def test_x32_numbers_get_enosys(identity: pwd.struct_passwd | None) -> None:
    def attack() -> int:
        try:
            return libc.syscall(NR["getpid"] | 0x40000000) - os.getpid()  # 0 if x32 is on
        except OSError as e:
            return e.errno or -1

    unfiltered, filtered = both(attack, identity)
    assert unfiltered in (0, errno.ENOSYS)  # ENOSYS here: CONFIG_X86_X32_ABI is off
    assert filtered == errno.ENOSYS


def test_numbers_above_the_table_get_enosys(
    identity: pwd.struct_passwd | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def attack() -> list[int]:
        return [
            attempt(lambda: libc.syscall(max(NR.values()) + 1)),
            attempt(lambda: sc("faccessat2", AT_FDCWD, b"/", os.F_OK, 0)),
        ]

    unfiltered, filtered = both(attack, identity)
    assert unfiltered == [errno.ENOSYS, 0]
    assert filtered == [errno.ENOSYS, 0]
    # The kernel has no syscall above the table's top either, so also pretend the table
    # ends just below faccessat2: then the filter must refuse a call this kernel has.
    top = NR["faccessat2"]
    older = {name: nr for name, nr in NR.items() if nr < top}
    monkeypatch.setitem(syscall_table.TABLES, ARCH, older)
    filt = Filter.build(deny=[n for n in DEFAULT_DENY if n in older])
    assert probe(attack, identity, filt) == [errno.ENOSYS, errno.ENOSYS]


# ------------------------------------------------------------------ Filter, install, spec


def test_structs_match_the_kernel_abi() -> None:
    assert ctypes.sizeof(_SockFilter) == 8
    assert ctypes.sizeof(_SockFprog) == 16
    f = DEFAULT
    assert f._prog.len == len(f.instructions)
    assert [(s.code, s.jt, s.jf, s.k) for s in f._array] == list(f.instructions)
    assert f.instructions == tuple(build_program(ARCH))


def test_install_without_no_new_privs(identity: pwd.struct_passwd | None) -> None:
    def attempt_install() -> list[int]:
        return [attempt(DEFAULT.install), attempt(lambda: sc("unshare", 0))]

    # Root holds CAP_SYS_ADMIN, which the kernel accepts instead of no_new_privs.
    expected = [0, errno.EPERM] if is_root(identity) else [errno.EACCES, 0]
    assert probe(attempt_install, identity, None) == expected


def test_a_filter_for_another_arch_refuses_to_install() -> None:
    other = "aarch64" if ARCH == "x86_64" else "x86_64"
    f = Filter.build(other)
    assert f.arch == other and f.instructions[1][3] != build_program(ARCH)[1][3]
    with pytest.raises(SeccompError, match="not"):
        f.install()


def test_filter_reports_what_it_skipped_and_disassembles() -> None:
    assert Filter.build("aarch64").skipped == (
        "iopl", "ioperm", "modify_ldt", "uselib",
        "set_thread_area", "get_thread_area", "epoll_ctl_old", "epoll_wait_old",
    )  # fmt: skip
    assert Filter.build("x86_64").skipped == ("uselib",)
    text = Filter.build("x86_64").disassemble()
    assert "; ptrace: deny" in text and "; AUDIT_ARCH_X86_64" in text
    assert "TIOCSTI" in text and "CLONE_NEW*" in text


def test_default_deny_is_the_kernel_notes_list() -> None:
    notes = """ptrace process_vm_readv process_vm_writev process_madvise pidfd_getfd kcmp mount
    umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr
    statmount listmount open_tree_attr unshare setns clone3 io_uring_setup io_uring_enter
    io_uring_register bpf perf_event_open userfaultfd add_key request_key keyctl kexec_load
    kexec_file_load init_module finit_module delete_module personality name_to_handle_at
    open_by_handle_at memfd_create execveat acct swapon swapoff reboot syslog quotactl
    fanotify_init lookup_dcookie vhangup iopl ioperm modify_ldt uselib settimeofday
    clock_settime clock_adjtime adjtimex sethostname setdomainname mbind migrate_pages
    move_pages""".split()  # noqa: SIM905 (the kernel facts this project started from)
    # Shared kernel objects and watches the census added: SysV IPC and POSIX message
    # queues (other processes' memory and messages), inotify and fanotify marks (names in
    # directories Landlock refuses to list), and calls this kernel does not implement.
    census = """shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv
    msgctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
    inotify_add_watch fanotify_mark process_mrelease quotactl_fd set_thread_area
    get_thread_area epoll_ctl_old epoll_wait_old""".split()  # noqa: SIM905
    # clone3 is answered ENOSYS instead, memfd_create is filtered by its flags.
    expected = (set(notes) | set(census)) - {"clone3", "memfd_create"}
    assert sorted(DEFAULT_DENY) == sorted(expected)
    assert len(set(DEFAULT_DENY)) == len(DEFAULT_DENY)
    assert [e["family"] for e in DEFAULT_SOCKETS] == ["unix", "inet", "inet6"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"deny": ["no_such_call"]}, "unknown syscall 'no_such_call'"),
        ({"kill": ["ptrace"]}, "both kill and deny"),
        ({"enosys": ["clone3", "unshare"]}, "both enosys and deny"),
        ({"deny_errno": "ENOPE"}, "unknown errno"),
        ({"deny_errno": "errorcode"}, "unknown errno"),
        ({"ioctl_deny": ["TIOCSTI", "FIONREAD"]}, "unknown ioctl 'FIONREAD'"),
        ({"sockets": [{"family": "bluetooth"}]}, "unknown socket family"),
        ({"sockets": [{"family": True}]}, "socket family"),
        ({"sockets": [{"family": "inet", "types": ["stream", 16]}]}, "socket type 16"),
        ({"sockets": [{"family": "inet", "types": ["streams"]}]}, "unknown socket type"),
        ({"sockets": [{"family": "inet", "protocols": [-1]}]}, "socket protocol"),
        ({"sockets": [{"family": "inet", "type": ["stream"]}]}, "unknown key"),
        ({"sockets": [{"types": ["stream"]}]}, "no family"),
        ({"sockets": {"family": "inet"}}, "must be a list"),
        ({"deny": "ptrace"}, "must be a list"),
        ({"enosys": []}, "clone3 must be in"),
        ({"memfd_noexec": "yes"}, "true or false"),
    ],
)
def test_spec_errors(spec: dict[str, Any], message: str) -> None:
    for arch in ("x86_64", "aarch64"):
        with pytest.raises(SeccompError, match=message):
            build_program(arch, **spec)


def test_arch_specific_names() -> None:
    # Skipped silently in deny; anywhere else a missing name is an error.
    build_program("aarch64", deny=["iopl", "ptrace"])
    with pytest.raises(SeccompError, match="unknown syscall 'iopl' on aarch64"):
        build_program("aarch64", kill=["iopl"])
    with pytest.raises(SeccompError, match="unknown syscall 'arch_prctl' on aarch64"):
        build_program("aarch64", deny=["arch_prctl"])
    with pytest.raises(SeccompError, match="unsupported architecture"):
        build_program("riscv64")
    with pytest.raises(SeccompError, match="unknown seccomp key"):
        Filter.build(denny=["ptrace"])


def test_clone3_may_be_allowed_only_with_namespaces() -> None:
    build_program("x86_64", enosys=[], clone_namespaces=True)
    build_program("x86_64", enosys=[], kill=["clone3"])
    assert compile_spec("x86_64", deny=[], enosys=["clone3"]).skipped == ()


# ----------------------------------------------------------------- TCP fast open


@pytest.mark.parametrize("call", ["sendto", "sendmsg"])
def test_tcp_fast_open_is_refused(identity: pwd.struct_passwd | None, call: str) -> None:
    """MSG_FASTOPEN connects inside sendmsg, where Landlock's TCP port check never
    runs: a policy granting no port would still reach any. Refused outright."""
    MSG_FASTOPEN = 0x20000000

    def fastopen_to(port: int) -> Callable[[], int]:
        def attempt_send() -> int:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                if call == "sendto":
                    s.sendto(b"exfil", MSG_FASTOPEN, ("127.0.0.1", port))
                else:
                    s.sendmsg([b"exfil"], [], MSG_FASTOPEN, ("127.0.0.1", port))
            except OSError as e:
                return e.errno or -1
            finally:
                s.close()
            return 0

        return attempt_send

    sink = Sink()
    bare = probe(fastopen_to(sink.port), identity, None)
    assert bare == 0 and sink.close() == b"exfil"  # the escape works unconfined
    sink = Sink()
    confined = probe(fastopen_to(sink.port), identity, DEFAULT)
    assert confined == errno.EPERM and sink.close() == b""
