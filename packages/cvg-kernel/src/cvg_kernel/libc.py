"""The one ctypes handle on libc, and raw syscall access.

Everything in cvg_kernel that talks to the kernel goes through here, so there is
exactly one place that decides how errors come back: as ``OSError`` with the
kernel's errno, never as a silent -1.
"""

from __future__ import annotations

import ctypes
import os


def _load_libc() -> ctypes.CDLL:
    # ctypes.util.find_library runs `ldconfig -p` in a subprocess: tens of
    # milliseconds on every cold start. glibc's soname is stable; anything
    # else (musl) is already mapped into this process, so look there.
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return ctypes.CDLL(None, use_errno=True)


libc = _load_libc()

_syscall = libc.syscall
_syscall.restype = ctypes.c_long

_prctl = libc.prctl
_prctl.restype = ctypes.c_int
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


_MACHINE: list[str] = []


def machine() -> str:
    """The running architecture in cvg's spelling: ``x86_64`` or ``aarch64``."""
    # Asked once: every Landlock rule looks up its syscall number by it, and under
    # `cvg-run --trace` (ptrace mode) each uname(2) was one more stop per rule.
    if not _MACHINE:
        m = os.uname().machine
        _MACHINE.append({"arm64": "aarch64"}.get(m, m))
    return _MACHINE[0]


def syscall(nr: int, *args: int | ctypes.c_void_p | object) -> int:
    """Call syscall ``nr``; raise ``OSError`` with the kernel's errno on failure."""
    ret = int(_syscall(ctypes.c_long(nr), *args))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    """``prctl(2)``; raise ``OSError`` on failure."""
    ret = int(_prctl(option, arg2, arg3, arg4, arg5))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret
