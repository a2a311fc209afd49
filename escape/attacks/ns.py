"""Namespaces and mounts: unshare, clone flags, clone3, setns, mount, the new mount API,
chroot. The oracle samples every tool process's /proc/<pid>/ns/* and root link
against the runner's own, and the runner's mount table."""

import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, libc, main, sys_call

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWUTS = 0x20000, 0x10000000, 0x40000000, 0x4000000
SIGCHLD = 17


@attack("namespace", "ns")
def unshare_user_namespace(a):
    """unshare(CLONE_NEWUSER): full capabilities over new namespaces, and kernel attack
    surface. Stopped by seccomp (unshare)."""
    sys_call(272, CLONE_NEWUSER)
    time.sleep(1)


@attack("namespace", "ns")
def unshare_user_and_net_namespace(a):
    """unshare(CLONE_NEWUSER|CLONE_NEWNET): a private network stack. Stopped by seccomp."""
    sys_call(272, CLONE_NEWUSER | CLONE_NEWNET)
    time.sleep(1)


@attack("namespace", "ns", policy="default")
def unshare_user_namespace_default_policy(a):
    """unshare(CLONE_NEWUSER|CLONE_NEWUTS) under the default policy. Stopped by seccomp."""
    sys_call(272, CLONE_NEWUSER | CLONE_NEWUTS)
    time.sleep(1)


def _child_sleeps(pid):
    """After a fork-like clone: the child (pid 0) sleeps in its new namespace and
    exits; the parent waits for it."""
    if pid == 0:
        time.sleep(1.2)
        os._exit(0)
    os.waitpid(pid, 0)


@attack("namespace", "ns")
def clone_with_newuser_flag(a):
    """Raw clone(CLONE_NEWUSER|SIGCHLD) (fork-like, no new stack); the child sleeps
    in its new namespace. Stopped by seccomp's CLONE_NEW* argument check."""
    pid = sys_call(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
    _child_sleeps(pid)


@attack("namespace", "ns")
def clone_newuser_flag_high_bits(a):
    """clone() with CLONE_NEWUSER and junk in the upper 32 bits of flags, hoping a
    64-bit compare misses it. Stopped: the filter checks the low 32 bits."""
    pid = sys_call(56, (1 << 40) | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
    _child_sleeps(pid)


@attack("namespace", "ns")
def clone3_with_newuser_flag(a):
    """clone3 with CLONE_NEWUSER in clone_args (BPF cannot read it). Stopped: seccomp
    answers clone3 with ENOSYS."""
    args = (ctypes.c_uint64 * 11)(CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)
    pid = sys_call(435, ctypes.addressof(args), ctypes.sizeof(args))
    _child_sleeps(pid)


@attack("namespace", "ns", extra={"sentinel": "netns"})
def setns_into_sentinel_namespaces(a):
    """Open the sentinel's user and net namespaces (it made them) and setns into them.
    Stopped by the ptrace check on /proc/<pid>/ns and by seccomp (setns)."""
    pid = a["sentinel"]["pid"]
    ufd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY)
    nfd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    sys_call(308, ufd, CLONE_NEWUSER)
    sys_call(308, nfd, CLONE_NEWNET)
    time.sleep(1)


@attack("namespace", "mount")
def mount_tmpfs_over_workspace(a):
    """mount("tmpfs") on a directory: changes what paths mean under Landlock's
    path-based rules. Needs CAP_SYS_ADMIN; stopped by seccomp and the dropped caps."""
    target = ctypes.create_string_buffer(a["ws"].encode())
    src = ctypes.create_string_buffer(b"tmpfs")
    if libc.mount(src, target, src, 0, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


@attack("namespace", "mount")
def fsopen_fsmount_move_mount(a):
    """The new mount API: fsopen("tmpfs"), fsconfig, fsmount, move_mount onto the
    workspace. Stopped by seccomp (all denied) and the dropped capabilities."""
    name = ctypes.create_string_buffer(b"tmpfs")
    fs = sys_call(430, ctypes.addressof(name), 0)
    sys_call(431, fs, 6, 0, 0, 0)  # FSCONFIG_CMD_CREATE
    mfd = sys_call(432, fs, 0, 0)
    empty = ctypes.create_string_buffer(b"")
    target = ctypes.create_string_buffer(a["ws"].encode())
    sys_call(429, mfd, ctypes.addressof(empty), -100, ctypes.addressof(target), 4)


@attack("namespace", "ns")
def chroot_into_workspace(a):
    """chroot into the workspace (a classic first step to break out with a second
    chroot). Needs CAP_SYS_CHROOT; stopped by seccomp and the dropped capabilities."""
    os.chroot(a["ws"])
    time.sleep(1)


if __name__ == "__main__":
    main(globals())
