# ruff: noqa: SIM115  (attacks keep files open on purpose: short, one-shot scripts)
"""ptrace, process_vm_*, /proc/<pid>/mem and /proc/<pid>/environ against a sentinel
outside the sandbox (and cvg-run). The sentinel logs any change to its buffer."""

import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call

PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 16, 17, 0x4206


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


@attack("ptrace", "sentinel")
def ptrace_attach_sentinel(a):
    """PTRACE_ATTACH to the sentinel and hold it. Stopped by seccomp (ptrace) and
    Landlock's ptrace restriction."""
    sys_call(101, PTRACE_ATTACH, a["sentinel"]["pid"], 0, 0)
    time.sleep(1)


@attack("ptrace", "sentinel")
def ptrace_seize_sentinel(a):
    """PTRACE_SEIZE the sentinel (no stop) and hold it. Stopped by seccomp and Landlock."""
    sys_call(101, PTRACE_SEIZE, a["sentinel"]["pid"], 0, 0)
    time.sleep(1)


@attack("ptrace", "supervisor")
def ptrace_attach_supervisor(a):
    """PTRACE_ATTACH to cvg-run (the parent) to take over the supervisor. Stopped by
    seccomp and Landlock."""
    sys_call(101, PTRACE_ATTACH, os.getppid(), 0, 0)
    time.sleep(1)


@attack("ptrace", "sentinel")
def proc_pid_mem_write_sentinel(a):
    """Write into the sentinel's memory through /proc/<pid>/mem. Stopped by Landlock's
    ptrace check (mm_access) and the dropped CAP_SYS_PTRACE."""
    s = a["sentinel"]
    fd = os.open(f"/proc/{s['pid']}/mem", os.O_RDWR)
    os.pwrite(fd, b"PWNED", s["buf"])


@attack("ptrace", "sentinel")
def process_vm_writev_sentinel(a):
    """process_vm_writev into the sentinel's buffer. Stopped by seccomp and Landlock."""
    s = a["sentinel"]
    src = ctypes.create_string_buffer(b"PWNED")
    local = IoVec(ctypes.addressof(src), 5)
    remote = IoVec(s["buf"], 5)
    sys_call(311, s["pid"], ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)


@attack("ptrace", "secret", extra={"sentinel": True})
def process_vm_readv_sentinel(a):
    """process_vm_readv the sentinel's buffer, which holds the secret. Stopped by seccomp."""
    s = a["sentinel"]
    dst = ctypes.create_string_buffer(256)
    local = IoVec(ctypes.addressof(dst), s["buflen"])
    remote = IoVec(s["buf"], s["buflen"])
    sys_call(310, s["pid"], ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
    out(dst.value.decode(errors="replace"))


@attack("ptrace", "secret", extra={"sentinel": True})
def proc_pid_environ_sentinel(a):
    """Read /proc/<sentinel>/environ, which holds the secret. Stopped by Landlock's
    ptrace check (and, as root, the dropped CAP_PERFMON/CAP_SYS_PTRACE)."""
    out(open(f"/proc/{a['sentinel']['pid']}/environ").read())


@attack("ptrace", "secret")
def proc_pid_environ_supervisor(a):
    """Read cvg-run's /proc/<ppid>/environ, where the caller's secrets still live.
    Stopped by Landlock's ptrace check and the dropped capabilities."""
    out(open(f"/proc/{os.getppid()}/environ").read())


@attack("ptrace", "secret", extra={"inherit": True})
def proc_pid_fd_reopen_supervisor_fd(a):
    """Reopen a descriptor cvg-run holds (the caller's secret file, passed to cvg-run)
    through /proc/<ppid>/fd/N. Stopped by the ptrace check and Landlock read_file."""
    out(open(f"/proc/{os.getppid()}/fd/{a['inherited']['file']}").read())


@attack("ptrace", "secret", extra={"sentinel": True})
def pidfd_getfd_steal_sentinel_fd(a):
    """pidfd_getfd: copy the sentinel's open descriptor to the secret and read it.
    Stopped by seccomp (pidfd_getfd) and the ptrace check."""
    pfd = sys_call(434, a["sentinel"]["pid"], 0)
    fd = sys_call(438, pfd, a["sentinel"]["fd"], 0)
    out(os.pread(fd, 200, 0).decode())


if __name__ == "__main__":
    main(globals())
