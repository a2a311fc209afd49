"""The probe's own ctypes calls: a raw syscall with full 64-bit arguments, prctl,
and reading the subreaper flag. Each raises OSError with the errno on failure."""

from __future__ import annotations

import ctypes
import os

from cvg_kernel.process import PR_GET_CHILD_SUBREAPER

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]


def syscall(nr: int, *args: int) -> int:
    """A raw syscall with full 64-bit arguments; OSError on failure."""
    ret = int(_libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args)))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def prctl(option: int, arg2: int = 0) -> int:
    ret = int(_libc.prctl(option, arg2, 0, 0, 0))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def get_subreaper() -> int:
    flag = ctypes.c_int(-1)
    if _libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag), 0, 0, 0) < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return flag.value
