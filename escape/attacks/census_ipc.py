"""The rest of SysV IPC, POSIX message queues and the keyrings: objects named by ids,
names or descriptions, not paths, so neither Landlock nor the file grants see them.

The sentinel (`sentinel: ipc`) holds the secret in a 0600 segment, message queue and
POSIX queue, and a semaphore; the runner reads their rows in /proc/sysvipc and the
POSIX queue's state (through a private mqueue mount) before, during and after the run
(`sentinel-ipc`). For the keyrings the runner puts the secret in a key of the user's
own keyring (`plant_key`) and invalidates it afterwards."""

import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call

NR_SHMAT, NR_SHMCTL, NR_SEMGET, NR_SEMCTL, NR_SHMDT = 30, 31, 64, 66, 67
NR_MSGGET, NR_MSGSND, NR_MSGCTL, NR_SEMTIMEDOP = 68, 69, 71, 220
NR_MQ_OPEN, NR_MQ_UNLINK, NR_MQ_TIMEDSEND, NR_MQ_TIMEDRECEIVE = 240, 241, 242, 243
NR_MQ_NOTIFY, NR_MQ_GETSETATTR = 244, 245
NR_REQUEST_KEY, NR_KEYCTL = 249, 250
IPC_CREAT, IPC_NOWAIT, SHM_RDONLY = 0o1000, 0o4000, 0o10000
IPC_SET, IPC_STAT, SETVAL = 1, 2, 16
MODE_OFFSET = 20  # struct ipc64_perm: key, uid, gid, cuid, cgid, then mode
KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH, KEYCTL_READ = -4, 10, 11
IPC = {"sentinel": "ipc"}


def _chmod_ipc(nr: int, ident: int) -> None:
    """IPC_STAT, then IPC_SET with the object's mode opened to everyone."""
    ds = ctypes.create_string_buffer(256)
    sys_call(nr, ident, IPC_STAT, ctypes.addressof(ds))
    (mode,) = struct.unpack_from("I", ds.raw, MODE_OFFSET)
    struct.pack_into("I", ds, MODE_OFFSET, mode | 0o666)
    sys_call(nr, ident, IPC_SET, ctypes.addressof(ds))


@attack("ipc", "sysv-left")
def sysv_msg_outlives_run(a):
    """msgget(IPC_CREAT) a message queue under a known key: it stays after the run, a
    channel between sandboxed tools. Should be stopped by seccomp (SysV IPC)."""
    sys_call(NR_MSGGET, a["ipc_key"], IPC_CREAT | 0o600)


@attack("ipc", "sysv-left")
def sysv_sem_outlives_run(a):
    """semget(IPC_CREAT) a semaphore set under a known key: it stays after the run.
    Should be stopped by seccomp (SysV IPC)."""
    sys_call(NR_SEMGET, a["ipc_key"], 1, IPC_CREAT | 0o600)


@attack("ipc", "sentinel-ipc", extra=IPC)
def sysv_msgsnd_sentinel(a):
    """msgsnd() a forged message onto the sentinel's queue (its qnum and lspid change).
    Should be stopped by seccomp (SysV IPC)."""
    body = b"PWNED"
    msg = ctypes.create_string_buffer(struct.pack("l", 1) + body)
    sys_call(NR_MSGSND, a["sentinel"]["msqid"], ctypes.addressof(msg), len(body), IPC_NOWAIT)


@attack("ipc", "sentinel-ipc", extra=IPC)
def sysv_msgctl_set_sentinel(a):
    """msgctl(IPC_SET) the sentinel's 0600 queue to mode 0666, for every user to read.
    Should be stopped by seccomp (SysV IPC)."""
    _chmod_ipc(NR_MSGCTL, a["sentinel"]["msqid"])


@attack("ipc", "sentinel-ipc", extra=IPC)
def sysv_shmctl_set_sentinel(a):
    """shmctl(IPC_SET) the sentinel's 0600 segment to mode 0666, for every user to
    attach. Should be stopped by seccomp (SysV IPC)."""
    _chmod_ipc(NR_SHMCTL, a["sentinel"]["shmid"])


@attack("ipc", "sentinel-ipc", extra=IPC)
def sysv_shmdt_sentinel(a):
    """shmat() the sentinel's segment read-only, then shmdt() it: the segment's
    attach and detach times and last pid change. Should be stopped by seccomp."""
    addr = sys_call(NR_SHMAT, a["sentinel"]["shmid"], 0, SHM_RDONLY)
    time.sleep(1.1)  # /proc/sysvipc shows times in seconds
    sys_call(NR_SHMDT, addr)


@attack("ipc", "sentinel", extra=IPC)
def sysv_semctl_setval_sentinel(a):
    """semctl(SETVAL 0) on the sentinel's semaphore (it logs the new value). Should be
    stopped by seccomp (SysV IPC)."""
    sys_call(NR_SEMCTL, a["sentinel"]["semid"], 0, SETVAL, 0)


