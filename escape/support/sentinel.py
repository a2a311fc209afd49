"""A process outside the sandbox that records what happens to it.

It writes its pid, the address of a buffer and the descriptor of an open secret
file to INFO, then logs every catchable signal it receives, and any change of
its buffer, to LOG (a file in a directory the sandbox cannot write). With
--netns it first moves into a new user and network namespace (for setns).
"""

import ctypes
import json
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
info = {
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
