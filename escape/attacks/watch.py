"""Watching what the grants hide: inotify on a directory outside every grant. The
runner creates a file named with the secret there once the tool says it watches."""

import ctypes
import os
import select
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main, out, sys_call

NR_INOTIFY_INIT1, NR_INOTIFY_ADD_WATCH = 294, 254
IN_CREATE, IN_NONBLOCK = 0x100, 0o4000


@attack("fs-read", "secret", hold=1.0, extra={"watch": True, "deadline": 10.0})
def inotify_ungranted_dir(a):
    """inotify_add_watch() on a directory outside every grant, then read the names of
    the files created in it. Should be stopped by Landlock (read_dir on the watched
    directory) or seccomp (inotify)."""
    fd = sys_call(NR_INOTIFY_INIT1, IN_NONBLOCK)
    path = ctypes.create_string_buffer(os.path.join(a["outside"], "watched").encode())
    sys_call(NR_INOTIFY_ADD_WATCH, fd, ctypes.addressof(path), IN_CREATE)
    out("WATCHING")
    if select.select([fd], [], [], 6)[0]:
        data = os.read(fd, 4096)
        while data:
            _, _, _, n = struct.unpack_from("iIII", data)
            out(data[16 : 16 + n].split(b"\0")[0].decode())
            data = data[16 + n :]


if __name__ == "__main__":
    main(globals())
