"""Calls the census allows because they act on the caller alone: its own limits, its
own attributes, its own seccomp filter and Landlock domain. Each attack uses one to try
to loosen what cvg-run set up, then does what that would unlock; the oracle is the
one the unlocked step would fire."""

import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, hold_descriptors, leave_a_daemon, libc, main, out, sys_call

PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 38, 36
NR_SECCOMP, NR_UNSHARE = 317, 272
NR_LANDLOCK_CREATE_RULESET, NR_LANDLOCK_ADD_RULE, NR_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_RULE_PATH_BENEATH = 1
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_RET_ALLOW = 0x7FFF0000
CLONE_NEWUSER = 0x10000000
LANDLOCK_ACCESS_FS_MAKE_SOCK = 1 << 9


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


class PathBeneath(ctypes.Structure):
    _pack_ = 1  # struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@attack("lifetime", "leftover", policy="limits", extra={"deadline": 6.0})
def prctl_subreaper_keeps_daemon(a):
    """prctl(PR_SET_CHILD_SUBREAPER): the tool makes itself the reaper of its orphans,
    so a double-forked daemon is reparented to the tool, not to cvg-run, then the tool
    exits. Stopped if cvg-run still ends every descendant (its own subreaper and kill
    loop), whoever reaps them."""
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        out(f"prctl: errno {ctypes.get_errno()}")
    leave_a_daemon()


@attack("namespace", "ns")
def seccomp_own_allow_filter_then_unshare(a):
    """seccomp(SET_MODE_FILTER) with a filter that allows everything, then
    unshare(CLONE_NEWUSER): a filter the tool adds cannot loosen the one cvg-run
    installed (the kernel runs every filter and keeps the strictest answer). Stopped
    by cvg-run's filter (unshare)."""
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        out(f"prctl: errno {ctypes.get_errno()}")
    prog = (SockFilter * 1)(SockFilter(0x06, 0, 0, SECCOMP_RET_ALLOW))  # BPF_RET|BPF_K
    fprog = SockFprog(1, prog)
    sys_call(NR_SECCOMP, SECCOMP_SET_MODE_FILTER, 0, ctypes.addressof(fprog))
    sys_call(NR_UNSHARE, CLONE_NEWUSER)
    time.sleep(1)


@attack("fs-read", "secret")
def landlock_own_ruleset_then_read_secret(a):
    """landlock_create_ruleset, landlock_add_rule and landlock_restrict_self with a
    ruleset that handles only making sockets (allowed beneath /), then read a secret
    outside the grants: a domain the tool adds is stacked on cvg-run's and can only
    narrow it. Stopped by cvg-run's Landlock
    domain (read_file)."""
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        out(f"prctl: errno {ctypes.get_errno()}")
    attr = ctypes.c_uint64(LANDLOCK_ACCESS_FS_MAKE_SOCK)  # handled_access_fs only
    fd = sys_call(NR_LANDLOCK_CREATE_RULESET, ctypes.addressof(attr), 8, 0)
    # A rule on / for everything the new ruleset handles.
    root = os.open("/", os.O_PATH)
    beneath = PathBeneath(LANDLOCK_ACCESS_FS_MAKE_SOCK, root)
    sys_call(NR_LANDLOCK_ADD_RULE, fd, LANDLOCK_RULE_PATH_BENEATH, ctypes.addressof(beneath), 0)
    sys_call(NR_LANDLOCK_RESTRICT_SELF, fd, 0)
    with open(a["secret_path"]) as f:
        out(f.read())


@attack("resources", "fds", policy="limits", hold=1.0, extra={"limits": {"open_files": 64}})
def setrlimit_raise_open_files(a):
    """setrlimit(RLIMIT_NOFILE) up to 4096, soft and hard, then hold 200 descriptors
    (open_files: 64): raising a hard limit needs CAP_SYS_RESOURCE. Stopped by the
    dropped capability and RLIMIT_NOFILE."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    except (OSError, ValueError) as e:
        out(f"setrlimit: {e}")
    hold_descriptors(200)


if __name__ == "__main__":
    main(globals())
