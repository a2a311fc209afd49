"""Settings of the whole machine: the clock, its names, swap, process accounting,
kexec, modules, quotas and the reboot call. The runner reads them before and after
the run (`host`: hostname, domain name, ctrl-alt-del, /proc/swaps, /proc/modules,
kexec state, the adjtimex tick and status, CLOCK_REALTIME against CLOCK_MONOTONIC,
records in the accounting file) and puts back any name it can.

Nothing here may change this machine, even bare as root. So every attack whose bare
success would (the clock, the names, swap, accounting, kexec, modules) gives up every
capability first and makes the call as the unprivileged user would: the bare call
fails and the attack is not proven, by design; the arguments are harmless besides
(an image the kernel rejects, a swap file that is none). The reboot attack only ever
asks for ctrl-alt-del to send SIGINT to init instead of rebooting (the safe setting,
observable in /proc/sys/kernel/ctrl-alt-del, put back by the runner), so it runs bare
with its capabilities, and alone."""

import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, drop_capabilities, main, out, sys_call

NR_ADJTIMEX, NR_SETTIMEOFDAY, NR_ACCT, NR_SWAPON, NR_SWAPOFF = 159, 164, 163, 167, 168
NR_REBOOT, NR_SETHOSTNAME, NR_SETDOMAINNAME, NR_INIT_MODULE = 169, 170, 171, 175
NR_DELETE_MODULE, NR_QUOTACTL, NR_CLOCK_SETTIME, NR_KEXEC_LOAD = 176, 179, 227, 246
NR_CLOCK_ADJTIME, NR_FINIT_MODULE, NR_KEXEC_FILE_LOAD, NR_QUOTACTL_FD = 305, 313, 320, 443
LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_OFF = 0xFEE1DEAD, 672274793, 0
ADJ_TICK, TIMEX_SIZE, TICK_OFFSET = 0x4000, 208, 88
Q_SYNC = 0x800001
KEXEC_ARCH_386 = 3 << 16  # not this machine's: rejected even with the capability


def _cstr(s: str):
    return ctypes.create_string_buffer(s.encode())


def _new_name(a) -> ctypes.Array:
    return _cstr(f"cvg-escape-{a['tok']}")


@attack("host", "host")
def sethostname_machine(a):
    """sethostname(): rename the machine for every process on it. Makes the call
    without capabilities (see the module): unproven by design. Should be stopped by
    seccomp and the dropped CAP_SYS_ADMIN."""
    drop_capabilities()
    name = _new_name(a)
    sys_call(NR_SETHOSTNAME, ctypes.addressof(name), len(name.value))


@attack("host", "host")
def setdomainname_machine(a):
    """setdomainname(): change the machine's NIS domain name. Makes the call without
    capabilities: unproven by design. Should be stopped by seccomp and the dropped
    CAP_SYS_ADMIN."""
    drop_capabilities()
    name = _new_name(a)
    sys_call(NR_SETDOMAINNAME, ctypes.addressof(name), len(name.value))


@attack("host", "host")
def settimeofday_jump(a):
    """settimeofday(now + 1 h): move the machine's clock (certificates, logs, make).
    Makes the call without capabilities: unproven by design. Should be stopped by
    seccomp and the dropped CAP_SYS_TIME."""
    drop_capabilities()
    tv = (ctypes.c_long * 2)(int(time.time()) + 3600, 0)
    sys_call(NR_SETTIMEOFDAY, ctypes.addressof(tv), 0)


@attack("host", "host")
def clock_settime_jump(a):
    """clock_settime(CLOCK_REALTIME, now + 1 h). Makes the call without capabilities:
    unproven by design. Should be stopped by seccomp and the dropped CAP_SYS_TIME."""
    drop_capabilities()
    ts = (ctypes.c_long * 2)(int(time.time()) + 3600, 0)
    sys_call(NR_CLOCK_SETTIME, 0, ctypes.addressof(ts))


def _timex_tick(nr: int, *lead: int) -> None:
    tx = ctypes.create_string_buffer(TIMEX_SIZE)
    sys_call(nr, *lead, ctypes.addressof(tx))  # modes 0: a read, allowed to anyone
    (tick,) = struct.unpack_from("l", tx.raw, TICK_OFFSET)
    struct.pack_into("I", tx, 0, ADJ_TICK)
    struct.pack_into("l", tx, TICK_OFFSET, tick + 1)
    drop_capabilities()
    sys_call(nr, *lead, ctypes.addressof(tx))


@attack("host", "host")
def adjtimex_tick(a):
    """adjtimex(ADJ_TICK, tick + 1): make the machine's clock run fast. Makes the
    setting call without capabilities: unproven by design. Should be stopped by seccomp
    and the dropped CAP_SYS_TIME."""
    _timex_tick(NR_ADJTIMEX)


@attack("host", "host")
def clock_adjtime_tick(a):
    """clock_adjtime(CLOCK_REALTIME, ADJ_TICK, tick + 1). Makes the setting call without
    capabilities: unproven by design. Should be stopped by seccomp and the dropped
    CAP_SYS_TIME."""
    _timex_tick(NR_CLOCK_ADJTIME, 0)


