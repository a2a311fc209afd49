"""The census of every system call: one class and one reason per name of the table.

The default deny list the seccomp filter is built from lives here, grouped, with what
each group would open; :mod:`cvg_kernel.seccomp` re-exports it.
"""

from __future__ import annotations

# Names allowed to be missing from an architecture's table when listed in ``deny``:
# they only exist on x86 (uselib is gone from current tables altogether), so the same
# deny list serves both architectures. Anything else missing is a typo or a plan for
# the wrong kernel, and is an error.
ARCH_SPECIFIC = frozenset({"iopl", "ioperm", "modify_ldt", "uselib"})

# The default deny list, grouped, with what each group would open if allowed: the one
# source for the filter and for cvg-validate's warnings about syscalls.allow.
DENY_GROUPS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
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
    ),
    (
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
    ),
    (
        ("unshare", "setns"),
        "enters or creates namespaces: user namespaces hand out capabilities and kernel "
        "attack surface",
    ),
    (
        ("io_uring_setup", "io_uring_enter", "io_uring_register"),
        "io_uring: operations no seccomp filter sees, and a history of kernel exploits",
    ),
    (
        ("bpf", "perf_event_open", "userfaultfd"),
        "a large kernel attack surface (userfaultfd turns kernel races into reliable exploits)",
    ),
    (
        ("add_key", "request_key", "keyctl"),
        "the kernel keyrings, shared by every process of the user (stored credentials)",
    ),
    (
        ("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
        "replaces or extends the running kernel",
    ),
    (
        ("personality",),
        "switches off the process's own hardening (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE)",
    ),
    (
        ("name_to_handle_at", "open_by_handle_at"),
        "opens files by inode number, skipping every path check (the 'shocker' escape)",
    ),
    (
        ("execveat",),
        "executes a descriptor (memfd exec): code that no execute rule saw",
    ),
    (
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
    ),
    (
        ("iopl", "ioperm", "modify_ldt", "uselib"),
        "x86 I/O ports, the LDT and a.out libraries: hardware and legacy attack surface",
    ),
    (
        (
            "settimeofday",
            "clock_settime",
            "clock_adjtime",
            "adjtimex",
            "sethostname",
            "setdomainname",
        ),
        "changes the clock or the host's names, which belong to the whole machine",
    ),
    (
        ("mbind", "migrate_pages", "move_pages"),
        "NUMA placement, which can move other processes' pages",
    ),
)
