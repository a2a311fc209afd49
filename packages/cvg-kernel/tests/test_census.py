"""The syscall census against the syscall table, the deny list and the escape attacks."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from cvg_kernel import census, seccomp
from cvg_kernel.census import CENSUS, CLASSES, classify
from cvg_kernel.syscall_table import TABLES
from cvg_testing import in_child

ROOT = Path(__file__).resolve().parents[3]
ATTACKS_DIR = ROOT / "escape" / "attacks"


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Calls that name another process, a kernel object other processes share, or a setting
# of the whole machine: each needs an attack, whatever its class. Read independently of
# the census (the deny, args and notify classes are added to it below).
REACHES_OUT = _names(
    """
    kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal pidfd_open
    pidfd_getfd ptrace process_vm_readv process_vm_writev process_madvise process_mrelease
    kcmp prlimit64 setpriority getpriority sched_setaffinity sched_getaffinity
    sched_setscheduler sched_getscheduler sched_setparam sched_getparam sched_setattr
    sched_getattr sched_rr_get_interval ioprio_set ioprio_get get_robust_list getpgid
    getsid capget migrate_pages move_pages setns fcntl
    shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl
    add_key request_key keyctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify
    mq_getsetattr fanotify_init fanotify_mark perf_event_open bpf
    settimeofday clock_settime clock_adjtime adjtimex sethostname setdomainname reboot
    swapon swapoff acct syslog quotactl quotactl_fd kexec_load kexec_file_load
    init_module finit_module delete_module mount umount2 pivot_root
    """
)

# No escape attack makes these calls yet. The list must match exactly: a new call
# without an attack fails, and so does one that has gained an attack but is still here.
NO_ATTACK_YET = _names("")


@pytest.mark.parametrize("arch", sorted(TABLES))
def test_every_name_of_the_table_is_classified(arch: str) -> None:
    missing = sorted(name for name in TABLES[arch] if name not in CENSUS)
    assert not missing, f"{arch}: no classification in cvg_kernel.census for {missing}"
    for name in TABLES[arch]:
        assert classify(name).name == name


def test_the_census_names_nothing_the_tables_lack_but_the_unimplemented() -> None:
    everywhere = set().union(*map(set, TABLES.values()))
    extra = set(CENSUS) - everywhere
    assert extra == {"uselib"} | set(census.REMOVED_X86_64), extra
    assert "uselib" in seccomp.DEFAULT_DENY and "uselib" in census.UNIMPLEMENTED
    for name in census.REMOVED_X86_64:
        entry = classify(name)
        assert (entry.cls, entry.errno) == ("deny", "ENOSYS"), entry
        assert name in census.UNIMPLEMENTED and "unimplemented" in entry.why


X86_64_HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64's header")
def test_every_name_of_the_x86_64_header_is_classified() -> None:
    """All 362 names of asm/unistd_64.h, the removed and never-implemented ones too,
    with the numbers the header gives (linux-libc-dev installs it)."""
    import re

    assert X86_64_HEADER.exists(), f"{X86_64_HEADER} missing: install linux-libc-dev"
    header = dict(re.findall(r"#define __NR_(\w+)\s+(\d+)", X86_64_HEADER.read_text()))
    assert len(header) >= 362, len(header)
    assert sorted(set(header) - set(CENSUS)) == []
    for name, nr in census.REMOVED_X86_64.items():
        assert int(header[name]) == nr, name
        assert name not in TABLES["x86_64"] and nr not in TABLES["x86_64"].values()


def test_classify_refuses_a_name_never_classified() -> None:
    with pytest.raises(KeyError):
        classify("no_such_call")


def test_nothing_is_unknown_and_every_class_is_valid() -> None:
    assert [e.name for e in CENSUS.values() if e.cls == "unknown"] == []
    for e in CENSUS.values():
        assert e.cls in CLASSES, e
        assert e.why.strip() and "\n" not in e.why, e
        if e.cls == "allow":
            assert e.errno is None, e
        else:
            assert e.errno is not None and seccomp.errno_value(e.errno) > 0, e


def test_each_name_is_in_exactly_one_group() -> None:
    seen: dict[str, str] = {}
    for group in census.GROUPS:
        assert group.cls in CLASSES, group
        for name in group.names:
            assert name not in seen, f"{name} is in two groups: {seen[name]!r}, {group.why!r}"
            seen[name] = group.why
    assert set(seen) == set(CENSUS)
    assert set(census.NOTES) <= set(CENSUS) and set(census.ATTACKS) <= set(CENSUS)


def test_every_args_entry_says_which_argument() -> None:
    # The args group's shared reason says nothing about any one call: each needs a note.
    args = [e for e in CENSUS.values() if e.cls == "args"]
    assert {e.name for e in args} == _names(
        """socket socketpair clone ioctl memfd_create sendto sendmsg sendmmsg prlimit64
        setpriority sched_setaffinity sched_setscheduler sched_setparam sched_setattr
        ioprio_set get_robust_list listen fcntl"""
    )
    assert all(e.name in census.NOTES for e in args)


def test_the_deny_class_is_the_default_deny_list_plus_clone3() -> None:
    deny = {e.name for e in CENSUS.values() if e.cls == "deny"}
    assert deny == set(seccomp.DEFAULT_DENY) | {"clone3"} | set(census.REMOVED_X86_64)
    assert len(set(seccomp.DEFAULT_DENY)) == len(seccomp.DEFAULT_DENY)
    assert classify("clone3").errno == "ENOSYS" and "clone3" in seccomp.DEFAULT_ENOSYS
    for name in seccomp.DEFAULT_DENY:
        entry = classify(name)
        assert entry.errno == "EPERM", entry
        assert entry.why == seccomp.DENY_REASONS[name]


def test_the_decided_deny_groups_are_in_the_default_deny_list() -> None:
    decided = _names(
        """shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv
        msgctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
        inotify_add_watch fanotify_mark process_mrelease quotactl_fd
        set_thread_area get_thread_area epoll_ctl_old epoll_wait_old"""
    )
    assert decided <= set(seccomp.DEFAULT_DENY)
    for name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "pidfd_send_signal"):
        assert classify(name).cls == "notify"
    for name in ("getpgid", "getsid", "sched_getaffinity", "capget", "pidfd_open"):
        assert classify(name).cls == "allow"


def test_names_an_arch_lacks_are_exactly_the_arch_specific_ones() -> None:
    lacking = {n for n in seccomp.DEFAULT_DENY if any(n not in t for t in TABLES.values())}
    assert lacking == set(census.ARCH_SPECIFIC)
    for arch in TABLES:
        seccomp.compile_spec(arch)  # the default deny list compiles on every arch


def _call_each(numbers: dict[str, int]) -> dict[str, int]:
    """Each call made with zero arguments: its errno, or 0 when it succeeded."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out = {}
    for name, nr in numbers.items():
        ctypes.set_errno(0)
        rc = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(0) for _ in range(6)))
        out[name] = ctypes.get_errno() if rc == -1 else 0
    return out


