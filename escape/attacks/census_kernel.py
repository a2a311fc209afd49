"""Kernel surface the census still lacked an attack for: fanotify, io_uring's enter and
register, personality, the kernel log, the terminal hangup, and the x86 legacy calls
(the LDT, I/O ports) and lookup_dcookie."""

import ctypes
import mmap
import os
import select
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call

NR_SYSLOG, NR_PERSONALITY, NR_VHANGUP, NR_MODIFY_LDT = 103, 135, 153, 154
NR_IOPL, NR_IOPERM, NR_LOOKUP_DCOOKIE = 172, 173, 212
NR_FANOTIFY_INIT, NR_FANOTIFY_MARK = 300, 301
NR_IO_URING_SETUP, NR_IO_URING_ENTER, NR_IO_URING_REGISTER = 425, 426, 427
AT_FDCWD = -100
FAN_REPORT_DFID_NAME, FAN_NONBLOCK, FAN_MARK_ADD, FAN_CREATE = 0xC00, 0x2, 0x1, 0x100
ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC = 0x0040000, 0x0400000


def _printable(data: bytes) -> None:
    """Every run of printable bytes (an event's file name among them)."""
    run = b""
    for b in data + b"\0":
        if 32 <= b < 127:
            run += bytes([b])
            continue
        if len(run) >= 4:
            out(run.decode())
        run = b""


@attack("fs-read", "secret", hold=1.0, extra={"watch": True, "deadline": 10.0})
def fanotify_ungranted_dir(a):
    """fanotify_init(FAN_REPORT_DFID_NAME), unprivileged since Linux 5.13, and
    fanotify_mark(FAN_CREATE) on a directory outside every grant: the names of files
    created there. Landlock has no hook on marks; should be stopped by seccomp (both
    denied)."""
    fd = sys_call(NR_FANOTIFY_INIT, FAN_REPORT_DFID_NAME | FAN_NONBLOCK, os.O_RDONLY)
    path = ctypes.create_string_buffer(os.path.join(a["outside"], "watched").encode())
    sys_call(NR_FANOTIFY_MARK, fd, FAN_MARK_ADD, FAN_CREATE, AT_FDCWD, ctypes.addressof(path))
    out("WATCHING")
    if select.select([fd], [], [], 6)[0]:
        _printable(os.read(fd, 4096))


def _uring_read(path: str) -> bytes:
    """openat then read through an io_uring: no open or read syscall of the caller's."""
    params = ctypes.create_string_buffer(120)
    ring = sys_call(NR_IO_URING_SETUP, 4, ctypes.addressof(params))
    p = params.raw
    sq_entries, cq_entries = struct.unpack_from("II", p, 0)
    _, sq_tail, sq_mask, _, _, _, sq_array = struct.unpack_from("7I", p, 40)
    cq_head, _, cq_mask, _, _, cqes = struct.unpack_from("6I", p, 80)
    sq = mmap.mmap(ring, sq_array + sq_entries * 4, offset=0)
    cq = mmap.mmap(ring, cqes + cq_entries * 16, offset=0x8000000)
    sqes = mmap.mmap(ring, sq_entries * 64, offset=0x10000000)
    probe = ctypes.create_string_buffer(16 + 256 * 8)
    sys_call(NR_IO_URING_REGISTER, ring, 8, ctypes.addressof(probe), 256)  # REGISTER_PROBE

    def submit(sqe: bytes) -> int:
        tail = struct.unpack_from("I", sq, sq_tail)[0]
        idx = tail & struct.unpack_from("I", sq, sq_mask)[0]
        sqes[idx * 64 : idx * 64 + 64] = sqe.ljust(64, b"\0")
        struct.pack_into("I", sq, sq_array + idx * 4, idx)
        struct.pack_into("I", sq, sq_tail, tail + 1)
        sys_call(NR_IO_URING_ENTER, ring, 1, 1, 1, 0, 0)  # IORING_ENTER_GETEVENTS
        head = struct.unpack_from("I", cq, cq_head)[0]
        idx = head & struct.unpack_from("I", cq, cq_mask)[0]
        _, res, _ = struct.unpack_from("QiI", cq, cqes + idx * 16)
        struct.pack_into("I", cq, cq_head, head + 1)
        if res < 0:
            raise OSError(-res, os.strerror(-res))
        return res

    name = ctypes.create_string_buffer(path.encode())
    # IORING_OP_OPENAT (18): fd, addr = path, len = mode, open_flags
    fd = submit(struct.pack("BBHiQQII", 18, 0, 0, AT_FDCWD, 0, ctypes.addressof(name), 0, 0))
    buf = ctypes.create_string_buffer(256)
    # IORING_OP_READ (22): fd, off, addr = buffer, len
    n = submit(struct.pack("BBHiQQII", 22, 0, 0, fd, 0, ctypes.addressof(buf), 256, 0))
    return buf.raw[:n]


