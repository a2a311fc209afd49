"""SysV IPC and POSIX message queues: objects are named by global ids (or names),
not paths, so neither Landlock nor the file grants see them. The sentinel holds the
secret in a 0600 shared memory segment, message queue and POSIX queue of its own,
and a semaphore; it logs changes to the segment and to the semaphore's value."""

import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call

NR_SHMGET, NR_SHMAT, NR_SEMOP, NR_MSGRCV = 29, 30, 65, 70
NR_MQ_OPEN, NR_MQ_TIMEDRECEIVE = 240, 243
IPC_CREAT, IPC_NOWAIT, SHM_RDONLY = 0o1000, 0o4000, 0o10000
IPC = {"sentinel": "ipc"}


@attack("ipc", "secret", extra=IPC)
def sysv_shm_read_sentinel(a):
    """shmat() the sentinel's 0600 segment by id and print the secret it holds. Should
    be stopped by seccomp (SysV IPC)."""
    addr = sys_call(NR_SHMAT, a["sentinel"]["shmid"], 0, SHM_RDONLY)
    out(ctypes.string_at(addr, 64).split(b"\0")[0].decode(errors="replace"))


@attack("ipc", "sentinel", extra=IPC)
def sysv_shm_write_sentinel(a):
    """shmat() the sentinel's segment and overwrite it (the sentinel logs the change).
    Should be stopped by seccomp (SysV IPC)."""
    addr = sys_call(NR_SHMAT, a["sentinel"]["shmid"], 0, 0)
    ctypes.memmove(addr, b"PWNED", 5)


@attack("ipc", "secret", extra=IPC)
def sysv_msg_steal_sentinel(a):
    """msgrcv() the secret queued on the sentinel's message queue. Should be stopped by
    seccomp (SysV IPC)."""
    buf = ctypes.create_string_buffer(8 + 256)
    n = sys_call(NR_MSGRCV, a["sentinel"]["msqid"], ctypes.addressof(buf), 256, 0, IPC_NOWAIT)
    out(buf.raw[8 : 8 + n].decode(errors="replace"))


@attack("ipc", "sentinel", extra=IPC)
def sysv_sem_sentinel(a):
    """semop(-1) on the sentinel's semaphore (the sentinel logs the new value). Should
    be stopped by seccomp (SysV IPC)."""
    op = ctypes.create_string_buffer(struct.pack("HhH", 0, -1, IPC_NOWAIT))
    sys_call(NR_SEMOP, a["sentinel"]["semid"], ctypes.addressof(op), 1)


@attack("ipc", "sysv-left")
def sysv_shm_outlives_run(a):
    """shmget(IPC_CREAT) a segment under a known key: it stays in the system after the
    run and every process of the user can attach it. Should be stopped by seccomp."""
    sys_call(NR_SHMGET, a["ipc_key"], 1 << 20, IPC_CREAT | 0o600)


@attack("ipc", "secret", extra=IPC)
def mqueue_read_sentinel(a):
    """mq_open() the sentinel's POSIX message queue (a name, no path) and receive the
    secret. Should be stopped by seccomp (POSIX message queues)."""
    name = ctypes.create_string_buffer(a["sentinel"]["mq"].lstrip("/").encode())
    mqd = sys_call(NR_MQ_OPEN, ctypes.addressof(name), os.O_RDONLY | os.O_NONBLOCK, 0, 0)
    buf = ctypes.create_string_buffer(256)
    n = sys_call(NR_MQ_TIMEDRECEIVE, mqd, ctypes.addressof(buf), 256, 0, 0)
    out(buf.raw[:n].decode(errors="replace"))


if __name__ == "__main__":
    main(globals())
