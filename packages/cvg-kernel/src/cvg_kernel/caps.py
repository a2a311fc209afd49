"""Dropping capabilities, so a tool started by root holds none.

With every capability gone, root can no longer read /proc/<pid>/environ of
processes outside its Landlock domain (CAP_PERFMON / CAP_SYS_PTRACE skip that
check), open raw sockets, load modules, or regain power on exec: the bounding
set is empty and SECBIT_NOROOT stops exec from granting root its file
capabilities. An unprivileged caller holds no capabilities to begin with and
cannot touch the bounding set (that needs CAP_SETPCAP); no_new_privs already
stops it from gaining any on exec.
"""

from __future__ import annotations

import ctypes
import errno

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Iterable

from .libc import machine, prctl, syscall
from .syscall_table import TABLES

# Capability numbers are a stable kernel ABI (include/uapi/linux/capability.h).
NAMES: tuple[str, ...] = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
    "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
    "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
    "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
)  # fmt: skip
BY_NAME = {name: nr for nr, name in enumerate(NAMES)}
CAP_SETPCAP = BY_NAME["CAP_SETPCAP"]

PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4

SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1
SECBIT_KEEP_CAPS_LOCKED = 1 << 5
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << 6
SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7

_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class CapabilityError(ValueError):
    """An unknown capability name was asked to be kept."""


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except OSError:
        return len(NAMES) - 1


def resolve(names: Iterable[str]) -> frozenset[int]:
    out = set()
    for name in names:
        key = name.upper() if name.upper().startswith("CAP_") else "CAP_" + name.upper()
        if key not in BY_NAME:
            raise CapabilityError(f"unknown capability {name!r}")
        out.add(BY_NAME[key])
    return frozenset(out)


def current() -> dict[str, int]:
    """CapEff/CapPrm/CapInh/CapBnd/CapAmb of this process, from /proc/self/status."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Cap"):
                key, value = line.split(":", 1)
                out[key] = int(value, 16)
    return out


class CapabilityDrop:
    """Everything the child needs to shed capabilities, allocated before fork."""

    def __init__(self, keep: Iterable[str] = ()) -> None:
        self.keep = resolve(keep)
        self._raise = tuple(sorted(self.keep))
        self._last = last_cap()
        self._drop = tuple(c for c in range(self._last + 1) if c not in self.keep)
        mask = 0
        for c in self.keep:
            mask |= 1 << c
        self._header = _Header(_LINUX_CAPABILITY_VERSION_3, 0)
        self._data = (_Data * 2)()
        for i in range(2):
            word = (mask >> (32 * i)) & 0xFFFFFFFF
            self._data[i].effective = word
            self._data[i].permitted = word
            self._data[i].inheritable = word
        self._securebits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED
        self._nr_capset = TABLES[machine()]["capset"]

    def names(self) -> list[str]:
        """The kept capabilities by name: ``CapabilityDrop(drop.names())`` is the same drop."""
        return [NAMES[c] for c in sorted(self.keep)]

    def apply(self) -> None:
        """Drop, in the order the kernel demands: CAP_SETPCAP is needed for the
        bounding set and the securebits, so those go before capset removes it."""
        have_setpcap = True
        for cap in self._drop:
            try:
                prctl(PR_CAPBSET_DROP, cap)
            except OSError as e:
                if e.errno != errno.EPERM:
                    raise
                have_setpcap = False
                break
        if have_setpcap:
            prctl(PR_SET_SECUREBITS, self._securebits)
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        syscall(self._nr_capset, ctypes.byref(self._header), ctypes.byref(self._data))
        for cap in self._raise:
            # Ambient is what carries a kept capability across exec for a non-root tool.
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap)
