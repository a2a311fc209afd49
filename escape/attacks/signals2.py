"""Every signal-sending call against the sentinel and against cvg-run: the ones
signals.py does not cover (tkill, rt_tgsigqueueinfo; each call against cvg-run), and
SIGIO through F_SETOWN on a pipe."""

import ctypes
import fcntl
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, sys_call

NR_TKILL, NR_TGKILL, NR_RT_SIGQUEUEINFO, NR_RT_TGSIGQUEUEINFO = 200, 234, 129, 297
NR_PIDFD_OPEN, NR_PIDFD_SEND_SIGNAL = 434, 424


def _info(sig):
    return (ctypes.c_int * 32)(sig, 0, -1)  # si_code SI_QUEUE


@attack("signal", "sentinel", limit="signal")
def fsetown_sigio_sentinel(a):
    """F_SETOWN a pipe's read end to the sentinel, O_ASYNC, then write to the pipe: the
    kernel sends SIGIO to the sentinel. Landlock's signal scope (ABI 6) covers
    file_send_sigiotask; below, a documented limit."""
    r, w = os.pipe()
    fcntl.fcntl(r, fcntl.F_SETOWN, a["sentinel"]["pid"])
    fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
    os.write(w, b"x")
    time.sleep(0.2)


@attack("signal", "sentinel", limit="signal")
def tkill_sentinel(a):
    """tkill(sentinel, SIGUSR1). Landlock signal scope (ABI 6)."""
    sys_call(NR_TKILL, a["sentinel"]["pid"], signal.SIGUSR1)


@attack("signal", "sentinel", limit="signal")
def rt_tgsigqueueinfo_sentinel(a):
    """rt_tgsigqueueinfo(sentinel, sentinel, SIGUSR1, info). Landlock signal scope."""
    pid = a["sentinel"]["pid"]
    sys_call(
        NR_RT_TGSIGQUEUEINFO, pid, pid, signal.SIGUSR1, ctypes.addressof(_info(signal.SIGUSR1))
    )


def _then_wait():
    time.sleep(0.3)


@attack("signal", "supervisor", limit="supervisor-kill")
def tkill_supervisor(a):
    """tkill(cvg-run, SIGKILL). Landlock signal scope (ABI 6); below, documented."""
    sys_call(NR_TKILL, os.getppid(), signal.SIGKILL)
    _then_wait()


@attack("signal", "supervisor", limit="supervisor-kill")
def tgkill_supervisor(a):
    """tgkill(cvg-run, cvg-run, SIGKILL). Landlock signal scope (ABI 6)."""
    sys_call(NR_TGKILL, os.getppid(), os.getppid(), signal.SIGKILL)
    _then_wait()


@attack("signal", "supervisor", limit="supervisor-kill")
def rt_sigqueueinfo_supervisor(a):
    """rt_sigqueueinfo(cvg-run, SIGKILL, info). Landlock signal scope (ABI 6)."""
    info = _info(signal.SIGKILL)
    sys_call(NR_RT_SIGQUEUEINFO, os.getppid(), signal.SIGKILL, ctypes.addressof(info))
    _then_wait()


@attack("signal", "supervisor", limit="supervisor-kill")
def rt_tgsigqueueinfo_supervisor(a):
    """rt_tgsigqueueinfo(cvg-run, cvg-run, SIGKILL, info). Landlock signal scope."""
    pid, info = os.getppid(), _info(signal.SIGKILL)
    sys_call(NR_RT_TGSIGQUEUEINFO, pid, pid, signal.SIGKILL, ctypes.addressof(info))
    _then_wait()


@attack("signal", "supervisor", limit="supervisor-kill")
def pidfd_send_signal_supervisor(a):
    """pidfd_open(cvg-run) then pidfd_send_signal(SIGKILL). Landlock signal scope."""
    fd = sys_call(NR_PIDFD_OPEN, os.getppid(), 0)
    sys_call(NR_PIDFD_SEND_SIGNAL, fd, signal.SIGKILL, 0, 0)
    _then_wait()


if __name__ == "__main__":
    main(globals())
