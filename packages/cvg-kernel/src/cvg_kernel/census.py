"""The census of every system call: one class and one reason per name of the table.

Grouped the way systemd's seccomp groups and Chromium's syscall sets are: each
:class:`Group` has a class, its names and the reason they share; :data:`NOTES`
gives a single call a reason of its own, :data:`ATTACKS` names the escape attacks
(``escape/attacks``) that exercise it. The classes:

``allow``
    local to the process, or its reach is checked by Landlock (the reason says which
    right) or is a documented limit (the reason says so);
``args``
    allowed with argument checks in the seccomp filter;
``notify``
    checked by the supervisor through seccomp user notification;
``deny``
    refused with :attr:`Entry.errno` (EPERM, clone3 ENOSYS);
``unknown``
    not decided yet, treated as denied (ENOSYS).

The seccomp filter takes its default deny list from here (:data:`DENY_GROUPS`,
re-exported by :mod:`cvg_kernel.seccomp`), docs/syscall-census.md is generated from
it (tools/gen_census_doc.py), and the tests check it against the syscall table.
"""

from __future__ import annotations

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Iterator, Mapping

from cvg_kernel.record import Record

CLASSES = ("allow", "args", "notify", "deny", "unknown")


class Group(Record):
    """Calls decided together, with the reason they share."""

    cls: str
    names: tuple[str, ...]
    why: str
    errno: str | None = None


class Entry(Record):
    """One call's classification: what it gets, why, and the attacks that test it."""

    name: str
    cls: str
    why: str
    errno: str | None
    attack: tuple[str, ...]


# --------------------------------------------------------------------------- deny
# In the order of the default deny list: the groups it always had first, so the list
# only grew at its end. The reason says what the calls would open if allowed; it is
# what cvg-validate prints when a policy takes one off.

