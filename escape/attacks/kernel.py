"""Kernel attack surface: bpf, perf_event_open, userfaultfd, io_uring, keyrings,
TIOCSTI/TIOCLINUX. The oracle samples the tool's descriptors from outside
(anon inodes such as [perf_event] or bpf-map), /proc/keys, or the terminal's input."""

import ctypes
import fcntl
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, libc, main, sys_call


@attack("kernel", "kobj")
def bpf_map_create(a):
    """bpf(BPF_MAP_CREATE) an array map and hold it. Stopped by seccomp (bpf); also
    needs CAP_BPF when unprivileged_bpf_disabled is set."""
    attr = (ctypes.c_uint32 * 30)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
    sys_call(321, 0, ctypes.addressof(attr), ctypes.sizeof(attr))
    time.sleep(1)


@attack("kernel", "kobj")
def perf_event_open_self(a):
    """perf_event_open a software counter on itself and hold it. Stopped by seccomp."""
    attr = (ctypes.c_uint8 * 128)()
    ctypes.c_uint32.from_buffer(attr, 0).value = 1  # PERF_TYPE_SOFTWARE
    ctypes.c_uint32.from_buffer(attr, 4).value = 128
    ctypes.c_uint64.from_buffer(attr, 40).value = 1 << 5 | 1 << 6  # exclude_kernel, exclude_hv
    sys_call(298, ctypes.addressof(attr), 0, -1, -1, 0)
    time.sleep(1)


@attack("kernel", "kobj")
def userfaultfd_create(a):
    """userfaultfd(UFFD_USER_MODE_ONLY) and hold it (stalls kernel copies: race
    amplifier). Stopped by seccomp."""
    sys_call(323, 1 | os.O_CLOEXEC)
    time.sleep(1)


@attack("kernel", "kobj")
def io_uring_setup_ring(a):
    """io_uring_setup a ring and hold it (its operations bypass syscall filtering).
    Stopped by seccomp."""
    params = (ctypes.c_uint8 * 120)()
    sys_call(425, 4, ctypes.addressof(params))
    time.sleep(1)


@attack("kernel", "keys")
def add_key_to_user_keyring(a):
    """add_key("user", ...) into the user keyring, shared by every process of the user
    and outliving the run. Stopped by seccomp (keyrings)."""
    desc = ctypes.create_string_buffer(f"cvg-escape-{a['tok']}".encode())
    typ = ctypes.create_string_buffer(b"user")
    payload = ctypes.create_string_buffer(b"PWNED")
    sys_call(248, ctypes.addressof(typ), ctypes.addressof(desc), ctypes.addressof(payload), 5, -4)


@attack("tty", "tty")
def tiocsti_inject_into_terminal(a):
    """TIOCSTI: push a command into the controlling terminal's input, to be run by the
    shell after the tool exits. Stopped by seccomp (ioctl TIOCSTI)."""
    for ch in a["inject"].encode():
        fcntl.ioctl(0, 0x5412, bytes([ch]))


@attack("tty", "tty")
def tiocsti_inject_high_bits(a):
    """TIOCSTI with junk in the upper 32 bits of the request (the kernel ignores them):
    beats a 64-bit compare (CVE-2019-10063). Stopped: the filter compares the low 32 bits."""
    for ch in a["inject"].encode():
        c = ctypes.c_char(ch)
        if (
            libc.syscall(
                ctypes.c_long(16),
                ctypes.c_long(0),
                ctypes.c_ulong((1 << 32) | 0x5412),
                ctypes.byref(c),
            )
            != 0
        ):
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))


@attack("tty", "tty")
def tioclinux_paste_selection(a):
    """TIOCLINUX subcode 3 (paste the console selection into the input): needs a VT,
    so usually unproven on a pty. Stopped by seccomp (ioctl TIOCLINUX)."""
    fcntl.ioctl(0, 0x541C, bytes([3]))


if __name__ == "__main__":
    main(globals())
