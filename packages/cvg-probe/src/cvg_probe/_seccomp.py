"""The seccomp probes: cvg's default filter installed in a child, a denied call
answered with its errno, socket families filtered, a foreign-architecture call
killed."""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import resource
import signal
import socket
from collections.abc import Callable, Mapping
from typing import Any

from cvg_kernel import seccomp
from cvg_kernel.process import PR_SET_NO_NEW_PRIVS
from cvg_schema import Feature

from ._fork import Outcome, Send
from ._group import Group, Spec, check, outcome_of
from ._libc import prctl, syscall

PR_SET_DUMPABLE = 4
AF_NETLINK = 16
NETLINK_ROUTE = 0
HIGH_WORD = 1 << 32  # junk in the upper half of an int argument; the kernel ignores it
I386_GETPID = 20


SECCOMP_FILTER = Spec(
    "seccomp.filter",
    "cvg's default filter installed in a child after no_new_privs; getpid() still answered",
)
SECCOMP_ERRNO = Spec(
    "seccomp.errno",
    "unshare(0): OK before the default filter, EPERM (deny list) after",
)
SECCOMP_SOCKETS = Spec(
    "seccomp.socket_family",
    "socket(AF_NETLINK): OK before the default filter, EAFNOSUPPORT after, also with junk "
    "in the high word; socket(AF_UNIX) still OK",
)
SECCOMP_ARCH = Spec(
    "seccomp.arch_trap",
    "int 0x80 (i386 getpid) from a 64-bit child under the default filter: killed by SIGSYS",
)


def _int80_stub() -> tuple[Callable[[], int], mmap.mmap]:
    """A function that makes the i386 getpid syscall through int 0x80 (x86_64 only)."""
    code = bytes([
        0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57,  # push rbx, rbp, r12-r15
        0xB8, *I386_GETPID.to_bytes(4, "little"),  # mov eax, __NR_getpid (i386)
        0xCD, 0x80,  # int 0x80
        0x41, 0x5F, 0x41, 0x5E, 0x41, 0x5D, 0x41, 0x5C, 0x5D, 0x5B,  # pop r15-r12, rbp, rbx
        0xC3,  # ret
    ])  # fmt: skip
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return ctypes.CFUNCTYPE(ctypes.c_int)(address), page


class SeccompGroup(Group):
    name = "seccomp"
    specs = (SECCOMP_FILTER, SECCOMP_ERRNO, SECCOMP_SOCKETS, SECCOMP_ARCH)

    def __init__(self, arch: str, nr: Mapping[str, int]) -> None:
        self.arch = arch
        self.nr = nr
        self.filter = seccomp.Filter.build(arch)
        self.stub: Callable[[], int] | None = None
        self.page: mmap.mmap | None = None
        self.stub_error: str | None = None
        if arch == "x86_64":
            try:
                self.stub, self.page = _int80_stub()
            except (OSError, ValueError) as e:  # W^X policies refuse an executable mapping
                self.stub_error = f"cannot map the int 0x80 stub: {e}"
        else:
            self.stub_error = (
                f"not testable on {arch}: a 64-bit process cannot enter the compat (AArch32) "
                "syscall path, so there is no foreign-architecture call to make"
            )

    def _netlink(self, family: int) -> None:
        os.close(syscall(self.nr["socket"], family, socket.SOCK_RAW, NETLINK_ROUTE))

    def body(self, send: Send) -> Mapping[str, Any]:
        # The trap at the end kills this child with SIGSYS: no core file, please.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        prctl(PR_SET_DUMPABLE, 0)
        out: dict[str, Any] = {
            "unshare(0), before": outcome_of(lambda: syscall(self.nr["unshare"], 0)),
            "netlink socket, before": outcome_of(lambda: self._netlink(AF_NETLINK)),
        }
        try:
            prctl(PR_SET_NO_NEW_PRIVS, 1)
            self.filter.install()
            out["install"] = "OK"
        except (OSError, seccomp.SeccompError) as e:
            out["install"] = f"{type(e).__name__}: {e}"
            return out
        out["getpid"] = "OK" if syscall(self.nr["getpid"]) == os.getpid() else "wrong pid"
        out["unshare(0)"] = outcome_of(lambda: syscall(self.nr["unshare"], 0))
        out["netlink socket"] = outcome_of(lambda: self._netlink(AF_NETLINK))
        out["netlink socket, high word"] = outcome_of(lambda: self._netlink(AF_NETLINK | HIGH_WORD))
        out["unix socket"] = outcome_of(
            lambda: os.close(syscall(self.nr["socket"], socket.AF_UNIX, socket.SOCK_STREAM, 0))
        )
        if self.stub is not None:
            send(out)  # the trap should kill us: report first
            pid = self.stub()
            out["int 0x80"] = f"returned {pid} instead of killing the process"
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        features = [
            check(SECCOMP_FILTER, got, {"install": "OK", "getpid": "OK"}),
            check(SECCOMP_ERRNO, got, {
                "install": "OK", "unshare(0), before": "OK", "unshare(0)": "EPERM",
            }),
            check(SECCOMP_SOCKETS, got, {
                "install": "OK", "netlink socket, before": "OK", "netlink socket": "EAFNOSUPPORT",
                "netlink socket, high word": "EAFNOSUPPORT", "unix socket": "OK",
            }),
        ]  # fmt: skip
        if self.stub_error is not None:
            features.append(SECCOMP_ARCH.failed(self.stub_error))
        elif got.get("install") != "OK":
            features.append(SECCOMP_ARCH.failed(f"install: {got.get('install')}"))
        elif outcome.signal == signal.SIGSYS:
            features.append(SECCOMP_ARCH.proven())
        elif "int 0x80" in got:
            features.append(SECCOMP_ARCH.failed(str(got["int 0x80"])))
        elif outcome.signal == signal.SIGSEGV:
            features.append(
                SECCOMP_ARCH.failed(
                    "the child died by SIGSEGV, not SIGSYS: int 0x80 is not available on "
                    "this kernel (no IA32 emulation), so there is no foreign ABI to trap"
                )
            )
        else:
            features.append(SECCOMP_ARCH.failed(f"the child {outcome.ending()}, not by SIGSYS"))
        return features

    def close(self) -> None:
        self.stub = None
        if self.page is not None:
            with contextlib.suppress(BufferError):  # a ctypes view may still be alive
                self.page.close()
