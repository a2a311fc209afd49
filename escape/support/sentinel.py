"""A process outside the sandbox that records what happens to it.

It writes its pid, the address of a buffer and the descriptor of an open secret
file to INFO, then logs every catchable signal it receives, and any change of
its buffer, to LOG (a file in a directory the sandbox cannot write). With
--netns it first moves into a new user and network namespace (for setns). With
--ipc it also holds the secret in IPC objects of its own, mode 0600: a SysV shared
memory segment (whose changes it logs), a SysV message queue, a SysV semaphore
(whose value changes it logs) and a POSIX message queue; their ids go into INFO.
"""

import ctypes
import json
import mmap
import os
import signal
import sys
import time

log_path, info_path, secret_path = sys.argv[1:4]
if "--netns" in sys.argv:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
        sys.exit(f"unshare: {os.strerror(ctypes.get_errno())}")
original = b"SENTINEL-BUFFER-" + os.environ.get("CVG_SENTINEL_SECRET", "").encode()
buf = ctypes.create_string_buffer(original, 256)
secret_fd = os.open(secret_path, os.O_RDONLY)
# Anonymous memory with a whole, populated 2 MiB-aligned range in it: what an attack
# on another process's page tables (process_madvise MADV_COLLAPSE) needs to act on
# every time, not only when the heap happens to hold such a range.
anon = mmap.mmap(-1, 6 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for off in range(0, len(anon), mmap.PAGESIZE):
    anon[off] = 1
log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def note(what: str) -> None:
    os.write(log, f"{time.time():.3f} {what}\n".encode())


def handler(signum, frame):
    note(f"signal {signum}")


for s in (
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGHUP,
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGWINCH,
    signal.SIGIO,
    signal.SIGALRM,
    signal.SIGCONT,
):
    signal.signal(s, handler)
ipc_info: dict = {}
sem_value = 7
if "--ipc" in sys.argv:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.mq_open.restype = ctypes.c_int
    IPC_CREAT = 0o1000
    secret = os.environ.get("CVG_SENTINEL_SECRET", "").encode()
    shmid = libc.shmget(0, 4096, IPC_CREAT | 0o600)
    shm = libc.shmat(shmid, None, 0)
    if shmid < 0 or shm in (None, ctypes.c_void_p(-1).value):
        sys.exit(f"shm: {os.strerror(ctypes.get_errno())}")
    ctypes.memmove(shm, secret, len(secret))
    shm_view = (ctypes.c_char * len(secret)).from_address(shm)
    msqid = libc.msgget(0, IPC_CREAT | 0o600)
    msg = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + len(secret))
    ctypes.c_long.from_buffer(msg).value = 1
    msg[ctypes.sizeof(ctypes.c_long) :] = secret
    if msqid < 0 or libc.msgsnd(msqid, msg, len(secret), 0) != 0:
        sys.exit(f"msg: {os.strerror(ctypes.get_errno())}")
    semid = libc.semget(0, 1, IPC_CREAT | 0o600)
    if semid < 0 or libc.semctl(semid, 0, 16, ctypes.c_int(sem_value)) != 0:  # SETVAL
        sys.exit(f"sem: {os.strerror(ctypes.get_errno())}")

    class MqAttr(ctypes.Structure):
        _fields_ = [(n, ctypes.c_long) for n in ("flags", "maxmsg", "msgsize", "curmsgs")] + [
            ("pad", ctypes.c_long * 4)
        ]

    mq_name = f"/cvg-escape-{os.getpid()}"
    attr = MqAttr(0, 4, 256, 0)
    mqd = libc.mq_open(mq_name.encode(), os.O_RDWR | os.O_CREAT, 0o600, ctypes.byref(attr))
    if mqd < 0 or libc.mq_send(mqd, secret, len(secret), 0) != 0:
        sys.exit(f"mq: {os.strerror(ctypes.get_errno())}")
    ipc_info = {"shmid": shmid, "msqid": msqid, "semid": semid, "mq": mq_name}
info = {
    **ipc_info,
    "pid": os.getpid(),
    "buf": ctypes.addressof(buf),
    "buflen": len(original),
    "fd": secret_fd,
    "pgid": os.getpgid(0),
}
with open(info_path + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(info_path + ".tmp", info_path)
deadline = time.time() + 120
while time.time() < deadline:
    time.sleep(0.02)
    if buf.raw[: len(original)] != original:
        note("buffer changed")
        buf.value = original
    if ipc_info and shm_view.raw != secret:
        note("shared memory segment changed")
        ctypes.memmove(shm, secret, len(secret))
    if ipc_info and (v := libc.semctl(semid, 0, 12)) != sem_value:  # GETVAL
        note(f"semaphore value {sem_value} -> {v}")
        sem_value = v