def _ws_file(a, name: str, size: int = 0) -> str:
    path = os.path.join(a["ws"], name)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _swap_call(a, nr: int, *rest: int) -> None:
    """swapon/swapoff of a 1 MiB workspace file of zeros, capabilities dropped first."""
    path = _cstr(_ws_file(a, "swapfile", 1 << 20))
    drop_capabilities()
    sys_call(nr, ctypes.addressof(path), *rest)


@attack("host", "host")
def swapon_workspace_file(a):
    """swapon() a file in the workspace (zeros, no swap signature). Makes the call
    without capabilities: unproven by design. Should be stopped by seccomp and the
    dropped CAP_SYS_ADMIN."""
    _swap_call(a, NR_SWAPON, 0)


@attack("host", "host")
def swapoff_workspace_file(a):
    """swapoff() (of a workspace file: never of the machine's swap). Makes the call
    without capabilities: unproven by design. Should be stopped by seccomp and the
    dropped CAP_SYS_ADMIN."""
    _swap_call(a, NR_SWAPOFF)


@attack("host", "host")
def acct_every_process(a):
    """acct() to a workspace file: a record of every process that ends on the machine,
    whoever ran it. Makes the call without capabilities: unproven by design. Should be
    stopped by seccomp and the dropped CAP_SYS_PACCT."""
    path = _cstr(_ws_file(a, "acct"))
    drop_capabilities()
    sys_call(NR_ACCT, ctypes.addressof(path))
    time.sleep(0.5)
    sys_call(NR_ACCT, 0)


@attack("host", "host")
def kexec_load_empty(a):
    """kexec_load() for another architecture with no segment. Makes the call without
    capabilities: unproven by design. Should be stopped by seccomp and the dropped
    CAP_SYS_BOOT."""
    drop_capabilities()
    sys_call(NR_KEXEC_LOAD, 0, 0, 0, KEXEC_ARCH_386)


@attack("host", "host")
def kexec_file_load_no_kernel(a):
    """kexec_file_load() with no kernel descriptor. Makes the call without
    capabilities: unproven by design. Should be stopped by seccomp and the dropped
    CAP_SYS_BOOT."""
    drop_capabilities()
    sys_call(NR_KEXEC_FILE_LOAD, -1, -1, 0, 0, 0)


@attack("host", "host")
def init_module_garbage(a):
    """init_module() of bytes that are no module. Makes the call without capabilities:
    unproven by design. Should be stopped by seccomp and the dropped CAP_SYS_MODULE."""
    image = ctypes.create_string_buffer(b"\x7fELF-not-a-module", 64)
    params = _cstr("")
    drop_capabilities()
    sys_call(NR_INIT_MODULE, ctypes.addressof(image), 64, ctypes.addressof(params))


@attack("host", "host")
def finit_module_empty_file(a):
    """finit_module() of an empty workspace file. Makes the call without capabilities:
    unproven by design. Should be stopped by seccomp and the dropped CAP_SYS_MODULE."""
    fd = os.open(_ws_file(a, "mod.ko"), os.O_RDONLY)
    params = _cstr("")
    drop_capabilities()
    sys_call(NR_FINIT_MODULE, fd, ctypes.addressof(params), 0)


@attack("host", "host")
def delete_module_absent(a):
    """delete_module() of a module no kernel has. Makes the call without capabilities:
    unproven by design. Should be stopped by seccomp and the dropped CAP_SYS_MODULE."""
    name = _cstr("cvg_escape_absent")
    drop_capabilities()
    sys_call(NR_DELETE_MODULE, ctypes.addressof(name), os.O_NONBLOCK)


@attack("host", "none")
def quotactl_sync_all(a):
    """quotactl(Q_SYNC, no device): write out the quota files of every filesystem (no
    capability needed). With no filesystem under quota nothing is written, and the
    kernel's sync count moves with every sync() on the machine, so no oracle can fire:
    unproven. Should be stopped by seccomp (quotactl)."""
    sys_call(NR_QUOTACTL, Q_SYNC, 0, 0, 0)


@attack("host", "none")
def quotactl_fd_sync(a):
    """quotactl_fd(workspace, Q_SYNC): write out the quota files of the filesystem that
    holds the workspace. With no quota on it nothing is written, so no oracle can fire:
    unproven. Should be stopped by seccomp (quotactl_fd)."""
    fd = os.open(a["ws"], os.O_RDONLY | os.O_DIRECTORY)
    sys_call(NR_QUOTACTL_FD, fd, Q_SYNC, 0, 0)


@attack("host", "host", extra={"alone": True})
def reboot_ctrl_alt_del_off(a):
    """reboot(LINUX_REBOOT_CMD_CAD_OFF): change what ctrl-alt-del does on the machine,
    the one reboot() command whose success is harmless (it makes the key send SIGINT to
    init instead of rebooting) and visible in /proc/sys/kernel/ctrl-alt-del. Where that
    already says 0 the call changes nothing: unproven. Should be stopped by seccomp and
    the dropped CAP_SYS_BOOT."""
    cmd = LINUX_REBOOT_CMD_CAD_OFF
    if cmd != 0:  # any other command reboots, halts or kexecs: never
        raise SystemExit("refusing a reboot command other than CAD_OFF")
    sys_call(NR_REBOOT, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, cmd, 0)
    out("ctrl-alt-del off")


if __name__ == "__main__":
    main(globals())