def test_what_the_kernel_does_not_implement_answers_enosys() -> None:
    """The denied "not implemented" calls really are: called bare (no filter) in a
    forked child on this machine, each gets ENOSYS."""
    arch = {"x86_64": "x86_64", "aarch64": "aarch64"}[platform.machine()]
    numbers = {n: TABLES[arch][n] for n in census.UNIMPLEMENTED if n in TABLES[arch]}
    assert numbers, f"no unimplemented call of {arch} to try"

    child = in_child(lambda: _call_each(numbers))
    assert child.error is None, child.error
    assert child.value == dict.fromkeys(numbers, errno.ENOSYS)


# An errno no call of the deny list returns by itself: under a filter that answers
# with it, a call that reached the kernel (and was refused there, say for a missing
# capability) cannot pass for one the filter refused.
DISTINCT = "ENOTRECOVERABLE"
PR_SET_NO_NEW_PRIVS = 38


def _confined_calls(numbers: dict[str, int], filt: seccomp.Filter) -> dict[str, int]:
    """In the calling (forked) process: give up every capability, install ``filt``,
    then _call_each."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    capset = TABLES[platform.machine()]["capset"]
    assert libc.syscall(ctypes.c_long(capset), ctypes.byref(hdr), ctypes.byref(data)) == 0
    assert libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    filt.install()
    return _call_each(numbers)


def test_every_default_deny_number_is_refused_by_the_filter_live(
    identity: pwd.struct_passwd | None,
) -> None:
    """Every number of DEFAULT_DENY on this machine, called under the default filter
    with a distinctive deny errno, by a process with no capabilities: each answer is
    the filter's errno, so none of them is the kernel's own refusal."""
    arch = platform.machine()
    numbers = {n: TABLES[arch][n] for n in seccomp.DEFAULT_DENY if n in TABLES[arch]}
    assert len(numbers) > 80, len(numbers)
    filt = seccomp.Filter.build(deny_errno=DISTINCT)
    child = in_child(lambda: _confined_calls(numbers, filt), user=identity)
    assert child.error is None, child.error
    wrong = {n: e for n, e in child.value.items() if e != seccomp.errno_value(DISTINCT)}
    assert wrong == {}, f"not refused by the filter (errno per call): {wrong}"


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the removed numbers are x86_64's")
def test_the_removed_numbers_answer_enosys_bare_and_under_the_filter(
    identity: pwd.struct_passwd | None,
) -> None:
    numbers = dict(census.REMOVED_X86_64)
    filt = seccomp.Filter.build(deny_errno=DISTINCT)
    for fn in (lambda: _call_each(numbers), lambda: _confined_calls(numbers, filt)):
        child = in_child(fn, user=identity)
        assert child.error is None, child.error
        assert child.value == dict.fromkeys(numbers, errno.ENOSYS)


def _escape_registry() -> set[str]:
    # The way escape/staging.py's load_attacks() reads the @attack registry, in a separate
    # interpreter: the attack modules are imported under bare names (sched, exec, ...)
    # that must not shadow anything in this one.
    code = (
        "import importlib.util, json, sys\n"
        "from pathlib import Path\n"
        "d = Path(sys.argv[1])\n"
        "sys.path.insert(0, str(d))\n"
        "import _lib\n"
        "for path in sorted(d.glob('*.py')):\n"
        "    if path.name.startswith('_'):\n"
        "        continue\n"
        "    spec = importlib.util.spec_from_file_location(path.stem, path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    sys.modules[path.stem] = module\n"
        "    spec.loader.exec_module(module)\n"
        "print(json.dumps(sorted(_lib.REGISTRY)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ATTACKS_DIR)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    names = set(json.loads(done.stdout))
    assert len(names) > 100, names  # the registry really was read
    return names


# Allowed calls that act on the caller's own credentials, limits, filter, Landlock
# domain, descriptors or memory, or on file metadata: each needs an attack, or a
# written reason why no route exists (census.NO_ROUTE).
SECURITY_RELEVANT_ALLOWED = _names(
    """
    setrlimit prctl seccomp landlock_create_ruleset landlock_add_rule landlock_restrict_self
    setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid setgroups capset
    splice vmsplice tee io_setup io_destroy io_getevents io_submit io_cancel io_pgetevents
    mlock mlock2 mlockall memfd_secret
    chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat utime utimes futimesat
    utimensat setxattr lsetxattr fsetxattr setxattrat removexattr lremovexattr fremovexattr
    removexattrat file_setattr
    """
)


def test_security_relevant_allowed_calls_have_an_attack_or_a_reason() -> None:
    for name in SECURITY_RELEVANT_ALLOWED:
        entry = classify(name)
        assert entry.cls == "allow", entry
        assert bool(entry.attack) != (name in census.NO_ROUTE), (
            f"{name}: needs exactly one of an attack or a no-route reason"
        )
    assert set(census.NO_ROUTE) <= SECURITY_RELEVANT_ALLOWED
    assert all(len(why.split()) > 8 for why in census.NO_ROUTE.values())


def test_every_attack_named_exists_in_the_escape_registry() -> None:
    registry = _escape_registry()
    unknown = sorted(
        f"{e.name}: {a}" for e in CENSUS.values() for a in e.attack if a not in registry
    )
    assert not unknown, "attacks missing from escape/attacks: " + ", ".join(unknown)


def test_every_call_that_reaches_out_has_an_attack() -> None:
    assert set(CENSUS) >= REACHES_OUT
    needs = {e.name for e in CENSUS.values() if e.cls in ("args", "notify", "deny")}
    needs = (needs | REACHES_OUT) - census.UNIMPLEMENTED
    uncovered = {name for name in needs if not classify(name).attack}
    assert uncovered - NO_ATTACK_YET == set(), "calls without an escape attack"
    assert NO_ATTACK_YET - uncovered == set(), "attacks exist now: take these off the list"