@attack("kernel", "secret")
def io_uring_openat_read_outside(a):
    """io_uring_setup, io_uring_register (a probe) and io_uring_enter: open and read the
    secret through the ring, with no open or read call for a filter to see. Should be
    stopped by seccomp (all three denied), and by Landlock, which checks the ring's
    open as the caller's."""
    out(_uring_read(a["secret_path"]).decode(errors="replace"))


@attack("kernel", "personality", hold=1.0)
def personality_no_randomize(a):
    """personality(ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC): switch off the process's own
    address randomisation and non-executable memory for what it runs next (the runner
    reads /proc/PID/personality). Should be stopped by seccomp (personality)."""
    sys_call(NR_PERSONALITY, ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC)
    time.sleep(1.5)


@attack("kernel", "secret", extra={"kmsg": True})
def syslog_read_kernel_log(a):
    """syslog(SYSLOG_ACTION_READ_ALL): the kernel log, where the runner wrote the
    secret (other users' device, network and audit messages). Refused to the
    unprivileged user when dmesg_restrict is set, so unproven there. Should be stopped
    by seccomp and the dropped CAP_SYSLOG."""
    buf = ctypes.create_string_buffer(1 << 20)
    n = sys_call(NR_SYSLOG, 3, ctypes.addressof(buf), 1 << 20)
    for line in buf.raw[:n].decode(errors="replace").splitlines():
        if "cvg-escape" in line:
            out(line)


@attack("tty", "tty-hangup")
def vhangup_terminal(a):
    """vhangup(): hang up the controlling terminal, the user's own, for every process
    that has it open. Needs CAP_SYS_TTY_CONFIG, so unproven as the unprivileged user.
    Should be stopped by seccomp and the dropped capability."""
    sys_call(NR_VHANGUP)


@attack("kernel", "none")
def modify_ldt_install_entry(a):
    """modify_ldt(1): install a 32-bit code segment in the process's own LDT (kernel
    attack surface: espfix, sigreturn). Nothing outside the process shows an LDT, so
    no oracle can fire: unproven. Should be stopped by seccomp."""
    desc = ctypes.create_string_buffer(struct.pack("IIII", 0, 0, 0xFFFFF, 0x1 | 0x10 | 0x40))
    sys_call(NR_MODIFY_LDT, 1, ctypes.addressof(desc), 16)


@attack("kernel", "none")
def iopl_raise(a):
    """iopl(3): every I/O port to the process (root only). The permission is the
    process's own and any port access would be unsafe to make, so no oracle can fire:
    unproven. Should be stopped by seccomp and the dropped CAP_SYS_RAWIO."""
    sys_call(NR_IOPL, 3)


@attack("kernel", "none")
def ioperm_port_80(a):
    """ioperm(0x80, 1, on): one I/O port to the process (root only). The bitmap is the
    process's own and any port access would be unsafe to make, so no oracle can fire:
    unproven. Should be stopped by seccomp and the dropped CAP_SYS_RAWIO."""
    sys_call(NR_IOPERM, 0x80, 1, 1)


@attack("kernel", "none")
def lookup_dcookie_any(a):
    """lookup_dcookie(): the path of a profiling cookie. Removed from Linux in 6.8 (it
    answers ENOSYS), so no oracle can fire: unproven. Should be stopped by seccomp."""
    buf = ctypes.create_string_buffer(4096)
    sys_call(NR_LOOKUP_DCOOKIE, 1, ctypes.addressof(buf), 4096)


if __name__ == "__main__":
    main(globals())
