"""The mount API calls the census still lacked and opening files by handle: each
changes or reveals what paths mean under Landlock's path-based rules, or skips the
path altogether.

With `mount` the runner mounts a small tmpfs of its own outside every grant (named
with the secret for the listing attacks) and compares its line of the mount table
before and after the run (`mounted`); it unmounts it afterwards whatever happened."""

import ctypes
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, drop_capabilities, main, out, sys_call

NR_PIVOT_ROOT, NR_UMOUNT2, NR_NAME_TO_HANDLE_AT, NR_OPEN_BY_HANDLE_AT = 155, 166, 303, 304
NR_OPEN_TREE, NR_FSCONFIG, NR_FSPICK, NR_MOUNT_SETATTR = 428, 431, 433, 442
NR_STATMOUNT, NR_LISTMOUNT, NR_OPEN_TREE_ATTR = 457, 458, 467
AT_FDCWD = -100
LSMT_ROOT = 2**64 - 1
STATMOUNT_MNT_POINT = 0x10
MOUNTED = {"mount": True}


def _cstr(s: str):
    return ctypes.create_string_buffer(s.encode())


def _read_through(dirfd: int) -> None:
    fd = os.open("secret.txt", os.O_RDONLY, dir_fd=dirfd)
    out(os.read(fd, 200).decode(errors="replace"))


@attack("namespace", "secret")
def open_tree_read_outside(a):
    """open_tree() the directory outside every grant (a path descriptor, no clone, no
    capability needed), then open the secret relative to it. Should be stopped by
    seccomp (open_tree) and by Landlock read_file on the open."""
    path = _cstr(a["outside"])
    fd = sys_call(NR_OPEN_TREE, AT_FDCWD, ctypes.addressof(path), os.O_CLOEXEC)
    _read_through(fd)


@attack("namespace", "secret")
def open_tree_attr_read_outside(a):
    """open_tree_attr() with no attributes: the same path descriptor as open_tree, then
    open the secret relative to it. Should be stopped by seccomp (open_tree_attr) and by
    Landlock read_file on the open."""
    path = _cstr(a["outside"])
    fd = sys_call(NR_OPEN_TREE_ATTR, AT_FDCWD, ctypes.addressof(path), os.O_CLOEXEC, 0, 0)
    _read_through(fd)


@attack("fs-read", "secret")
def open_by_handle_shocker(a):
    """name_to_handle_at() the secret file (a lookup, no read), then open_by_handle_at()
    with a descriptor of the same mount: an open with no path for Landlock to check
    (the 'shocker' escape). Needs CAP_DAC_READ_SEARCH, so unproven as the unprivileged
    user. Should be stopped by seccomp (both denied) and the dropped capability."""
    handle = ctypes.create_string_buffer(struct.pack("Ii", 128, 0), 8 + 128)
    mount_id = ctypes.c_int()
    path = _cstr(a["secret_path"])
    sys_call(
        NR_NAME_TO_HANDLE_AT,
        AT_FDCWD,
        ctypes.addressof(path),
        ctypes.addressof(handle),
        ctypes.addressof(mount_id),
        0,
    )
    mfd = os.open(a["ws"], os.O_RDONLY | os.O_DIRECTORY)
    fd = sys_call(NR_OPEN_BY_HANDLE_AT, mfd, ctypes.addressof(handle), os.O_RDONLY)
    out(os.read(fd, 200).decode(errors="replace"))


def _listmount(parent: int) -> list[int]:
    ids = (ctypes.c_uint64 * 512)()
    req = ctypes.create_string_buffer(struct.pack("IIQQ", 24, 0, parent, 0))
    n = sys_call(NR_LISTMOUNT, ctypes.addressof(req), ctypes.addressof(ids), 512, 0)
    return list(ids[:n])


@attack("namespace", "secret", extra=MOUNTED)
def statmount_listmount_mountpoints(a):
    """listmount() every mount and statmount() each for its mount point: a mount point
    named with the secret, in a directory Landlock refuses to list. Should be stopped
    by seccomp (both denied)."""
    seen, todo = set(), _listmount(LSMT_ROOT)
    while todo:
        mid = todo.pop()
        if mid in seen:
            continue
        seen.add(mid)
        req = ctypes.create_string_buffer(struct.pack("IIQQ", 24, 0, mid, STATMOUNT_MNT_POINT))
        buf = ctypes.create_string_buffer(8192)
        try:
            sys_call(NR_STATMOUNT, ctypes.addressof(req), ctypes.addressof(buf), 8192, 0)
            (off,) = struct.unpack_from("I", buf.raw, 108)
            out(buf.raw[512 + off :].split(b"\0")[0].decode(errors="replace"))
            todo += _listmount(mid)
        except OSError:
            continue


@attack("namespace", "mounted", extra=MOUNTED)
def fspick_reconfigure_read_only(a):
    """fspick() a mounted filesystem outside every grant and reconfigure it read-only
    (fsconfig): a filesystem other processes use. Needs CAP_SYS_ADMIN, so unproven as
    the unprivileged user. Should be stopped by seccomp and the dropped capabilities."""
    path = _cstr(a["mnt"])
    fd = sys_call(NR_FSPICK, AT_FDCWD, ctypes.addressof(path), 1)
    ro = _cstr("ro")
    sys_call(NR_FSCONFIG, fd, 0, ctypes.addressof(ro), 0, 0)  # FSCONFIG_SET_FLAG
    sys_call(NR_FSCONFIG, fd, 7, 0, 0, 0)  # FSCONFIG_CMD_RECONFIGURE


@attack("namespace", "mounted", extra=MOUNTED)
def mount_setattr_read_only(a):
    """mount_setattr(MOUNT_ATTR_RDONLY) on a mount outside every grant. Needs
    CAP_SYS_ADMIN, so unproven as the unprivileged user. Should be stopped by seccomp
    and the dropped capabilities."""
    path = _cstr(a["mnt"])
    attr = ctypes.create_string_buffer(struct.pack("QQQQ", 1, 0, 0, 0))
    sys_call(NR_MOUNT_SETATTR, AT_FDCWD, ctypes.addressof(path), 0, ctypes.addressof(attr), 32)


@attack("namespace", "mounted", extra=MOUNTED)
def umount2_detach_outside(a):
    """umount2(MNT_DETACH) a mount outside every grant: what lay under it shows through.
    Needs CAP_SYS_ADMIN, so unproven as the unprivileged user. Should be stopped by
    seccomp and the dropped capabilities."""
    path = _cstr(a["mnt"])
    sys_call(NR_UMOUNT2, ctypes.addressof(path), 2)


@attack("namespace", "ns")
def pivot_root_into_workspace(a):
    """pivot_root(workspace, workspace): make a directory the tool writes the root of
    the mount namespace. With no mount namespace of its own it would pivot the
    machine's, so the attack gives up every capability first, and the workspace is no
    mount point: the bare call fails too, unproven by design. Should be stopped by
    seccomp and the dropped capabilities."""
    if os.path.ismount(a["ws"]):
        raise SystemExit("the workspace is a mount point: the call is not made")
    drop_capabilities()
    ws = _cstr(a["ws"])
    sys_call(NR_PIVOT_ROOT, ctypes.addressof(ws), ctypes.addressof(ws))
    time.sleep(1)


if __name__ == "__main__":
    main(globals())