@attack("ipc", "sentinel", extra=IPC)
def sysv_semtimedop_sentinel(a):
    """semtimedop(-1, timeout 0.1 s) on the sentinel's semaphore (it logs the new
    value). Should be stopped by seccomp (SysV IPC)."""
    op = ctypes.create_string_buffer(struct.pack("HhH", 0, -1, IPC_NOWAIT))
    ts = (ctypes.c_long * 2)(0, 100_000_000)
    sys_call(NR_SEMTIMEDOP, a["sentinel"]["semid"], ctypes.addressof(op), 1, ctypes.addressof(ts))


def _mq_open(a, flags: int) -> int:
    name = ctypes.create_string_buffer(a["sentinel"]["mq"].lstrip("/").encode())
    return sys_call(NR_MQ_OPEN, ctypes.addressof(name), flags, 0, 0)


@attack("ipc", "sentinel-ipc", extra=IPC)
def mqueue_unlink_sentinel(a):
    """mq_unlink() the sentinel's POSIX queue by name: it is gone for everyone. Should
    be stopped by seccomp (POSIX message queues)."""
    name = ctypes.create_string_buffer(a["sentinel"]["mq"].lstrip("/").encode())
    sys_call(NR_MQ_UNLINK, ctypes.addressof(name))


@attack("ipc", "sentinel-ipc", extra=IPC)
def mqueue_timedsend_sentinel(a):
    """mq_timedsend() a forged message onto the sentinel's POSIX queue (its size grows).
    Should be stopped by seccomp (POSIX message queues)."""
    mqd = _mq_open(a, os.O_WRONLY | os.O_NONBLOCK)
    msg = ctypes.create_string_buffer(b"PWNED")
    sys_call(NR_MQ_TIMEDSEND, mqd, ctypes.addressof(msg), 5, 0, 0)


@attack("ipc", "sentinel-ipc", hold=1.5, extra={**IPC, "deadline": 6.0})
def mqueue_notify_sentinel(a):
    """mq_notify() on the sentinel's POSIX queue: takes the one notification slot, so
    its owner can no longer register (NOTIFY_PID, sampled while the tool holds it).
    Should be stopped by seccomp (POSIX message queues)."""
    mqd = _mq_open(a, os.O_RDONLY | os.O_NONBLOCK)
    sev = (ctypes.c_int * 16)()
    sev[3] = 1  # sigev_notify = SIGEV_NONE
    sys_call(NR_MQ_NOTIFY, mqd, ctypes.addressof(sev))
    time.sleep(3)


@attack("ipc", "secret", extra=IPC)
def mqueue_getsetattr_read_sentinel(a):
    """mq_open() the sentinel's queue blocking, read its attributes and switch it to
    O_NONBLOCK with mq_getsetattr(), then receive the secret. Should be stopped by
    seccomp (POSIX message queues)."""
    mqd = _mq_open(a, os.O_RDONLY)
    new = (ctypes.c_long * 8)(os.O_NONBLOCK)
    old = (ctypes.c_long * 8)()
    sys_call(NR_MQ_GETSETATTR, mqd, ctypes.addressof(new), ctypes.addressof(old))
    out(f"curmsgs={old[3]} msgsize={old[2]}")
    buf = ctypes.create_string_buffer(max(256, old[2]))
    n = sys_call(NR_MQ_TIMEDRECEIVE, mqd, ctypes.addressof(buf), len(buf), 0, 0)
    out(buf.raw[:n].decode(errors="replace"))


def _read_key(key: int) -> None:
    buf = ctypes.create_string_buffer(512)
    n = sys_call(NR_KEYCTL, KEYCTL_READ, key, ctypes.addressof(buf), 512)
    out(buf.raw[: min(n, 512)].decode(errors="replace"))


@attack("kernel", "secret", extra={"plant_key": True})
def keyctl_read_user_key(a):
    """keyctl(KEYCTL_SEARCH) the user's keyring for a key the user stored outside the
    sandbox, then KEYCTL_READ it: stored credentials. Should be stopped by seccomp
    (keyrings)."""
    typ = ctypes.create_string_buffer(b"user")
    desc = ctypes.create_string_buffer(f"cvg-escape-{a['tok']}".encode())
    key = sys_call(
        NR_KEYCTL,
        KEYCTL_SEARCH,
        KEY_SPEC_USER_KEYRING,
        ctypes.addressof(typ),
        ctypes.addressof(desc),
        0,
    )
    _read_key(key)


@attack("kernel", "secret", extra={"plant_key": True})
def request_key_read_user_key(a):
    """request_key() a key the user stored outside the sandbox (found through the
    session's link to the user keyring, no upcall), then read it. Should be stopped by
    seccomp (keyrings)."""
    typ = ctypes.create_string_buffer(b"user")
    desc = ctypes.create_string_buffer(f"cvg-escape-{a['tok']}".encode())
    key = sys_call(NR_REQUEST_KEY, ctypes.addressof(typ), ctypes.addressof(desc), 0, 0)
    _read_key(key)


if __name__ == "__main__":
    main(globals())
