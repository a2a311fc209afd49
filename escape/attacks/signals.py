"""Signals to processes outside the sandbox: a sentinel (same user, started by the
runner, logging what it receives to a file the sandbox cannot write) and cvg-run."""

import ctypes
import mmap
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, sys_call


@attack("signal", "sentinel", limit="signal")
def kill_sentinel(a):
    """kill(sentinel, SIGUSR1). Stopped by Landlock's signal scope (ABI 6); below ABI 6
    a documented limit."""
    os.kill(a["sentinel"]["pid"], signal.SIGUSR1)


@attack("signal", "sentinel", policy="default", limit="signal")
def kill_sentinel_default_policy(a):
    """kill(sentinel, SIGUSR1) under the default policy. Landlock signal scope (ABI 6)."""
    os.kill(a["sentinel"]["pid"], signal.SIGUSR1)


@attack("signal", "sentinel", limit="signal")
def tgkill_sentinel(a):
    """tgkill(sentinel, sentinel, SIGUSR2). Landlock signal scope (ABI 6)."""
    pid = a["sentinel"]["pid"]
    sys_call(234, pid, pid, signal.SIGUSR2)


@attack("signal", "sentinel", limit="signal")
def pidfd_send_signal_sentinel(a):
    """pidfd_open(sentinel) then pidfd_send_signal(SIGUSR1). Landlock signal scope."""
    fd = sys_call(434, a["sentinel"]["pid"], 0)
    sys_call(424, fd, signal.SIGUSR1, 0, 0)


@attack("signal", "sentinel", limit="signal")
def rt_sigqueueinfo_sentinel(a):
    """rt_sigqueueinfo(sentinel, SIGUSR1, info) (sigqueue). Landlock signal scope."""
    info = (ctypes.c_int * 32)(signal.SIGUSR1, 0, -1)  # si_code SI_QUEUE
    sys_call(129, a["sentinel"]["pid"], signal.SIGUSR1, ctypes.addressof(info))


@attack("signal", "sentinel", limit="signal")
def kill_sentinel_process_group(a):
    """kill(-pgid, SIGHUP) to the sentinel's process group. Landlock signal scope."""
    os.killpg(a["sentinel"]["pgid"], signal.SIGHUP)


@attack("signal", "sentinel", limit="signal")
def fsetown_sigio_to_sentinel(a):
    """F_SETOWN a socket to the sentinel, O_ASYNC, then make it readable: the kernel
    sends SIGIO to the sentinel. Landlock's signal scope covers file_send_sigiotask."""
    import fcntl

    r, w = socket.socketpair()
    fcntl.fcntl(r, fcntl.F_SETOWN, a["sentinel"]["pid"])
    fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
    w.send(b"x")
    time.sleep(0.2)


@attack("signal", "sentinel", limit="signal")
def i386_int80_kill_sentinel(a):
    """kill(sentinel, SIGUSR1) through the i386 ABI (int 0x80 from a machine-code stub),
    where the x86_64 syscall numbers of the deny list mean nothing. Stopped by seccomp's
    arch check (kills the process)."""
    pid = a["sentinel"]["pid"]
    code = (
        b"\x53\xb8\x25\x00\x00\x00\xbb"
        + pid.to_bytes(4, "little")
        + b"\xb9\x0a\x00\x00\x00\xcd\x80\x5b\xc3"
    )  # push rbx; kill(pid,10); pop; ret
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    ctypes.CFUNCTYPE(ctypes.c_int)(addr)()


@attack("signal", "sentinel", limit="signal")
def x32_syscall_kill_sentinel(a):
    """kill(sentinel, SIGUSR1) as an x32 syscall (nr | 0x40000000), which carries the
    x86_64 audit arch. Stopped by seccomp (x32 numbers get ENOSYS); x32 is often off."""
    sys_call(0x40000000 | 62, a["sentinel"]["pid"], signal.SIGUSR1)


@attack("signal", "supervisor", limit="supervisor-kill")
def kill_supervisor(a):
    """SIGKILL cvg-run itself (the parent), to escape its wall clock and cleanup.
    Stopped by Landlock's signal scope (ABI 6); below, a documented limit."""
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(0.3)


@attack("signal", "supervisor", limit="supervisor-kill")
def sigstop_supervisor(a):
    """SIGSTOP cvg-run, freezing its wall clock and process count. Landlock signal scope."""
    os.kill(os.getppid(), signal.SIGSTOP)
    time.sleep(0.5)
    os.kill(os.getppid(), signal.SIGCONT)


@attack("signal", "leftover", policy="limits", limit="supervisor-kill", hold=2.0)
def kill_supervisor_then_linger(a):
    """Fork a child that sleeps, then SIGKILL cvg-run so nobody kills the child.
    Stopped by the signal scope (ABI 6); below, the documented "supervisor killed with
    SIGKILL can leave the tool's children behind"."""
    if os.fork() == 0:
        time.sleep(6)
        os._exit(0)
    time.sleep(0.1)
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(0.5)


if __name__ == "__main__":
    main(globals())