_DENY: tuple[Group, ...] = (
    Group(
        "deny",
        (
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "process_madvise",
            "pidfd_getfd",
            "kcmp",
        ),
        "reads or writes the memory of other processes of the same user (the caller's "
        "shell, an ssh-agent)",
        "EPERM",
    ),
    Group(
        "deny",
        (
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "open_tree",
            "move_mount",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "mount_setattr",
            "statmount",
            "listmount",
            "open_tree_attr",
        ),
        "changes what paths mean, under the path-based Landlock rules",
        "EPERM",
    ),
    Group(
        "deny",
        ("unshare", "setns"),
        "enters or creates namespaces: user namespaces hand out capabilities and kernel "
        "attack surface",
        "EPERM",
    ),
    Group(
        "deny",
        ("io_uring_setup", "io_uring_enter", "io_uring_register"),
        "io_uring: operations no seccomp filter sees, and a history of kernel exploits",
        "EPERM",
    ),
    Group(
        "deny",
        ("bpf", "perf_event_open", "userfaultfd"),
        "a large kernel attack surface (userfaultfd turns kernel races into reliable exploits)",
        "EPERM",
    ),
    Group(
        "deny",
        ("add_key", "request_key", "keyctl"),
        "the kernel keyrings, shared by every process of the user (stored credentials)",
        "EPERM",
    ),
    Group(
        "deny",
        ("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
        "replaces or extends the running kernel",
        "EPERM",
    ),
    Group(
        "deny",
        ("personality",),
        "switches off the process's own hardening (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE)",
        "EPERM",
    ),
    Group(
        "deny",
        ("name_to_handle_at", "open_by_handle_at"),
        "opens files by inode number, skipping every path check (the 'shocker' escape)",
        "EPERM",
    ),
    Group(
        "deny",
        ("execveat",),
        "executes a descriptor (memfd exec): code that no execute rule saw",
        "EPERM",
    ),
    Group(
        "deny",
        (
            "acct",
            "swapon",
            "swapoff",
            "reboot",
            "syslog",
            "quotactl",
            "fanotify_init",
            "lookup_dcookie",
            "vhangup",
        ),
        "whole-system administration",
        "EPERM",
    ),
    Group(
        "deny",
        ("iopl", "ioperm", "modify_ldt", "uselib"),
        "x86 I/O ports, the LDT and a.out libraries: hardware and legacy attack surface",
        "EPERM",
    ),
    Group(
        "deny",
        (
            "settimeofday",
            "clock_settime",
            "clock_adjtime",
            "adjtimex",
            "sethostname",
            "setdomainname",
        ),
        "changes the clock or the host's names, which belong to the whole machine",
        "EPERM",
    ),
    Group(
        "deny",
        ("mbind", "migrate_pages", "move_pages"),
        "NUMA placement, which can move other processes' pages",
        "EPERM",
    ),
    Group(
        "deny",
        (
            "shmget",
            "shmat",
            "shmdt",
            "shmctl",
            "semget",
            "semop",
            "semtimedop",
            "semctl",
            "msgget",
            "msgsnd",
            "msgrcv",
            "msgctl",
        ),
        "System V IPC: a same-user process's 0600 segment can be read and overwritten, its "
        "queued messages stolen, and the objects outlive the run as a channel between "
        "sandboxed tools",
        "EPERM",
    ),
    Group(
        "deny",
        (
            "mq_open",
            "mq_unlink",
            "mq_timedsend",
            "mq_timedreceive",
            "mq_notify",
            "mq_getsetattr",
        ),
        "POSIX message queues: named global objects that no Landlock path rule sees, shared "
        "with the user's other processes and outliving the run",
        "EPERM",
    ),
    Group(
        "deny",
        ("inotify_add_watch",),
        "reports the names of files created, opened or deleted in directories Landlock "
        "refuses to list (a watch needs only the mode bits, Landlock never sees it)",
        "EPERM",
    ),
    Group(
        "deny",
        ("fanotify_mark",),
        "watches whole mounts and filesystems (denied with fanotify_init, whose group it needs)",
        "EPERM",
    ),
    Group(
        "deny",
        ("process_mrelease",),
        "reaps the memory of another, dying process: a process outside the sandbox",
        "EPERM",
    ),
    Group(
        "deny",
        ("quotactl_fd",),
        "disk quota administration, like quotactl: whole-system administration",
        "EPERM",
    ),
    Group(
        "deny",
        ("set_thread_area", "get_thread_area", "epoll_ctl_old", "epoll_wait_old"),
        "not implemented for x86_64 (the kernel answers ENOSYS): denied so that a future "
        "meaning is decided before it is allowed",
        "EPERM",
    ),
)

DENY_GROUPS: tuple[tuple[tuple[str, ...], str], ...] = tuple((g.names, g.why) for g in _DENY)
"""The default deny list, grouped, with what each group would open if allowed: the one
source for the filter (``seccomp.DEFAULT_DENY``) and cvg-validate's warnings."""

# Names allowed to be missing from an architecture's table when listed in ``deny``:
# they only exist on x86 (uselib is gone from current tables altogether), so the same
# deny list serves both architectures. Anything else missing is a typo or a plan for
# the wrong kernel, and is an error.
ARCH_SPECIFIC = frozenset(
    {
        "iopl",
        "ioperm",
        "modify_ldt",
        "uselib",
        "set_thread_area",
        "get_thread_area",
        "epoll_ctl_old",
        "epoll_wait_old",
    }
)

# The names of the kernel's x86_64 header (asm/unistd_64.h) that the syscall table has
# no entry for: removed from the kernel (_sysctl in 5.5, create_module, query_module,
# get_kernel_syms and nfsservctl long before) or reserved and never implemented. Their
# numbers stay reserved; the kernel answers them ENOSYS, and so does the filter (a
# number the table lacks is answered ENOSYS, see seccomp._rest).
REMOVED_X86_64: Mapping[str, int] = {
    "create_module": 174,
    "get_kernel_syms": 177,
    "query_module": 178,
    "nfsservctl": 180,
    "getpmsg": 181,
    "putpmsg": 182,
    "afs_syscall": 183,
    "tuxcall": 184,
    "security": 185,
    "_sysctl": 156,
    "vserver": 236,
}

UNIMPLEMENTED = frozenset(
    {"set_thread_area", "get_thread_area", "epoll_ctl_old", "epoll_wait_old", "uselib"}
    | set(REMOVED_X86_64)
)
"""Names the kernel itself answers with ENOSYS (uselib and REMOVED_X86_64 have no
number in the table): there is nothing for an escape attack to try."""

# --------------------------------------------------------------------------- the rest

_ARGS = "allowed with argument checks in the seccomp filter"
_SIGNAL = (
    "a signal to another process: from Landlock ABI 6 the signal scope checks the target in "
    "the kernel; below ABI 6 the supervisor, through seccomp user notification, allows only "
    "targets inside the tool's own process tree"
)
_DESCRIPTOR = (
    "works on a descriptor the caller already holds: Landlock checked the file when it was "
    "opened, and cvg-run closes every inherited descriptor but 0, 1 and 2"
)

_OTHERS: tuple[Group, ...] = (
    Group(
        "deny",
        tuple(REMOVED_X86_64),
        "unimplemented: removed from the kernel or never implemented, with a number the "
        "x86_64 header still reserves and no entry point; the kernel answers it ENOSYS, and "
        "the filter answers ENOSYS to any number the syscall table lacks",
        "ENOSYS",
    ),
    Group(
        "deny",
        ("clone3",),
        "BPF cannot read clone3's flags (they are in memory, not in registers): answered "
        "ENOSYS, so the C library falls back to clone, whose CLONE_NEW* flags are checked",
        "ENOSYS",
    ),
    Group(
        "args",
        (
            "socket",
            "socketpair",
            "clone",
            "ioctl",
            "memfd_create",
            "sendto",
            "sendmsg",
            "sendmmsg",
            "prlimit64",
            "setpriority",
            "sched_setaffinity",
            "sched_setscheduler",
            "sched_setparam",
            "sched_setattr",
            "ioprio_set",
            "get_robust_list",
            "listen",
            "fcntl",
        ),
        _ARGS,
        "EPERM",
    ),
    Group(
        "notify",
        (
            "kill",
            "tkill",
            "tgkill",
            "rt_sigqueueinfo",
            "rt_tgsigqueueinfo",
            "pidfd_send_signal",
        ),
        _SIGNAL,
        "EPERM",
    ),
    Group(
        "allow",
        ("open", "openat", "openat2", "creat"),
        "Landlock checks the file reached, whatever path spelled it: read_file, write_file, "
        "make_reg to create, truncate for O_TRUNC (ABI 3)",
    ),
    Group(
        "allow",
        ("mkdir", "mkdirat"),
        "Landlock make_dir on the parent directory",
    ),
    Group(
        "allow",
        ("mknod", "mknodat"),
        "Landlock make_reg, make_fifo or make_sock on the parent (devices: make_char or "
        "make_block, and the dropped CAP_MKNOD)",
    ),
    Group(
        "allow",
        ("unlink", "unlinkat", "rmdir"),
        "Landlock remove_file or remove_dir on the parent directory",
    ),
    Group(
        "allow",
        ("rename", "renameat", "renameat2"),
        "Landlock remove_* at the source, make_* at the destination, and refer to move "
        "between directories (never granted; before ABI 2 such moves are always refused)",
    ),
    Group(
        "allow",
        ("link", "linkat"),
        "Landlock make_reg at the destination, and refer to link into another directory "
        "(never granted)",
    ),
    Group(
        "allow",
        ("symlink", "symlinkat"),
        "Landlock make_sym on the parent; the link is checked again, as its target, when used",
    ),
    Group(
        "allow",
        ("truncate",),
        "Landlock truncate from ABI 3 (below ABI 3 truncating by path is not checked)",
    ),
    Group(
        "allow",
        ("execve",),
        "Landlock execute on the file run (a #! script needs it too)",
    ),
    Group(
        "allow",
        ("bind",),
        "TCP ports: Landlock bind_tcp from ABI 4; a pathname UNIX socket: make_sock on its "
        "directory; other families exist only as the socket() rule allows",
    ),
    Group(
        "allow",
        ("connect",),
        "TCP ports: Landlock connect_tcp from ABI 4 (ports, not hosts); pathname UNIX sockets: "
        "resolve_unix from ABI 9, abstract ones the scope from ABI 6; other families exist "
        "only as the socket() rule allows",
    ),
    Group(
        "allow",
        (
            "accept",
            "accept4",
            "recvfrom",
            "recvmsg",
            "recvmmsg",
            "getsockname",
            "getpeername",
            "setsockopt",
            "getsockopt",
            "shutdown",
        ),
        "a socket the caller already holds: whether it exists is the socket() rule's "
        "decision, where it binds or connects is Landlock's",
    ),
    Group(
        "allow",
        (
            "stat",
            "lstat",
            "newfstatat",
            "statx",
            "access",
            "faccessat",
            "faccessat2",
            "readlink",
            "readlinkat",
            "statfs",
            "ustat",
            "getxattr",
            "lgetxattr",
            "getxattrat",
            "listxattr",
            "llistxattr",
            "listxattrat",
            "file_getattr",
            "chdir",
        ),
        "documented limit: reveals whether a path exists and its metadata (size, times, "
        "owner, mode, xattrs, a link's target) wherever the caller may search; Landlock "
        "does not check it, the content stays behind read_file",
    ),
    Group(
        "allow",
        (
            "chmod",
            "fchmod",
            "fchmodat",
            "fchmodat2",
            "chown",
            "fchown",
            "lchown",
            "fchownat",
            "utime",
            "utimes",
            "futimesat",
            "utimensat",
            "setxattr",
            "lsetxattr",
            "fsetxattr",
            "setxattrat",
            "removexattr",
            "lremovexattr",
            "fremovexattr",
            "removexattrat",
            "file_setattr",
        ),
        "documented limit: changes the metadata (mode, owner, times, xattrs) of any file the "
        "caller owns, even one it may only read or cannot open; Landlock does not check it",
    ),
    Group(
        "allow",
        (
            "read",
            "write",
            "readv",
            "writev",
            "pread64",
            "pwrite64",
            "preadv",
            "pwritev",
            "preadv2",
            "pwritev2",
            "lseek",
            "close",
            "close_range",
            "dup",
            "dup2",
            "dup3",
            "flock",
            "fsync",
            "fdatasync",
            "sync_file_range",
            "fadvise64",
            "readahead",
            "fallocate",
            "ftruncate",
            "sendfile",
            "splice",
            "tee",
            "vmsplice",
            "copy_file_range",
            "getdents",
            "getdents64",
            "fstat",
            "fstatfs",
            "fgetxattr",
            "flistxattr",
            "fchdir",
            "cachestat",
            "syncfs",
        ),
        _DESCRIPTOR,
    ),
    Group(
        "allow",
        (
            "pipe",
            "pipe2",
            "select",
            "pselect6",
            "poll",
            "ppoll",
            "epoll_create",
            "epoll_create1",
            "epoll_ctl",
            "epoll_wait",
            "epoll_pwait",
            "epoll_pwait2",
            "eventfd",
            "eventfd2",
            "signalfd",
            "signalfd4",
            "timerfd_create",
            "timerfd_settime",
            "timerfd_gettime",
            "inotify_init",
            "inotify_init1",
            "inotify_rm_watch",
        ),
        "creates or waits on descriptors private to the caller (pipes, event, signal and "
        "timer descriptors, epoll sets)",
    ),
    Group(
        "allow",
        ("io_setup", "io_destroy", "io_getevents", "io_submit", "io_cancel", "io_pgetevents"),
        "Linux AIO on descriptors the caller holds: reads, writes, fsync and poll only (no "
        "open or connect, unlike io_uring), each checked as the plain call would be",
    ),
    Group(
        "allow",
        (
            "brk",
            "mmap",
            "munmap",
            "mprotect",
            "mremap",
            "madvise",
            "mincore",
            "msync",
            "mlock",
            "mlock2",
            "munlock",
            "mlockall",
            "munlockall",
            "mseal",
            "pkey_mprotect",
            "pkey_alloc",
            "pkey_free",
            "map_shadow_stack",
            "remap_file_pages",
            "memfd_secret",
            "set_mempolicy",
            "get_mempolicy",
            "set_mempolicy_home_node",
        ),
        "the caller's own address space, bounded by RLIMIT_DATA and the supervisor's "
        "tree-wide resident sum; a file it maps was checked by Landlock when opened",
    ),
    Group(
        "allow",
        (
            "rt_sigaction",
            "rt_sigprocmask",
            "rt_sigpending",
            "rt_sigtimedwait",
            "rt_sigsuspend",
            "rt_sigreturn",
            "sigaltstack",
            "pause",
            "alarm",
            "getitimer",
            "setitimer",
            "restart_syscall",
        ),
        "the caller's own signal handling and interval timers",
    ),
    Group(
        "allow",
        (
            "gettimeofday",
            "time",
            "clock_gettime",
            "clock_getres",
            "clock_nanosleep",
            "nanosleep",
            "timer_create",
            "timer_settime",
            "timer_gettime",
            "timer_getoverrun",
            "timer_delete",
            "times",
            "getrusage",
            "sched_yield",
        ),
        "reads the clocks, sleeps, or arms the caller's own timers (setting a clock is denied)",
    ),
    Group(
        "allow",
        (
            "futex",
            "futex_waitv",
            "futex_wake",
            "futex_wait",
            "futex_requeue",
            "set_robust_list",
            "set_tid_address",
            "rseq",
            "rseq_slice_yield",
            "membarrier",
            "getcpu",
            "arch_prctl",
            "exit",
            "exit_group",
        ),
        "the caller's own threads: synchronisation on memory it maps, its thread state, its end",
    ),
    Group(
        "allow",
        (
            "getpid",
            "getppid",
            "gettid",
            "getuid",
            "geteuid",
            "getgid",
            "getegid",
            "getresuid",
            "getresgid",
            "getgroups",
            "getpgrp",
            "getcwd",
            "umask",
        ),
        "reads (or, for umask, sets) the caller's own identity and process attributes",
    ),
    Group(
        "allow",
        (
            "uname",
            "sysinfo",
            "sysfs",
            "getrandom",
            "lsm_list_modules",
            "sched_get_priority_max",
            "sched_get_priority_min",
        ),
        "public facts about the machine, or random bytes: nothing any process may not read",
    ),
    Group(
        "allow",
        (
            "setuid",
            "setgid",
            "setreuid",
            "setregid",
            "setresuid",
            "setresgid",
            "setfsuid",
            "setfsgid",
            "setgroups",
            "capset",
            "prctl",
            "lsm_get_self_attr",
            "lsm_set_self_attr",
        ),
        "the caller's own credentials: with every capability dropped and no_new_privs set it "
        "can only give up rights, or swap among its own real, effective and saved ids",
    ),
    Group(
        "allow",
        ("getrlimit", "setrlimit"),
        "the caller's own resource limits: the soft one up to the hard one, the hard one only "
        "down (CAP_SYS_RESOURCE is dropped); another process's are prlimit64's, checked",
    ),
    Group(
        "allow",
        ("seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"),
        "restricts the caller further: a seccomp filter or Landlock domain can be stacked on "
        "cvg's, never removed",
    ),
    Group(
        "allow",
        ("fork", "vfork", "wait4", "waitid", "setsid", "setpgid"),
        "creates or reaps the caller's own children, which inherit the whole sandbox and "
        "count against the processes limit",
    ),
    Group(
        "allow",
        (
            "getpgid",
            "getsid",
            "getpriority",
            "sched_getaffinity",
            "sched_getparam",
            "sched_getscheduler",
            "sched_getattr",
            "sched_rr_get_interval",
            "ioprio_get",
            "capget",
            "pidfd_open",
        ),
        "reads public facts about any process, the ones ps(1) shows and /proc/PID/stat "
        "holds; changing them is argument-checked (setpriority, sched_set*, ioprio_set)",
    ),
    Group(
        "allow",
        ("listns",),
        "lists the ids of namespaces the caller may see; entering or opening one needs setns "
        "or open_by_handle_at, both denied",
    ),
    Group(
        "allow",
        ("sync",),
        "flushes every filesystem's dirty data to disk: a cost to the machine, no reach",
    ),
    Group(
        "allow",
        ("uprobe", "uretprobe"),
        "made only from the kernel's uprobe trampoline, for a tracer attached from outside; "
        "called from anywhere else it fails (SIGILL)",
    ),
    Group("unknown", (), "not decided: treated as denied (ENOSYS)", "ENOSYS"),
)

GROUPS: tuple[Group, ...] = _DENY + _OTHERS
"""Every group, the default deny list's first."""

# --------------------------------------------------------------------------- one call

NOTES: Mapping[str, str] = {
    # args: what the filter checks, and why.
    "socket": "(family, type, protocol) must be one the policy's network section grants; "
    "raw, packet and netlink sockets, MPTCP and SCTP only when named",
    "socketpair": "AF_UNIX only; SOCK_DGRAM only when the policy grants unix sockets, because "
    "a datagram socketpair can sendto or connect a pathname or abstract socket",
    "clone": "any CLONE_NEW* flag refused: new namespaces are what the denied unshare gives",
    "ioctl": "TIOCSTI and TIOCLINUX refused (both push input into a terminal: commands for "
    "the caller's shell); FIOSETOWN and SIOCSPGRP (a SIGIO owner) go to the supervisor below "
    "Landlock ABI 6; device ioctls are Landlock's ioctl_dev from ABI 5",
    "memfd_create": "must seal exec (MFD_NOEXEC_SEAL, not MFD_EXEC): code written to memory "
    "is never run past Landlock's execute right",
    "sendto": "MSG_FASTOPEN refused: it connects inside the send, past Landlock's "
    "connect_tcp check",
    "sendmsg": "MSG_FASTOPEN refused: it connects inside the send, past Landlock's "
    "connect_tcp check",
    "sendmmsg": "MSG_FASTOPEN refused: it connects inside the send, past Landlock's "
    "connect_tcp check",
    "prlimit64": "another process only to read: pid 0 or new_limit NULL (lowering another "
    "process's limits, cvg-run's RLIMIT_NOFILE among them, reaches outside)",
    "setpriority": "only PRIO_PROCESS with who 0, the caller: PRIO_PGRP and PRIO_USER renice "
    "processes outside the sandbox",
    "sched_setaffinity": "pid 0 only: another pid is a process outside the sandbox",
    "sched_setscheduler": "pid 0 only: another pid is a process outside the sandbox",
    "sched_setparam": "pid 0 only: another pid is a process outside the sandbox",
    "sched_setattr": "pid 0 only: another pid is a process outside the sandbox",
    "ioprio_set": "IOPRIO_WHO_PROCESS with who 0 only: other targets are processes, groups or "
    "a whole user outside the sandbox",
    "get_robust_list": "pid 0 only: another process's robust futex list is an address in its "
    "memory, a leak of its layout",
    "listen": "refused when the policy grants neither tcp_bind nor unix; otherwise the "
    "supervisor decides it (listen() on a TCP socket never bound binds an ephemeral port "
    "Landlock never sees: refused, EACCES) and listens on a bound socket itself",
    "fcntl": "F_SETOWN and F_SETOWN_EX aim SIGIO at another process, a signal: below "
    "Landlock ABI 6 they go to the supervisor (an owner inside the tool's tree only), from "
    "ABI 6 the signal scope checks the delivery; other commands act on the caller's own "
    "descriptor",
    # allow: where the reach is checked, or that it is not.
    "mmap": "the caller's own address space; PROT_EXEC of a readable file is not Landlock's "
    "execute right, which gates execve only (documented limit)",
    "mprotect": "the caller's own address space; PROT_EXEC on its own memory is not "
    "Landlock's execute right (documented limit)",
    "mincore": "residency of the caller's own mappings (a page-cache side channel on files "
    "it may read)",
    "mlock": "the caller's own memory, bounded by RLIMIT_MEMLOCK",
    "mlock2": "the caller's own memory, bounded by RLIMIT_MEMLOCK",
    "mlockall": "the caller's own memory, bounded by RLIMIT_MEMLOCK",
    "memfd_secret": "memory removed from the kernel's direct map, the caller's own, bounded "
    "by RLIMIT_MEMLOCK",
    "set_mempolicy": "NUMA policy of the caller's own memory (mbind, which can move pages, is "
    "denied)",
    "set_mempolicy_home_node": "NUMA home node of the caller's own memory (mbind, which can "
    "move pages, is denied)",
    "read": "reads a descriptor the caller holds, checked by Landlock read_file when opened; "
    "cvg-run closes every inherited descriptor but 0, 1 and 2",
    "write": "writes a descriptor the caller holds, checked by Landlock write_file when "
    "opened; RLIMIT_FSIZE bounds a file's size",
    "pwrite64": "writes a descriptor the caller holds, checked by Landlock write_file when "
    "opened; RLIMIT_FSIZE bounds a file's size",
    "fallocate": "a file the caller opened for writing; RLIMIT_FSIZE bounds its size",
    "ftruncate": "a file the caller opened, where Landlock checked truncate (ABI 3); "
    "RLIMIT_FSIZE bounds its size",
    "getdents": "lists a directory the caller opened, where Landlock checked read_dir",
    "getdents64": "lists a directory the caller opened, where Landlock checked read_dir",
    "fchdir": "enters a directory the caller holds a descriptor of; what it opens there is checked",
    "fstat": "metadata of a file the caller holds open",
    "fstatfs": "filesystem statistics of a file the caller holds open",
    "fgetxattr": "extended attributes of a file the caller holds open",
    "flistxattr": "extended attributes of a file the caller holds open",
    "cachestat": "page-cache residency of a file the caller holds open (a side channel, like "
    "mincore)",
    "syncfs": "flushes the filesystem of a file the caller holds: a cost, no reach",
    "io_setup": "a Linux AIO context of the caller's; it takes from the system-wide "
    "aio-max-nr, a limit every user shares",
    "inotify_init": "an inotify instance with no watch: adding one is denied",
    "inotify_init1": "an inotify instance with no watch: adding one is denied",
    "inotify_rm_watch": "removes a watch the caller never could add (inotify_add_watch is denied)",
    "chdir": "documented limit: enters any directory the caller may search, which reveals that "
    "it exists; what it opens there is checked by Landlock",
    "chown": "documented limit: changes a file's owner or group among the caller's own ids "
    "(CAP_CHOWN is dropped); Landlock does not check it",
    "fchown": "documented limit: changes a file's group among the caller's own ids (CAP_CHOWN "
    "is dropped); Landlock does not check it",
    "lchown": "documented limit: changes a link's owner or group among the caller's own ids "
    "(CAP_CHOWN is dropped); Landlock does not check it",
    "fchownat": "documented limit: changes a file's owner or group among the caller's own ids "
    "(CAP_CHOWN is dropped); Landlock does not check it",
    "file_setattr": "documented limit: a file's fsxattr flags and project, owner only "
    "(immutable and append-only need the dropped CAP_LINUX_IMMUTABLE); Landlock does not "
    "check it",
    "accept": "accepts on a socket the caller bound (Landlock bind_tcp) and listened on",
    "accept4": "accepts on a socket the caller bound (Landlock bind_tcp) and listened on",
    "setsockopt": "options of a socket the caller holds; TCP_FASTOPEN_CONNECT still connects "
    "through connect(), where Landlock checks the port",
    "getrusage": "the caller's own resource usage, or its waited-for children's",
    "times": "the caller's own CPU times, and its waited-for children's",
    "membarrier": "orders the memory of the caller's own threads; the global command only "
    "waits for the other CPUs: a cost, no reach",
    "arch_prctl": "the caller's own FS/GS base and x86 features",
    "umask": "sets the caller's own file creation mask",
    "sysinfo": "system-wide memory, swap and load figures, public in /proc",
    "setgroups": "its own supplementary groups; without CAP_SETGID, which is dropped, it "
    "only fails",
    "capset": "the caller's own capability sets, which can only shrink",
    "prctl": "the caller's own attributes (name, no_new_privs, subreaper, dumpable); options "
    "that reach further need dropped capabilities (PR_SET_MM)",
    "lsm_get_self_attr": "reads the caller's own LSM labels",
    "lsm_set_self_attr": "the caller's own LSM label, as the LSM's policy allows",
    "seccomp": "adds a filter to the caller (a listener only sees the caller's own "
    "descendants): cvg's filter stays",
    "setsid": "a new session for the caller; cvg-run is its subreaper and still kills it at "
    "the end of the run",
    "setpgid": "moves the caller or its own child into a process group of its session",
    "wait4": "waits for the caller's own children only",
    "waitid": "waits for the caller's own children only (a pidfd of another process: ECHILD)",
    "pidfd_open": "a handle on any visible process, which reads nothing by itself: signalling "
    "through it is notify-checked, pidfd_getfd and setns are denied",
    # allow, and the escape matrix's documented limit "public-process-info": scheduling
    # facts and ids of other processes are public, as in /proc.
    "getpgid": "documented limit: the process group of any process is public, as in /proc/PID/stat",
    "getsid": "documented limit: the session of any process is public, as in /proc/PID/stat",
    "capget": "documented limit: the capability sets of any process are public, as in "
    "/proc/PID/status",
    "getpriority": "documented limit: the nice value of any process, process group or user "
    "is public, as in /proc/PID/stat; changing it is argument-checked (setpriority)",
    "ioprio_get": "documented limit: the I/O priority of any process, process group or user "
    "is a public scheduling fact, like the nice value; changing it is argument-checked "
    "(ioprio_set)",
    "sched_getaffinity": "documented limit: the CPU mask of any process is public, as in "
    "/proc/PID/status; changing it is argument-checked (sched_setaffinity)",
    "sched_getparam": "documented limit: the real-time priority of any process is public, as "
    "in /proc/PID/stat; changing it is argument-checked (sched_setparam)",
    "sched_getscheduler": "documented limit: the scheduling policy of any process is public, "
    "as in /proc/PID/stat; changing it is argument-checked (sched_setscheduler)",
    "sched_getattr": "documented limit: the policy, priority and nice value of any process "
    "are public, as in /proc/PID/stat; changing them is argument-checked (sched_setattr)",
    "sched_rr_get_interval": "documented limit: the round-robin time slice of any process is "
    "a public scheduling fact",
}

ATTACKS: Mapping[str, tuple[str, ...]] = {
    # deny
    "ptrace": ("ptrace_attach_sentinel", "ptrace_seize_sentinel", "ptrace_attach_supervisor"),
    "process_vm_readv": ("process_vm_readv_sentinel",),
    "process_vm_writev": ("process_vm_writev_sentinel",),
    "pidfd_getfd": ("pidfd_getfd_steal_sentinel_fd",),
    "mount": ("mount_tmpfs_over_workspace",),
    "chroot": ("chroot_into_workspace",),
    "fsopen": ("fsopen_fsmount_move_mount",),
    "fsconfig": ("fsopen_fsmount_move_mount",),
    "fsmount": ("fsopen_fsmount_move_mount",),
    "move_mount": ("fsopen_fsmount_move_mount",),
    "unshare": (
        "unshare_user_namespace",
        "unshare_user_and_net_namespace",
        "unshare_user_namespace_default_policy",
    ),
    "setns": ("setns_into_sentinel_namespaces",),
    "io_uring_setup": ("io_uring_setup_ring",),
    "bpf": ("bpf_map_create",),
    "perf_event_open": ("perf_event_open_self",),
    "userfaultfd": ("userfaultfd_create",),
    "add_key": ("add_key_to_user_keyring",),
    "execveat": ("memfd_execveat_empty_path", "execveat_ungranted_file_fd"),
    "inotify_add_watch": ("inotify_ungranted_dir",),
    "clone3": ("clone3_with_newuser_flag",),
    "process_madvise": ("process_madvise_collapse_sentinel",),
    "process_mrelease": ("process_mrelease_sentinel",),
    "kcmp": ("kcmp_sentinel_files",),
    "umount2": ("umount2_detach_outside",),
    "pivot_root": ("pivot_root_into_workspace",),
    "open_tree": ("open_tree_read_outside",),
    "open_tree_attr": ("open_tree_attr_read_outside",),
    "fspick": ("fspick_reconfigure_read_only",),
    "mount_setattr": ("mount_setattr_read_only",),
    "statmount": ("statmount_listmount_mountpoints",),
    "listmount": ("statmount_listmount_mountpoints",),
    "io_uring_enter": ("io_uring_openat_read_outside",),
    "io_uring_register": ("io_uring_openat_read_outside",),
    "request_key": ("request_key_read_user_key",),
    "keyctl": ("keyctl_read_user_key", "request_key_read_user_key"),
    "kexec_load": ("kexec_load_empty",),
    "kexec_file_load": ("kexec_file_load_no_kernel",),
    "init_module": ("init_module_garbage",),
    "finit_module": ("finit_module_empty_file",),
    "delete_module": ("delete_module_absent",),
    "personality": ("personality_no_randomize",),
    "name_to_handle_at": ("open_by_handle_shocker",),
    "open_by_handle_at": ("open_by_handle_shocker",),
    "acct": ("acct_every_process",),
    "swapon": ("swapon_workspace_file",),
    "swapoff": ("swapoff_workspace_file",),
    "reboot": ("reboot_ctrl_alt_del_off",),
    "syslog": ("syslog_read_kernel_log",),
    "quotactl": ("quotactl_sync_all",),
    "fanotify_init": ("fanotify_ungranted_dir",),
    "fanotify_mark": ("fanotify_ungranted_dir",),
    "lookup_dcookie": ("lookup_dcookie_any",),
    "vhangup": ("vhangup_terminal",),
    "quotactl_fd": ("quotactl_fd_sync",),
    "iopl": ("iopl_raise",),
    "ioperm": ("ioperm_port_80",),
    "modify_ldt": ("modify_ldt_install_entry",),
    "settimeofday": ("settimeofday_jump",),
    "clock_settime": ("clock_settime_jump",),
    "clock_adjtime": ("clock_adjtime_tick",),
    "adjtimex": ("adjtimex_tick",),
    "sethostname": ("sethostname_machine",),
    "setdomainname": ("setdomainname_machine",),
    "mbind": ("mbind_move_all_shared_pages",),
    "migrate_pages": ("migrate_pages_sentinel",),
    "move_pages": ("move_pages_sentinel",),
    "shmget": ("sysv_shm_outlives_run",),
    "shmat": ("sysv_shm_read_sentinel", "sysv_shm_write_sentinel", "sysv_shmdt_sentinel"),
    "shmdt": ("sysv_shmdt_sentinel",),
    "shmctl": ("sysv_shmctl_set_sentinel",),
    "msgget": ("sysv_msg_outlives_run",),
    "msgsnd": ("sysv_msgsnd_sentinel",),
    "msgrcv": ("sysv_msg_steal_sentinel",),
    "msgctl": ("sysv_msgctl_set_sentinel",),
    "semget": ("sysv_sem_outlives_run",),
    "semop": ("sysv_sem_sentinel",),
    "semtimedop": ("sysv_semtimedop_sentinel",),
    "semctl": ("sysv_semctl_setval_sentinel",),
    "mq_open": ("mqueue_read_sentinel", "mqueue_getsetattr_read_sentinel"),
    "mq_unlink": ("mqueue_unlink_sentinel",),
    "mq_timedsend": ("mqueue_timedsend_sentinel",),
    "mq_timedreceive": ("mqueue_read_sentinel", "mqueue_getsetattr_read_sentinel"),
    "mq_notify": ("mqueue_notify_sentinel",),
    "mq_getsetattr": ("mqueue_getsetattr_read_sentinel",),
    # args
    "socket": (
        "tcp_connect_default_policy",
        "udp_sendto_sink",
        "icmp_dgram_socket_then_udp_connect",
        "mptcp_connect_ungranted_port",
        "sctp_connect_ungranted_port",
        "raw_socket_forged_udp",
        "packet_socket_forged_frame_on_lo",
        "netlink_sock_diag_finds_hidden_listener",
        "unix_pathname_connect_default_policy",
        "hosts_udp_around_proxy",
    ),
    "socketpair": (
        "socketpair_dgram_sendto_path",
        "socketpair_dgram_connect_path",
        "socketpair_dgram_sendto_abstract",
    ),
    "clone": (
        "clone_with_newuser_flag",
        "clone_newuser_flag_high_bits",
        "fork_storm",
        "daemon_double_fork_setsid",
        "threads_past_processes",
    ),
    "ioctl": (
        "tiocsti_inject_into_terminal",
        "tiocsti_inject_high_bits",
        "tioclinux_paste_selection",
    ),
    "memfd_create": (
        "memfd_exec_via_proc_self_fd",
        "memfd_execveat_empty_path",
        "memfd_past_memory_mb",
    ),
    "sendto": (
        "tcp_fastopen_sendto_ungranted_port",
        "hosts_fastopen_ignoring_proxy",
        "socketpair_dgram_sendto_path",
        "socketpair_dgram_sendto_abstract",
        "unix_dgram_sendto_pathname_unix_granted",
    ),
    "prlimit64": ("prlimit_cpu_sentinel", "prlimit_nofile_supervisor"),
    "setpriority": ("setpriority_sentinel", "setpriority_user_all"),
    "sched_setaffinity": ("sched_setaffinity_sentinel",),
    "sched_setscheduler": ("sched_setscheduler_sentinel",),
    "sched_setattr": ("sched_setattr_sentinel",),
    "ioprio_set": ("ioprio_set_sentinel",),
    "sched_setparam": ("sched_setparam_sentinel",),
    "get_robust_list": ("get_robust_list_sentinel",),
    "sendmsg": ("tcp_fastopen_sendmsg_ungranted_port",),
    "sendmmsg": ("tcp_fastopen_sendmmsg_ungranted_port",),
    "listen": ("listen_autobind_ephemeral", "tcp_bind_listen_ungranted_port"),
    "fcntl": ("fsetown_sigio_sentinel", "fsetown_sigio_to_sentinel"),
    # notify
    "kill": (
        "kill_sentinel",
        "kill_sentinel_default_policy",
        "kill_sentinel_process_group",
        "kill_supervisor",
        "sigstop_supervisor",
        "kill_supervisor_then_linger",
        "i386_int80_kill_sentinel",
        "x32_syscall_kill_sentinel",
    ),
    "tkill": ("tkill_sentinel", "tkill_supervisor"),
    "tgkill": ("tgkill_sentinel", "tgkill_supervisor"),
    "rt_sigqueueinfo": ("rt_sigqueueinfo_sentinel", "rt_sigqueueinfo_supervisor"),
    "rt_tgsigqueueinfo": ("rt_tgsigqueueinfo_sentinel", "rt_tgsigqueueinfo_supervisor"),
    "pidfd_send_signal": ("pidfd_send_signal_sentinel", "pidfd_send_signal_supervisor"),
    # allow, where Landlock (or a documented limit) is what an attack meets
    "open": ("read_file_outside_grants", "write_file_outside_grants"),
    "openat": (
        "read_file_outside_grants",
        "write_file_outside_grants",
        "append_file_outside_grants",
        "create_file_outside_grants",
        "open_o_trunc_outside_grants",
        "read_via_dotdot_from_workspace",
        "read_via_proc_self_root",
        "proc_self_fd_reopen_o_path_for_read",
        "proc_self_fd_reopen_o_path_for_write",
        "symlink_in_workspace_read_through",
        "list_directory_outside_grants",
    ),
    "openat2": ("read_file_outside_grants", "write_file_outside_grants"),
    "creat": ("create_file_outside_grants",),
    "mkdir": ("mkdir_outside_grants",),
    "mkdirat": ("mkdir_outside_grants",),
    "mknod": ("mkfifo_outside_grants",),
    "mknodat": ("mkfifo_outside_grants",),
    "unlink": ("unlink_file_outside_grants", "delete_run_record"),
    "unlinkat": ("unlink_file_outside_grants", "delete_run_record"),
    "rmdir": ("rmdir_outside_grants",),
    "rename": (
        "rename_within_outside",
        "rename_canary_into_workspace",
        "rename_workspace_file_over_canary",
        "replace_policy_file_by_rename",
        "rename_state_directory",
        "rename_readonly_into_write_grant",
    ),
    "renameat": ("rename_within_outside", "rename_canary_into_workspace"),
    "renameat2": ("renameat2_exchange_with_canary",),
    "link": (
        "hardlink_canary_into_workspace_then_write",
        "hardlink_secret_into_workspace_then_read",
        "link_readonly_into_write_grant",
    ),
    "linkat": ("linkat_empty_path_o_path",),
    "symlink": (
        "symlink_create_outside_grants",
        "symlink_in_workspace_write_through",
        "symlink_nested_grant_redirect",
    ),
    "symlinkat": ("symlink_create_outside_grants",),
    "truncate": ("truncate_path_outside_grants",),
    "ftruncate": ("file_size_ftruncate_extend",),
    "fallocate": ("file_size_fallocate",),
    "write": ("file_size_write",),
    "pwrite64": ("file_size_pwrite_far_offset",),
    "read": ("read_inherited_file_descriptor",),
    "getdents64": ("list_directory_outside_grants",),
    "execve": (
        "exec_ungranted_elf",
        "exec_ungranted_script",
        "exec_copy_in_workspace",
        "exec_copy_in_scratch_default_policy",
    ),
    "mmap": ("dynamic_loader_runs_readable_elf",),
    "bind": ("tcp_bind_listen_ungranted_port",),
    "connect": (
        "tcp_connect_ungranted_port",
        "tcp6_connect_ungranted_port",
        "tcp6_v4mapped_connect_ungranted_port",
        "tcp_connect_granted_port_other_host",
        "unix_pathname_connect_unix_granted",
        "unix_abstract_connect_unix_granted",
        "unix_path_connect_ungranted",
        "socketpair_dgram_connect_path",
        "hosts_direct_connect_ignoring_proxy",
    ),
    "chmod": ("chmod_canary", "chmod_policy_file_world_writable"),
    "fchmodat": ("chmod_canary",),
    "chown": ("chown_canary_to_self",),
    "utimensat": ("utime_canary",),
    "setxattr": ("setxattr_canary",),
    "setsid": ("daemon_double_fork_setsid", "wall_clock_ignore_signals"),
    "pidfd_open": (
        "pidfd_send_signal_sentinel",
        "pidfd_send_signal_supervisor",
        "pidfd_getfd_steal_sentinel_fd",
    ),
    "inotify_init1": ("inotify_ungranted_dir",),
    # allow: public facts about other processes (the documented limit "public-process-info")
    "getpgid": ("getpgid_sentinel",),
    "getsid": ("getsid_sentinel",),
    "capget": ("capget_sentinel",),
    "getpriority": ("getpriority_sentinel",),
    "ioprio_get": ("ioprio_get_sentinel",),
    "sched_getaffinity": ("sched_getaffinity_sentinel",),
    "sched_getattr": ("sched_getattr_sentinel",),
    "sched_getparam": ("sched_getparam_sentinel", "sched_setparam_sentinel"),
    "sched_getscheduler": ("sched_getscheduler_sentinel",),
    "sched_rr_get_interval": ("sched_rr_get_interval_sentinel",),
    # allow: the caller's own limits, attributes, filter and Landlock domain, used to try
    # to loosen what cvg-run set up
    "prctl": (
        "prctl_subreaper_keeps_daemon",
        "seccomp_own_allow_filter_then_unshare",
        "landlock_own_ruleset_then_read_secret",
    ),
    "seccomp": ("seccomp_own_allow_filter_then_unshare",),
    "landlock_create_ruleset": ("landlock_own_ruleset_then_read_secret",),
    "landlock_add_rule": ("landlock_own_ruleset_then_read_secret",),
    "landlock_restrict_self": ("landlock_own_ruleset_then_read_secret",),
    "setrlimit": ("setrlimit_raise_open_files",),
}

_IDS = (
    "no route: with CAP_SETUID and CAP_SETGID dropped and no_new_privs set, it can only "
    "permute the real, effective and saved ids the caller already has (all the one user "
    "cvg-run was started as) or give up groups and capabilities; no id or right the "
    "caller lacks is reachable"
)
_MOVES = (
    "no route: it moves bytes between descriptors the caller already holds (vmsplice: and "
    "its own memory); each file was checked by Landlock when opened, as for read and "
    "write, and an inherited one is read_inherited_file_descriptor's case"
)
_AIO = (
    "no route: Linux AIO only reads, writes, syncs and polls descriptors the caller "
    "already holds; it opens and connects nothing (io_uring, which can, is denied)"
)
_LOCK = (
    "no route to another process or file: it pins the caller's own pages, bounded by "
    "RLIMIT_MEMLOCK; locked pages are resident, so memory_mb's sampling counts them as "
    "for memory_one_process"
)


def _sibling(attack: str, via: str) -> str:
    return (
        f"no attack of its own: the same documented limit (metadata is outside Landlock) "
        f"through another entry point, shown by {attack} through {via}"
    )


NO_ROUTE: Mapping[str, str] = {
    **dict.fromkeys(
        (
            "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
            "setfsuid", "setfsgid", "setgroups", "capset",
        ),
        _IDS,
    ),
    **dict.fromkeys(("splice", "vmsplice", "tee"), _MOVES),
    **dict.fromkeys(
        ("io_setup", "io_destroy", "io_getevents", "io_submit", "io_cancel", "io_pgetevents"),
        _AIO,
    ),
    **dict.fromkeys(("mlock", "mlock2", "mlockall"), _LOCK),
    "memfd_secret": (
        "no route to another process or file: the memory is the caller's own, hidden even "
        "from the kernel; whether it counts against memory_mb is not tested"
    ),
    **{n: _sibling("chmod_canary", "chmod") for n in ("fchmod", "fchmodat2")},
    **{n: _sibling("chown_canary_to_self", "chown") for n in ("fchown", "lchown", "fchownat")},
    **{n: _sibling("utime_canary", "utimensat") for n in ("utime", "utimes", "futimesat")},
    **{
        n: _sibling("setxattr_canary", "setxattr")
        for n in (
            "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr",
            "fremovexattr", "removexattrat", "file_setattr",
        )
    },
}  # fmt: skip
"""Allowed calls with no escape attack, and why none can exist or why another call's
attack stands for it (docs/syscall-census.md prints it in the attacks column)."""


def _census() -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for group in GROUPS:
        for name in group.names:
            out[name] = Entry(
                name,
                group.cls,
                NOTES.get(name, group.why),
                group.errno,
                ATTACKS.get(name, ()),
            )
    return out


class _Census(Mapping[str, Entry]):
    # Built on first use: seccomp imports this module on every cold start for the deny
    # list alone, and the few hundred entries would cost it most of a millisecond.
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, Entry] | None = None

    def _built(self) -> dict[str, Entry]:
        if self._entries is None:
            self._entries = _census()
        return self._entries

    def __getitem__(self, name: str) -> Entry:
        return self._built()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


CENSUS: Mapping[str, Entry] = _Census()
"""Every classified call by name: each name of every table, and the deny list's names
that no table has any more."""


_DECIDED: frozenset[str] | None = None


def decided() -> frozenset[str]:
    """Every name with a class other than ``unknown``: what a deny-list filter lets
    reach its lists and argument checks. Anything else (a name added to the table and
    not yet classified, a number in a gap of the table) is answered ENOSYS."""
    global _DECIDED
    if _DECIDED is None:
        _DECIDED = frozenset(n for g in GROUPS if g.cls != "unknown" for n in g.names)
    return _DECIDED


def classify(name: str) -> Entry:
    """The census entry of ``name``; KeyError if the call was never classified."""
    return CENSUS[name]
