"""The live probes: every feature proven by using it in a throwaway child.

Reading a version number proves nothing, so each feature is exercised in a
forked child and watched to bite: a Landlock right must turn an operation
that works into EACCES (EXDEV for refer), a seccomp rule must return its errno
or kill, an rlimit must fail the call that crosses it. Wherever it matters, a
control shows the same operation succeeding without the restriction, so the
denial is known to come from the feature and not from something else.

Children are grouped so that one fork does every check that can share a
process, and all groups run at once (see :mod:`cvg_probe._fork`). Everything a
child uses is imported and allocated here, before any fork.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import mmap
import os
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cvg_kernel import caps as kcaps
from cvg_kernel import landlock, seccomp
from cvg_kernel.process import (
    PR_GET_CHILD_SUBREAPER,
    PR_GET_NO_NEW_PRIVS,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_NO_NEW_PRIVS,
    parent_of,
    pidfd_open,
    pidfd_send_signal,
)
from cvg_schema import Facts, Feature, StraceInfo

from . import _fork
from ._fork import Outcome, Send

__all__ = [
    "DEFAULT_TIMEOUT",
    "FEATURES",
    "ProbeError",
    "run_probes",
]

DEFAULT_TIMEOUT = 5.0
"""Seconds a probe child may take before it is killed and reported as timed out."""


class ProbeError(RuntimeError):
    """The probe itself could not run (not: the kernel lacks a feature)."""


# ----------------------------------------------------------------------- plumbing

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]

PR_SET_DUMPABLE = 4
CLOSE_RANGE_CLOEXEC = 1 << 2
FIONREAD = 0x541B  # the same on x86_64 and aarch64 (asm-generic)
AF_NETLINK = 16
NETLINK_ROUTE = 0
HIGH_WORD = 1 << 32  # junk in the upper half of an int argument; the kernel ignores it
I386_GETPID = 20
NPROC_PROBE_UID = 65534  # root is exempt from RLIMIT_NPROC; the probe child becomes nobody


def _sys(nr: int, *args: int) -> int:
    """A raw syscall with full 64-bit arguments; OSError on failure."""
    ret = int(_libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args)))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def _prctl(option: int, arg2: int = 0) -> int:
    ret = int(_libc.prctl(option, arg2, 0, 0, 0))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def _get_subreaper() -> int:
    flag = ctypes.c_int(-1)
    if _libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag), 0, 0, 0) < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return flag.value


def _outcome_of(fn: Callable[[], object]) -> str:
    """``"OK"``, the errno name of the OSError ``fn`` raised, or the exception."""
    try:
        fn()
    except OSError as e:
        if e.errno is None:
            return f"{type(e).__name__}: {e}"
        return errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return "OK"


def _touch(path: str, data: bytes = b"cvg-probe\n", mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


def _one_line(text: str, limit: int = 2000) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _feature(name: str, how: str, *, error: str | None = None, abi: int | None = None) -> Feature:
    return Feature(
        name=name,
        proven=error is None,
        how=_one_line(how),
        error=None if error is None else _one_line(error),
        abi=abi,
    )


@dataclass(frozen=True)
class Spec:
    """A feature a group reports: its name, the ABI that introduced it, the test."""

    name: str
    how: str
    abi: int | None = None

    def proven(self, how: str | None = None) -> Feature:
        return _feature(self.name, how or self.how, abi=self.abi)

    def failed(self, error: str, how: str | None = None) -> Feature:
        return _feature(self.name, how or self.how, error=error or "unknown failure", abi=self.abi)


def _check(spec: Spec, got: Mapping[str, Any], expect: Mapping[str, str | set[str]]) -> Feature:
    """Proven when every named result is what was expected; else say which was not."""
    for key, want in expect.items():
        have = got.get(key, "no result")
        ok = have in want if isinstance(want, set) else have == want
        if not ok:
            shown = " or ".join(sorted(want)) if isinstance(want, set) else want
            return spec.failed(f"{key}: got {have}, expected {shown}")
    return spec.proven()


class Group:
    """The features one child proves. ``body`` runs in the child."""

    name = "group"
    specs: Sequence[Spec] = ()

    def body(self, send: Send) -> Mapping[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def interpret(self, outcome: Outcome) -> list[Feature]:  # pragma: no cover - overridden
        raise NotImplementedError

    def results(self, outcome: Outcome) -> list[Feature]:
        failure = outcome.failure()
        if failure is not None:
            return [s.failed(failure) for s in self.specs]
        return self.interpret(outcome)

    def close(self) -> None:
        """Release what the parent holds for this group (sockets, rulesets)."""


# ------------------------------------------------------------------------- Landlock


@dataclass(frozen=True)
class LandlockState:
    kernel: int  # what the kernel reports (0: none)
    effective: int  # after CVG_LANDLOCK_ABI_MAX
    cap: int | None
    error: str | None = None  # why the kernel could not be asked

    def lacks(self, abi: int) -> str | None:
        """Why a feature of ``abi`` cannot be tested here, or None when it can."""
        if self.error is not None:
            return self.error
        if self.effective >= abi:
            return None
        capped = self.cap is not None and self.cap < self.kernel
        offer = str(self.effective) if self.kernel or capped else "no Landlock (ABI 0)"
        note = f" (capped by {landlock.ABI_ENV}={self.cap})" if capped else ""
        return f"needs Landlock ABI {abi}; this kernel offers {offer}{note}"


def landlock_state() -> LandlockState:
    """The kernel's ABI, the cap from ``CVG_LANDLOCK_ABI_MAX`` and the ABI to test.

    An invalid cap is a ProbeError: the caller asked for something meaningless.
    """
    try:
        effective, _ = landlock.effective_abi()
    except landlock.LandlockError as e:
        raw = os.environ.get(landlock.ABI_ENV, "")
        if raw and not re.fullmatch(r"[0-9]{1,4}", raw):
            raise ProbeError(str(e)) from None
        return LandlockState(0, 0, _cap(), error=str(e))
    return LandlockState(landlock.kernel_abi(), effective, _cap())


def _cap() -> int | None:
    raw = os.environ.get(landlock.ABI_ENV, "")
    return int(raw) if re.fullmatch(r"[0-9]{1,4}", raw) else None


def _restrict(ruleset: landlock.Ruleset) -> str:
    try:
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        ruleset.restrict_self()
    except (OSError, landlock.LandlockError) as e:
        return f"{type(e).__name__}: {e}"
    return "OK"


@dataclass(frozen=True)
class FsCheck:
    """One filesystem right: the operation it gates and how it answers."""

    right: str
    what: str  # the operation, for `how`
    op: Callable[[str], object]  # runs in the child on a target path
    setup: Callable[[str], object] | None = None  # runs in the parent on a grant directory
    ok: frozenset[str] = frozenset({"OK"})  # acceptable results where everything is granted
    denied: str = "EACCES"

    def control_ok(self, result: str) -> bool:
        """Whether the result where everything is granted shows Landlock let it pass."""
        if self.ok is _ANYTHING_BUT_DENIAL:
            return result != self.denied
        return result in self.ok


def _exec(d: str) -> None:
    os.execv(f"{d}/x", [f"{d}/x"])  # a text file without #!: ENOEXEC once past Landlock


def _open_close(path: str, flags: int, mode: int = 0o600) -> None:
    os.close(os.open(path, flags | os.O_CLOEXEC, mode))


def _bind_unix(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(path)


def _connect_unix(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)


def _ioctl(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, FIONREAD, b"\0\0\0\0")
    finally:
        os.close(fd)


def _setup_refer(d: str) -> None:
    os.mkdir(f"{d}/a")
    os.mkdir(f"{d}/b")
    _touch(f"{d}/a/m")


_EXEC_BODY = b"cvg-probe: text without #!, so exec stops at ENOEXEC once it is allowed\n"
_ANYTHING_BUT_DENIAL = frozenset({"OK", "ENOTTY", "EINVAL", "ENOTSUP", "EOPNOTSUPP"})

FS_CHECKS: tuple[FsCheck, ...] = (
    FsCheck("execute", "execve() of a file", _exec,
            lambda d: _touch(f"{d}/x", _EXEC_BODY, 0o755), ok=frozenset({"ENOEXEC"})),
    FsCheck("write_file", "open(O_WRONLY) of a file",
            lambda d: _open_close(f"{d}/w", os.O_WRONLY), lambda d: _touch(f"{d}/w")),
    FsCheck("read_file", "open(O_RDONLY) of a file",
            lambda d: _open_close(f"{d}/r", os.O_RDONLY), lambda d: _touch(f"{d}/r")),
    FsCheck("read_dir", "open(O_DIRECTORY) of a directory",
            lambda d: _open_close(d, os.O_RDONLY | os.O_DIRECTORY)),
    FsCheck("remove_dir", "rmdir()", lambda d: os.rmdir(f"{d}/rd"),
            lambda d: os.mkdir(f"{d}/rd")),
    FsCheck("remove_file", "unlink()", lambda d: os.unlink(f"{d}/rf"),
            lambda d: _touch(f"{d}/rf")),
    # A real device number (1:3, /dev/null's), not 0:0: a character device 0:0 is
    # an overlayfs whiteout, which some kernels (Debian 13's 6.12.117) let through
    # without make_char (landlock-lsm/linux#63), so its denial proves nothing about
    # devices. Without CAP_MKNOD the capability check, which runs after Landlock's,
    # gives EPERM: a denial is still EACCES.
    FsCheck("make_char", "mknod(S_IFCHR, 1:3)",
            lambda d: os.mknod(f"{d}/c", stat.S_IFCHR | 0o600, os.makedev(1, 3)),
            ok=frozenset({"OK", "EPERM"})),
    FsCheck("make_dir", "mkdir()", lambda d: os.mkdir(f"{d}/md")),
    FsCheck("make_reg", "open(O_CREAT|O_EXCL)",
            lambda d: _open_close(f"{d}/mr", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
    FsCheck("make_sock", "bind() of a pathname AF_UNIX socket", lambda d: _bind_unix(f"{d}/s")),
    FsCheck("make_fifo", "mkfifo()", lambda d: os.mkfifo(f"{d}/f", 0o600)),
    # 7:0 (/dev/loop0's) rather than 0:0, for the same reason as make_char.
    FsCheck("make_block", "mknod(S_IFBLK, 7:0)",
            lambda d: os.mknod(f"{d}/blk", stat.S_IFBLK | 0o600, os.makedev(7, 0)),
            ok=frozenset({"OK", "EPERM"})),
    FsCheck("make_sym", "symlink()", lambda d: os.symlink("r", f"{d}/l")),
    FsCheck("refer", "rename() into another directory",
            lambda d: os.rename(f"{d}/a/m", f"{d}/b/m"), _setup_refer, denied="EXDEV"),
    FsCheck("truncate", "truncate() of a file",
            lambda d: os.truncate(f"{d}/t", 0), lambda d: _touch(f"{d}/t")),
    FsCheck("ioctl_dev", "ioctl(FIONREAD) on a device opened after restriction",
            _ioctl, ok=_ANYTHING_BUT_DENIAL),
    FsCheck("resolve_unix", "connect() to a pathname AF_UNIX socket",
            lambda d: _connect_unix(f"{d}/u")),
)  # fmt: skip
assert [c.right for c in FS_CHECKS] == list(landlock.FS_RIGHTS)

# ioctl_dev is about device files: a rule per device, not per directory.
_DEV_GRANTED, _DEV_WITHHELD = "/dev/null", "/dev/zero"


def _fs_how(c: FsCheck) -> str:
    if c.right == "ioctl_dev":
        return (
            f"{c.what}: {c.denied} on {_DEV_WITHHELD} (granted every file right but "
            f"ioctl_dev), not on {_DEV_GRANTED} (granted all)"
        )
    ok = " or ".join(sorted(c.ok))
    return (
        f"{c.what}: {c.denied} in a directory granted every handled right but {c.right}, "
        f"{ok} in one granted all"
    )


LANDLOCK_ABI = Spec(
    "landlock.abi",
    "a ruleset handling every filesystem and network right and scope of the ABI in use "
    "was created and enforced in a child",
)
FS_SPECS = {
    c.right: Spec(f"landlock.fs.{c.right}", _fs_how(c), landlock.FS_RIGHTS[c.right].abi)
    for c in FS_CHECKS
}


class LandlockFsGroup(Group):
    """One child, one ruleset handling everything: each right against its own directory."""

    name = "landlock.fs"

    def __init__(self, state: LandlockState, base: str) -> None:
        self.state = state
        self.checks = [c for c in FS_CHECKS if state.lacks(landlock.FS_RIGHTS[c.right].abi) is None]
        self.specs = [LANDLOCK_ABI, *(FS_SPECS[c.right] for c in self.checks)]
        self.root = os.path.join(base, "fs")
        self.keep: list[socket.socket] = []
        self.ruleset: landlock.Ruleset | None = None
        self.targets: dict[str, tuple[str, str]] = {}
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def _setup(self) -> None:
        os.mkdir(self.root)
        self.granted = self._dir("ok")
        every = list(landlock.FS_RIGHTS)
        rules: list[tuple[str, list[str]]] = [(self.granted, every)]
        for c in self.checks:
            if c.right == "ioctl_dev":
                rules.append((_DEV_GRANTED, every))
                rules.append((_DEV_WITHHELD, [r for r in every if r != "ioctl_dev"]))
                self.targets[c.right] = (_DEV_GRANTED, _DEV_WITHHELD)
                continue
            withheld = self._dir(f"no-{c.right}")
            for d in (self.granted, withheld):
                if c.setup is not None:
                    c.setup(d)
                if c.right == "resolve_unix":
                    self.keep.append(_unix_listener(f"{d}/u"))
            rules.append((withheld, [r for r in every if r != c.right]))
            self.targets[c.right] = (self.granted, withheld)
        self.ruleset = landlock.Ruleset.build(fs_rules=rules, abi=self.state.effective)

    def _dir(self, name: str) -> str:
        path = os.path.join(self.root, name)
        os.mkdir(path)
        return path

    def body(self, send: Send) -> Mapping[str, Any]:
        assert self.ruleset is not None
        restricted = _restrict(self.ruleset)
        if restricted != "OK":
            return {"restrict": restricted}
        out: dict[str, list[str]] = {}
        for c in self.checks:
            granted, withheld = self.targets[c.right]
            out[c.right] = [
                _outcome_of(lambda c=c, t=granted: c.op(t)),  # type: ignore[misc]
                _outcome_of(lambda c=c, t=withheld: c.op(t)),  # type: ignore[misc]
            ]
        return {"restrict": "OK", "checks": out}

    def interpret(self, outcome: Outcome) -> list[Feature]:
        report = outcome.report
        restricted = report.get("restrict")
        if restricted != "OK":
            return [s.failed(f"landlock_restrict_self: {restricted}") for s in self.specs]
        assert self.ruleset is not None
        rs = self.ruleset
        parts = [f"{len(landlock.mask_names(landlock.FS_RIGHTS, rs.handled_fs))} fs rights"]
        if rs.handled_net:
            parts.append(f"{len(landlock.mask_names(landlock.NET_RIGHTS, rs.handled_net))} net")
        if rs.scoped:
            parts.append(f"{len(landlock.mask_names(landlock.SCOPES, rs.scoped))} scopes")
        features = [
            LANDLOCK_ABI.proven(
                f"landlock_create_ruleset(VERSION) reports ABI {self.state.kernel}; a ruleset "
                f"handling every right of ABI {self.state.effective} ({', '.join(parts)}) "
                f"was created and enforced in a child"
            )
        ]
        checks = report.get("checks", {})
        for c in self.checks:
            spec = FS_SPECS[c.right]
            granted, withheld = checks.get(c.right, ["no result", "no result"])
            if not c.control_ok(granted):
                hint = ""
                if c.right == "execute" and granted == "EACCES":
                    hint = " (is the probe directory on a noexec mount?)"
                features.append(
                    spec.failed(
                        f"control failed: {c.what} where {c.right} is granted gave {granted}"
                        f"{hint}, so a denial would prove nothing"
                    )
                )
            elif withheld != c.denied:
                features.append(
                    spec.failed(f"{c.what} without {c.right} gave {withheld}, not {c.denied}")
                )
            else:
                features.append(spec.proven())
        return features

    def close(self) -> None:
        for s in self.keep:
            s.close()
        if self.ruleset is not None:
            self.ruleset.close()


def _unix_listener(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
        s.listen(8)
    except BaseException:
        s.close()
        raise
    return s


LOOPBACK = "127.0.0.1"
NET_CONNECT = Spec(
    "landlock.net.connect_tcp",
    "connect() to a loopback listener: OK on the granted port, EACCES on another port that "
    "accepted the same connect before restriction",
    4,
)
NET_BIND = Spec(
    "landlock.net.bind_tcp",
    "bind() on loopback: OK on the granted port, EACCES on another port that bound fine "
    "before restriction",
    4,
)


def _tcp(addr: tuple[str, int], *, bind: bool) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if bind:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
        else:
            s.connect(addr)


class LandlockNetGroup(Group):
    name = "landlock.net"
    specs = (NET_CONNECT, NET_BIND)

    def __init__(self, state: LandlockState) -> None:
        self.socks: list[socket.socket] = []
        self.ruleset: landlock.Ruleset | None = None
        try:
            self.listen_ok = self._listener()
            self.listen_no = self._listener()
            # Reserved (SO_REUSEADDR, not listening) so the child can bind them, and
            # nobody else can take them meanwhile.
            self.bind_ok = self._reserved()
            self.bind_no = self._reserved()
            self.ruleset = landlock.Ruleset.build(
                handled_fs=[],
                handled_net="all",
                scoped=[],
                net_rules=[(self.listen_ok, ["connect_tcp"]), (self.bind_ok, ["bind_tcp"])],
                abi=state.effective,
            )
        except BaseException:
            self.close()
            raise

    def _listener(self) -> int:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socks.append(s)
        s.bind((LOOPBACK, 0))
        s.listen(16)
        return int(s.getsockname()[1])

    def _reserved(self) -> int:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socks.append(s)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])

    def body(self, send: Send) -> Mapping[str, Any]:
        assert self.ruleset is not None
        out = {
            "connect other port, before": _outcome_of(
                lambda: _tcp((LOOPBACK, self.listen_no), bind=False)
            ),
            "bind other port, before": _outcome_of(
                lambda: _tcp((LOOPBACK, self.bind_no), bind=True)
            ),
            "restrict": _restrict(self.ruleset),
        }
        if out["restrict"] == "OK":
            out["connect granted port"] = _outcome_of(
                lambda: _tcp((LOOPBACK, self.listen_ok), bind=False)
            )
            out["connect other port"] = _outcome_of(
                lambda: _tcp((LOOPBACK, self.listen_no), bind=False)
            )
            out["bind granted port"] = _outcome_of(
                lambda: _tcp((LOOPBACK, self.bind_ok), bind=True)
            )
            out["bind other port"] = _outcome_of(lambda: _tcp((LOOPBACK, self.bind_no), bind=True))
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        return [
            _check(NET_CONNECT, got, {
                "restrict": "OK", "connect other port, before": "OK",
                "connect granted port": "OK", "connect other port": "EACCES",
            }),
            _check(NET_BIND, got, {
                "restrict": "OK", "bind other port, before": "OK",
                "bind granted port": "OK", "bind other port": "EACCES",
            }),
        ]  # fmt: skip

    def close(self) -> None:
        for s in self.socks:
            s.close()
        if self.ruleset is not None:
            self.ruleset.close()


SCOPE_SIGNAL = Spec(
    "landlock.scope.signal",
    "kill(prober, 0): OK before restriction, EPERM after; kill(self, 0) still OK",
    6,
)
SCOPE_ABSTRACT = Spec(
    "landlock.scope.abstract_unix_socket",
    "connect() to the prober's abstract AF_UNIX socket: OK before restriction, EPERM after; "
    "a socket made inside the domain still connects",
    6,
)


def _abstract_name(tag: str) -> str:
    return f"\0cvg-probe-{os.getpid()}-{tag}-{os.urandom(6).hex()}"


def _abstract_roundtrip(name: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(name)
        listener.listen(1)
        _connect_unix(name)


class LandlockScopeGroup(Group):
    name = "landlock.scope"
    specs = (SCOPE_SIGNAL, SCOPE_ABSTRACT)

    def __init__(self, state: LandlockState) -> None:
        self.prober = os.getpid()
        self.ruleset: landlock.Ruleset | None = None
        self.address = _abstract_name("outside")
        self.inside = _abstract_name("inside")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.listener.bind(self.address)
            self.listener.listen(8)
            self.ruleset = landlock.Ruleset.build(
                handled_fs=[], handled_net=[], scoped="all", abi=state.effective
            )
        except BaseException:
            self.close()
            raise

    def body(self, send: Send) -> Mapping[str, Any]:
        assert self.ruleset is not None
        out = {
            "kill prober, before": _outcome_of(lambda: os.kill(self.prober, 0)),
            "connect outside, before": _outcome_of(lambda: _connect_unix(self.address)),
            "restrict": _restrict(self.ruleset),
        }
        if out["restrict"] == "OK":
            out["kill prober"] = _outcome_of(lambda: os.kill(self.prober, 0))
            out["kill self"] = _outcome_of(lambda: os.kill(os.getpid(), 0))
            out["connect outside"] = _outcome_of(lambda: _connect_unix(self.address))
            out["connect inside"] = _outcome_of(lambda: _abstract_roundtrip(self.inside))
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        return [
            _check(SCOPE_SIGNAL, got, {
                "restrict": "OK", "kill prober, before": "OK", "kill prober": "EPERM",
                "kill self": "OK",
            }),
            _check(SCOPE_ABSTRACT, got, {
                "restrict": "OK", "connect outside, before": "OK", "connect outside": "EPERM",
                "connect inside": "OK",
            }),
        ]  # fmt: skip

    def close(self) -> None:
        self.listener.close()
        if self.ruleset is not None:
            self.ruleset.close()


# Each flag is tried on its own layer, which handles one right nobody else handles, so
# the layer can be seen to bite after restrict_self accepted the flag.
_FLAG_RIGHT = {
    "log_same_exec_off": ("make_fifo", lambda p: os.mkfifo(p, 0o600)),
    "log_new_exec_on": ("make_sym", lambda p: os.symlink("r", p)),
    "log_subdomains_off": ("make_dir", lambda p: os.mkdir(p)),
    "tsync": ("make_reg", lambda p: _open_close(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
}
FLAG_SPECS = {
    name: Spec(
        f"landlock.flag.{name}",
        f"landlock_restrict_self() with {name} accepted in a child, and that layer "
        f"(handling {_FLAG_RIGHT[name][0]}) then denied it"
        + (" in a thread started before, from the other thread" if name == "tsync" else ""),
        landlock.FLAGS[name].abi,
    )
    for name in landlock.FLAGS
}


def try_layer(
    ruleset: landlock.Ruleset,
    op: Callable[[str], object],
    prefix: str,
    *,
    other_thread: bool = False,
) -> dict[str, str]:
    """Enforce one layer whose ruleset handles exactly what ``op`` needs, and watch
    ``op`` (on fresh paths starting with ``prefix``) work before and fail after.

    With ``other_thread``, a thread started before the restriction also tries
    ``op`` afterwards: without tsync it is outside the new layer (OK), with it
    it must be denied too. Call it in a child that has set no_new_privs.
    """
    got = {"before": _outcome_of(lambda: op(f"{prefix}.0"))}
    thread_result: list[str] = []
    go = threading.Event()

    def other() -> None:
        go.wait(2)
        thread_result.append(_outcome_of(lambda: op(f"{prefix}.t")))

    thread = threading.Thread(target=other, daemon=True) if other_thread else None
    if thread is not None:
        thread.start()
    try:
        ruleset.restrict_self()
        got["restrict"] = "OK"
    except landlock.LandlockError as e:
        got["restrict"] = str(e)
    go.set()
    if got["restrict"] == "OK":
        got["after"] = _outcome_of(lambda: op(f"{prefix}.1"))
    if thread is not None:
        thread.join(3)
        got["other thread"] = thread_result[0] if thread_result else "no result"
    return got


class LandlockFlagGroup(Group):
    name = "landlock.flag"

    def __init__(self, state: LandlockState, base: str) -> None:
        self.flags = [f for f in landlock.FLAGS if state.lacks(landlock.FLAGS[f].abi) is None]
        self.specs = [FLAG_SPECS[f] for f in self.flags]
        self.dir = os.path.join(base, "flags")
        os.mkdir(self.dir)
        self.rulesets: dict[str, landlock.Ruleset] = {}
        try:
            for f in self.flags:
                self.rulesets[f] = landlock.Ruleset.build(
                    handled_fs=[_FLAG_RIGHT[f][0]],
                    handled_net=[],
                    scoped=[],
                    flags=[f],
                    abi=state.effective,
                )
        except BaseException:
            self.close()
            raise

    def body(self, send: Send) -> Mapping[str, Any]:
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        return {
            f: try_layer(
                self.rulesets[f], _FLAG_RIGHT[f][1], f"{self.dir}/{f}", other_thread=f == "tsync"
            )
            for f in self.flags
        }

    def interpret(self, outcome: Outcome) -> list[Feature]:
        features = []
        for f in self.flags:
            got = outcome.report.get(f, {})
            expect = {"before": "OK", "restrict": "OK", "after": "EACCES"}
            if f == "tsync":
                expect["other thread"] = "EACCES"
            features.append(_check(FLAG_SPECS[f], got, expect))
        return features

    def close(self) -> None:
        for rs in self.rulesets.values():
            rs.close()


# -------------------------------------------------------------------------- seccomp

SECCOMP_FILTER = Spec(
    "seccomp.filter",
    "cvg's default filter installed in a child after no_new_privs; getpid() still answered",
)
SECCOMP_ERRNO = Spec(
    "seccomp.errno",
    "unshare(0): OK before the default filter, EPERM (deny list) after",
)
SECCOMP_SOCKETS = Spec(
    "seccomp.socket_family",
    "socket(AF_NETLINK): OK before the default filter, EAFNOSUPPORT after, also with junk "
    "in the high word; socket(AF_UNIX) still OK",
)
SECCOMP_ARCH = Spec(
    "seccomp.arch_trap",
    "int 0x80 (i386 getpid) from a 64-bit child under the default filter: killed by SIGSYS",
)


def _int80_stub() -> tuple[Callable[[], int], mmap.mmap]:
    """A function that makes the i386 getpid syscall through int 0x80 (x86_64 only)."""
    code = bytes([
        0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57,  # push rbx, rbp, r12-r15
        0xB8, *I386_GETPID.to_bytes(4, "little"),  # mov eax, __NR_getpid (i386)
        0xCD, 0x80,  # int 0x80
        0x41, 0x5F, 0x41, 0x5E, 0x41, 0x5D, 0x41, 0x5C, 0x5D, 0x5B,  # pop r15-r12, rbp, rbx
        0xC3,  # ret
    ])  # fmt: skip
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return ctypes.CFUNCTYPE(ctypes.c_int)(address), page


class SeccompGroup(Group):
    name = "seccomp"
    specs = (SECCOMP_FILTER, SECCOMP_ERRNO, SECCOMP_SOCKETS, SECCOMP_ARCH)

    def __init__(self, arch: str, nr: Mapping[str, int]) -> None:
        self.arch = arch
        self.nr = nr
        self.filter = seccomp.Filter.build(arch)
        self.stub: Callable[[], int] | None = None
        self.page: mmap.mmap | None = None
        self.stub_error: str | None = None
        if arch == "x86_64":
            try:
                self.stub, self.page = _int80_stub()
            except (OSError, ValueError) as e:  # W^X policies refuse an executable mapping
                self.stub_error = f"cannot map the int 0x80 stub: {e}"
        else:
            self.stub_error = (
                f"not testable on {arch}: a 64-bit process cannot enter the compat (AArch32) "
                "syscall path, so there is no foreign-architecture call to make"
            )

    def _netlink(self, family: int) -> None:
        os.close(_sys(self.nr["socket"], family, socket.SOCK_RAW, NETLINK_ROUTE))

    def body(self, send: Send) -> Mapping[str, Any]:
        # The trap at the end kills this child with SIGSYS: no core file, please.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _prctl(PR_SET_DUMPABLE, 0)
        out: dict[str, Any] = {
            "unshare(0), before": _outcome_of(lambda: _sys(self.nr["unshare"], 0)),
            "netlink socket, before": _outcome_of(lambda: self._netlink(AF_NETLINK)),
        }
        try:
            _prctl(PR_SET_NO_NEW_PRIVS, 1)
            self.filter.install()
            out["install"] = "OK"
        except (OSError, seccomp.SeccompError) as e:
            out["install"] = f"{type(e).__name__}: {e}"
            return out
        out["getpid"] = "OK" if _sys(self.nr["getpid"]) == os.getpid() else "wrong pid"
        out["unshare(0)"] = _outcome_of(lambda: _sys(self.nr["unshare"], 0))
        out["netlink socket"] = _outcome_of(lambda: self._netlink(AF_NETLINK))
        out["netlink socket, high word"] = _outcome_of(
            lambda: self._netlink(AF_NETLINK | HIGH_WORD)
        )
        out["unix socket"] = _outcome_of(
            lambda: os.close(_sys(self.nr["socket"], socket.AF_UNIX, socket.SOCK_STREAM, 0))
        )
        if self.stub is not None:
            send(out)  # the trap should kill us: report first
            pid = self.stub()
            out["int 0x80"] = f"returned {pid} instead of killing the process"
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        features = [
            _check(SECCOMP_FILTER, got, {"install": "OK", "getpid": "OK"}),
            _check(SECCOMP_ERRNO, got, {
                "install": "OK", "unshare(0), before": "OK", "unshare(0)": "EPERM",
            }),
            _check(SECCOMP_SOCKETS, got, {
                "install": "OK", "netlink socket, before": "OK", "netlink socket": "EAFNOSUPPORT",
                "netlink socket, high word": "EAFNOSUPPORT", "unix socket": "OK",
            }),
        ]  # fmt: skip
        if self.stub_error is not None:
            features.append(SECCOMP_ARCH.failed(self.stub_error))
        elif got.get("install") != "OK":
            features.append(SECCOMP_ARCH.failed(f"install: {got.get('install')}"))
        elif outcome.signal == signal.SIGSYS:
            features.append(SECCOMP_ARCH.proven())
        elif "int 0x80" in got:
            features.append(SECCOMP_ARCH.failed(str(got["int 0x80"])))
        elif outcome.signal == signal.SIGSEGV:
            features.append(
                SECCOMP_ARCH.failed(
                    "the child died by SIGSEGV, not SIGSYS: int 0x80 is not available on "
                    "this kernel (no IA32 emulation), so there is no foreign ABI to trap"
                )
            )
        else:
            features.append(SECCOMP_ARCH.failed(f"the child {outcome.ending()}, not by SIGSYS"))
        return features

    def close(self) -> None:
        self.stub = None
        if self.page is not None:
            with contextlib.suppress(BufferError):  # a ctypes view may still be alive
                self.page.close()


# ---------------------------------------------------------------- process controls

NNP = Spec(
    "no_new_privs",
    "prctl(PR_SET_NO_NEW_PRIVS) in a child: reads back 1 from prctl and /proc/self/status, "
    "and clearing it is refused (EINVAL)",
)
CAPS = Spec(
    "caps.drop",
    "CapabilityDrop().apply() in a child: CapEff, CapPrm, CapInh and CapAmb read 0 in "
    "/proc/self/status",
)
CLOSE_RANGE = Spec(
    "close_range",
    "close_range(CLOSE_RANGE_CLOEXEC) marked three descriptors close-on-exec, then "
    "close_range() closed them (EBADF)",
)


class ProcessGroup(Group):
    name = "process"
    specs = (NNP, CAPS, CLOSE_RANGE)

    def __init__(self, nr: Mapping[str, int]) -> None:
        self.nr = nr
        self.drop = kcaps.CapabilityDrop()
        kcaps.current()  # warm up what reading /proc/self/status needs, before fork
        self.cap_setgid = kcaps.BY_NAME["CAP_SETGID"]
        self.cap_setpcap = kcaps.CAP_SETPCAP

    def _caps(self) -> dict[str, Any]:
        before = kcaps.current()
        out: dict[str, Any] = {"before": before}
        root_like = bool(before.get("CapEff", 0) >> self.cap_setgid & 1)
        if root_like:
            groups = os.getgroups()
            out["setgroups, before"] = _outcome_of(lambda: os.setgroups(groups))
        try:
            self.drop.apply()
        except OSError as e:
            out["apply"] = f"{type(e).__name__}: {e}"
            return out
        out["apply"] = "OK"
        out["after"] = kcaps.current()
        if root_like:
            out["setgroups"] = _outcome_of(lambda: os.setgroups(groups))
        return out

    def _nnp(self) -> dict[str, Any]:
        out: dict[str, Any] = {"before": _prctl(PR_GET_NO_NEW_PRIVS)}
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        out["prctl"] = _prctl(PR_GET_NO_NEW_PRIVS)
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"NoNewPrivs:"):
                    out["status"] = int(line.split()[1])
        out["clear"] = _outcome_of(lambda: _prctl(PR_SET_NO_NEW_PRIVS, 0))
        return out

    def _close_range(self, fd: int) -> dict[str, Any]:
        nr = self.nr["close_range"]
        top = max(int(n) for n in os.listdir("/proc/self/fd"))
        fds = [top + 1, top + 2, top + 3]
        for n in fds:
            os.dup2(fd, n, inheritable=True)
        out: dict[str, Any] = {}
        out["cloexec"] = _outcome_of(lambda: _sys(nr, fds[0], fds[-1], CLOSE_RANGE_CLOEXEC))
        out["marked"] = all(not os.get_inheritable(n) for n in fds)
        out["close"] = _outcome_of(lambda: _sys(nr, fds[0], fds[-1], 0))
        out["closed"] = [_outcome_of(lambda n=n: os.fstat(n)) for n in fds]  # type: ignore[misc]
        return out

    def body(self, send: Send) -> Mapping[str, Any]:
        _, w = os.pipe()
        return {
            "caps": self._caps(),
            "nnp": self._nnp(),
            "close_range": self._close_range(w),
        }

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        return [self._nnp_feature(got["nnp"]), self._caps_feature(got["caps"]),
                self._close_range_feature(got["close_range"])]  # fmt: skip

    @staticmethod
    def _nnp_feature(got: Mapping[str, Any]) -> Feature:
        if got.get("prctl") != 1 or got.get("status") != 1:
            return NNP.failed(
                f"after PR_SET_NO_NEW_PRIVS: prctl reads {got.get('prctl')}, "
                f"/proc/self/status reads {got.get('status')}"
            )
        if got.get("clear") != "EINVAL":
            return NNP.failed(f"clearing no_new_privs gave {got.get('clear')}, not EINVAL")
        return NNP.proven()

    def _caps_feature(self, got: Mapping[str, Any]) -> Feature:
        if got.get("apply") != "OK":
            return CAPS.failed(f"CapabilityDrop.apply: {got.get('apply')}")
        before, after = got["before"], got["after"]
        left = {
            k: v for k, v in after.items() if k in ("CapEff", "CapPrm", "CapInh", "CapAmb") and v
        }
        if left:
            return CAPS.failed(
                "still held after the drop: " + ", ".join(f"{k}={v:#x}" for k, v in left.items())
            )
        how = CAPS.how
        if before.get("CapEff"):
            if after.get("CapBnd"):
                return CAPS.failed(f"bounding set not emptied: CapBnd={after['CapBnd']:#x}")
            if got.get("setgroups, before") != "OK" or got.get("setgroups") != "EPERM":
                return CAPS.failed(
                    f"setgroups() gave {got.get('setgroups, before')} before the drop and "
                    f"{got.get('setgroups')} after, expected OK then EPERM"
                )
            how = (
                f"CapabilityDrop().apply() in a child holding CapEff={before['CapEff']:#x}: "
                "CapEff, CapPrm, CapInh, CapAmb and CapBnd read 0, and setgroups() went from "
                "OK to EPERM"
            )
        else:
            how += " (this user held no capabilities to begin with)"
        return CAPS.proven(how)

    @staticmethod
    def _close_range_feature(got: Mapping[str, Any]) -> Feature:
        if got.get("cloexec") != "OK" or not got.get("marked"):
            return CLOSE_RANGE.failed(
                f"close_range(CLOSE_RANGE_CLOEXEC) gave {got.get('cloexec')}, "
                f"descriptors marked: {got.get('marked')}"
            )
        if got.get("close") != "OK" or got.get("closed") != ["EBADF"] * 3:
            return CLOSE_RANGE.failed(
                f"close_range() gave {got.get('close')}; fstat afterwards: {got.get('closed')}"
            )
        return CLOSE_RANGE.proven()


RLIMIT_SPECS = {
    "cpu": Spec(
        "rlimit.cpu",
        "RLIMIT_CPU set in a child and read back with getrlimit; not driven to SIGXCPU, "
        "which would burn a CPU second",
    ),
    "as": Spec(
        "rlimit.as",
        "RLIMIT_AS set 16 MiB above the child's size: a 64 MiB mmap that worked before "
        "then failed ENOMEM",
    ),
    "fsize": Spec(
        "rlimit.fsize",
        "RLIMIT_FSIZE 4096 with SIGXFSZ ignored: an 8192-byte write stopped at 4096, "
        "the next write got EFBIG",
    ),
    "nofile": Spec(
        "rlimit.nofile",
        "RLIMIT_NOFILE set just above the highest open descriptor: dup() then failed EMFILE "
        "at the limit",
    ),
    "nproc": Spec(
        "rlimit.nproc",
        "RLIMIT_NPROC 0 in a child of a non-root user: fork() failed EAGAIN",
    ),
    "core": Spec(
        "rlimit.core",
        "RLIMIT_CORE 0 set in a child and read back with getrlimit (no crash is provoked to "
        "watch for a core file)",
    ),
}
_AS_HEADROOM = 16 << 20
_AS_PROBE = 64 << 20
_FSIZE = 4096


class RlimitGroup(Group):
    name = "rlimit"
    specs = tuple(RLIMIT_SPECS.values())

    def __init__(self, base: str) -> None:
        self.fsize_fd = os.open(
            os.path.join(base, "fsize"), os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
        )

    @staticmethod
    def _soft(res: int, value: int) -> int:
        """Set the soft limit (never above the hard one); return the old soft limit."""
        soft, hard = resource.getrlimit(res)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(res, (value, hard))
        return soft

    def _readback(self, res: int, value: int) -> dict[str, Any]:
        old = self._soft(res, value)
        want = resource.getrlimit(res)
        got = {"set": want[0], "read": resource.getrlimit(res)[0], "wanted": value}
        resource.setrlimit(res, (old, want[1]))
        return got

    def _as(self) -> dict[str, Any]:
        size = 0
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    size = int(line.split()[1]) * 1024
        out: dict[str, Any] = {"before": _outcome_of(lambda: mmap.mmap(-1, _AS_PROBE).close())}
        old = self._soft(resource.RLIMIT_AS, size + _AS_HEADROOM)
        try:
            out["after"] = _outcome_of(lambda: mmap.mmap(-1, _AS_PROBE).close())
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (old, resource.getrlimit(resource.RLIMIT_AS)[1]))
        return out

    def _fsize(self) -> dict[str, Any]:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        old = self._soft(resource.RLIMIT_FSIZE, _FSIZE)
        try:
            first = os.pwrite(self.fsize_fd, b"x" * (2 * _FSIZE), 0)
            more = _outcome_of(lambda: os.pwrite(self.fsize_fd, b"x", _FSIZE))
        finally:
            resource.setrlimit(
                resource.RLIMIT_FSIZE, (old, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
            )
        return {"first": first, "next": more}

    def _nofile(self) -> dict[str, Any]:
        top = max(int(n) for n in os.listdir("/proc/self/fd"))
        limit = top + 4
        old = self._soft(resource.RLIMIT_NOFILE, limit)
        opened: list[int] = []
        result = "OK"
        try:
            for _ in range(limit + 1):
                try:
                    opened.append(os.dup(self.fsize_fd))
                except OSError as e:
                    result = errno.errorcode.get(e.errno or 0, str(e.errno))
                    break
        finally:
            for n in opened:
                os.close(n)
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (old, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
            )
        return {"limit": limit, "result": result, "highest": max(opened, default=-1)}

    def _nproc(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": os.getuid()}
        if os.getuid() == 0 or os.geteuid() == 0:
            # uid 0 is never held to RLIMIT_NPROC (kernel/fork.c exempts INIT_USER).
            dropped = _outcome_of(
                lambda: os.setresuid(NPROC_PROBE_UID, NPROC_PROBE_UID, NPROC_PROBE_UID)
            )
            out["setuid"] = dropped
            if dropped != "OK":
                out["read"] = self._readback(resource.RLIMIT_NPROC, 0)
                return out
        self._soft(resource.RLIMIT_NPROC, 0)
        try:
            pid = os.fork()
        except OSError as e:
            out["fork"] = errno.errorcode.get(e.errno or 0, str(e.errno))
            return out
        if pid == 0:  # pragma: no cover - the limit did not bite; leave at once
            os._exit(0)
        os.waitpid(pid, 0)
        out["fork"] = "OK"
        return out

    def body(self, send: Send) -> Mapping[str, Any]:
        return {
            "cpu": self._readback(resource.RLIMIT_CPU, 30),
            "core": self._readback(resource.RLIMIT_CORE, 0),
            "as": self._as(),
            "fsize": self._fsize(),
            "nofile": self._nofile(),
            "nproc": self._nproc(),  # last: it may give up root for good
        }

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        out = []
        for key in ("cpu", "core"):
            spec, r = RLIMIT_SPECS[key], got[key]
            if r["set"] == r["read"] == r["wanted"]:
                out.append(spec.proven(f"{spec.how}: set {r['set']}, read {r['read']}"))
            else:
                out.append(spec.failed(f"set {r['wanted']}, read back {r['read']}"))
        a = got["as"]
        out.append(_check(RLIMIT_SPECS["as"], a, {"before": "OK", "after": "ENOMEM"}))
        fs = got["fsize"]
        spec = RLIMIT_SPECS["fsize"]
        if fs["first"] == _FSIZE and fs["next"] == "EFBIG":
            out.append(spec.proven())
        else:
            out.append(spec.failed(f"first write {fs['first']} bytes, next write {fs['next']}"))
        nf = got["nofile"]
        spec = RLIMIT_SPECS["nofile"]
        if nf["result"] == "EMFILE" and nf["highest"] < nf["limit"]:
            out.append(spec.proven(f"{spec.how} {nf['limit']}"))
        else:
            out.append(
                spec.failed(
                    f"limit {nf['limit']}: dup() ended with {nf['result']}, highest fd "
                    f"{nf['highest']}"
                )
            )
        npr = got["nproc"]
        spec = RLIMIT_SPECS["nproc"]
        if "read" in npr:
            r = npr["read"]
            how = (
                f"RLIMIT_NPROC set and read back only: uid 0 is exempt from it and the child "
                f"could not become uid {NPROC_PROBE_UID} ({npr['setuid']})"
            )
            if r["set"] == r["read"] == r["wanted"]:
                out.append(spec.proven(how))
            else:
                out.append(spec.failed(f"set {r['wanted']}, read back {r['read']}", how))
        elif npr.get("fork") == "EAGAIN":
            how = spec.how
            if "setuid" in npr:
                how = (
                    f"RLIMIT_NPROC 0 in a child that left uid 0 (exempt) for uid "
                    f"{NPROC_PROBE_UID}: fork() failed EAGAIN"
                )
            out.append(spec.proven(how))
        else:
            out.append(spec.failed(f"fork() under RLIMIT_NPROC 0 gave {npr.get('fork')}"))
        return out

    def close(self) -> None:
        os.close(self.fsize_fd)


SUBREAPER = Spec(
    "subreaper",
    "a child set PR_SET_CHILD_SUBREAPER, double-forked a setsid() daemon and saw it "
    "re-parented to itself",
)
PIDFD = Spec(
    "pidfd",
    "pidfd_open() on that daemon, pidfd_send_signal(SIGKILL): it was reaped killed by SIGKILL",
)


class ReaperGroup(Group):
    name = "reaper"
    specs = (SUBREAPER, PIDFD)

    def body(self, send: Send) -> Mapping[str, Any]:
        out: dict[str, Any] = {}
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        out["subreaper"] = _get_subreaper()
        ready_r, ready_w = os.pipe()
        # The daemon waits on this pipe: if this child dies first, EOF frees it.
        hold_r, hold_w = os.pipe()
        middle = os.fork()
        if middle == 0:  # pragma: no cover - runs in the middle process
            try:
                if os.fork() == 0:
                    try:
                        os.setsid()
                        os.close(hold_w)
                        os.write(ready_w, str(os.getpid()).encode())
                        os.close(ready_w)
                        os.read(hold_r, 1)
                    finally:
                        os._exit(0)
            finally:
                os._exit(0)
        os.close(ready_w)
        os.close(hold_r)
        try:
            os.waitpid(middle, 0)
            daemon = int(os.read(ready_r, 32) or b"0")
            os.close(ready_r)
            if not daemon:
                out["daemon"] = "never reported its pid"
                return out
            out["daemon sid"] = "own session" if os.getsid(daemon) == daemon else "same session"
            out["daemon parent"] = (
                "this child" if parent_of(daemon) == os.getpid() else (f"pid {parent_of(daemon)}")
            )
            try:
                fd = pidfd_open(daemon)
            except OSError as e:
                out["pidfd_open"] = errno.errorcode.get(e.errno or 0, str(e))
                return out
            out["pidfd_open"] = "OK"
            try:
                out["pidfd_send_signal"] = _outcome_of(
                    lambda: pidfd_send_signal(fd, signal.SIGKILL)
                )
            finally:
                os.close(fd)
            if out["daemon parent"] == "this child":
                _, status = os.waitpid(daemon, 0)
                out["daemon ended"] = (
                    _fork.signal_name(os.WTERMSIG(status))
                    if os.WIFSIGNALED(status)
                    else f"exit {os.WEXITSTATUS(status)}"
                )
        finally:
            os.close(hold_w)
        return out

    def interpret(self, outcome: Outcome) -> list[Feature]:
        got = outcome.report
        sub = _check(SUBREAPER, got, {
            "daemon sid": "own session", "daemon parent": "this child",
        })  # fmt: skip
        if got.get("subreaper") != 1:
            sub = SUBREAPER.failed(f"PR_GET_CHILD_SUBREAPER reads {got.get('subreaper')}")
        pid = _check(PIDFD, got, {
            "pidfd_open": "OK", "pidfd_send_signal": "OK", "daemon ended": "SIGKILL",
        })  # fmt: skip
        return [sub, pid]


# ---------------------------------------------------------------------------- strace

STRACE = Spec(
    "strace",
    "strace -f -qq -e trace=openat -o FILE true: exited 0 and FILE holds an openat() line",
)


@dataclass
class StraceRun:
    path: str | None
    trace_file: str = ""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def start(cls, base: str) -> StraceRun:
        path = shutil.which("strace")
        run = cls(path)
        if path is None:
            run.error = "strace is not installed (not found on PATH)"
            return run
        true = next((p for p in ("/usr/bin/true", "/bin/true") if os.access(p, os.X_OK)), None)
        true = true or shutil.which("true")
        if true is None:
            run.error = "no `true` executable to trace"
            return run
        run.trace_file = os.path.join(base, "strace.out")
        try:
            run.procs["version"] = subprocess.Popen(
                [path, "-V"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            run.procs["trace"] = subprocess.Popen(
                [path, "-f", "-qq", "-e", "trace=openat", "-o", run.trace_file, true],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except OSError as e:
            run.error = f"cannot run {path}: {e.strerror or e}"
        return run

    def abort(self) -> None:
        """Kill and reap whatever is still running (when the run failed midway)."""
        for proc in self.procs.values():
            if proc.returncode is None:
                with contextlib.suppress(OSError):
                    proc.kill()
                proc.communicate()

    def finish(self, deadline: float) -> tuple[Feature, StraceInfo | None]:
        version: str | None = None
        results: dict[str, tuple[int | None, bytes]] = {}
        for name, proc in self.procs.items():
            try:
                out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
                results[name] = (proc.returncode, out if name == "version" else err)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                results[name] = (None, b"")
        if "version" in results:
            m = re.search(rb"version\s+(\S+)", results["version"][1])
            version = m.group(1).decode(errors="replace")[:100] if m else None
        info = StraceInfo(path=self.path, version=version) if self.path else None
        if self.error is not None:
            return STRACE.failed(self.error), info
        code, err = results["trace"]
        if code is None:
            return STRACE.failed("timed out"), info
        if code != 0:
            first = err.decode(errors="replace").strip().splitlines()
            why = first[0] if first else "no message"
            return STRACE.failed(f"strace exited {code}: {why}"[:500]), info
        try:
            with open(self.trace_file, "rb") as f:
                traced = f.read()
        except OSError as e:
            return STRACE.failed(f"no trace written: {e.strerror}"), info
        if b"openat(" not in traced:
            return STRACE.failed("the trace holds no openat() line"), info
        how = f"{self.path} -f -qq -e trace=openat -o FILE true: exited 0, FILE holds openat()"
        return STRACE.proven(how), info


# ---------------------------------------------------------------------- the whole run

FEATURES: tuple[str, ...] = (
    LANDLOCK_ABI.name,
    *(s.name for s in FS_SPECS.values()),
    NET_CONNECT.name,
    NET_BIND.name,
    SCOPE_SIGNAL.name,
    SCOPE_ABSTRACT.name,
    *(s.name for s in FLAG_SPECS.values()),
    SECCOMP_FILTER.name,
    SECCOMP_ERRNO.name,
    SECCOMP_SOCKETS.name,
    SECCOMP_ARCH.name,
    NNP.name,
    CAPS.name,
    *(s.name for s in RLIMIT_SPECS.values()),
    SUBREAPER.name,
    PIDFD.name,
    CLOSE_RANGE.name,
    STRACE.name,
)
"""Every feature name cvg-probe reports, in report order."""

_SPECS: dict[str, Spec] = {
    s.name: s
    for s in (
        LANDLOCK_ABI, *FS_SPECS.values(), NET_CONNECT, NET_BIND, SCOPE_SIGNAL, SCOPE_ABSTRACT,
        *FLAG_SPECS.values(), SECCOMP_FILTER, SECCOMP_ERRNO, SECCOMP_SOCKETS, SECCOMP_ARCH,
        NNP, CAPS, *RLIMIT_SPECS.values(), SUBREAPER, PIDFD, CLOSE_RANGE, STRACE,
    )
}  # fmt: skip
assert tuple(_SPECS) == FEATURES


def scratch_parents() -> list[str]:
    """Where the probe's scratch directory may go, best first: ``$TMPDIR`` when set,
    else a tmpfs (``$XDG_RUNTIME_DIR``, ``/dev/shm``: directory operations on a disk
    filesystem can cost milliseconds each), else the system temporary directory."""
    tmpdir = os.environ.get("TMPDIR", "")
    if tmpdir:
        return [tmpdir, tempfile.gettempdir()]
    return [os.environ.get("XDG_RUNTIME_DIR", ""), "/dev/shm", tempfile.gettempdir()]


def _base_dir() -> str:
    """A private scratch directory, on a filesystem that allows exec if there is one."""
    for parent in scratch_parents():
        if not parent or not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            continue
        try:
            if os.statvfs(parent).f_flag & os.ST_NOEXEC:
                continue
            return tempfile.mkdtemp(prefix="cvg-probe-", dir=parent)
        except OSError:
            continue
    return tempfile.mkdtemp(prefix="cvg-probe-")


@dataclass
class RunDetail:
    """Everything a run saw, for tests and diagnostics: features plus raw outcomes."""

    facts: Facts
    outcomes: dict[str, Outcome]


def _build_groups(
    state: LandlockState, base: str, arch: str, nr: Mapping[str, int]
) -> tuple[list[Group], list[Feature]]:
    """The groups to fork, and the features decided without a child (missing ABI,
    a setup that failed)."""
    groups: list[Group] = []
    static: list[Feature] = []

    def add(specs: Iterable[Spec], make: Callable[[], Group]) -> None:
        try:
            groups.append(make())
        except (OSError, landlock.LandlockError, seccomp.SeccompError, ValueError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            static.extend(s.failed(f"setup failed: {type(e).__name__}: {why}") for s in specs)

    lacks_landlock = state.lacks(1)
    if lacks_landlock is not None:
        static.append(LANDLOCK_ABI.failed(lacks_landlock))
    for c in FS_CHECKS:
        why = state.lacks(landlock.FS_RIGHTS[c.right].abi)
        if why is not None:
            static.append(FS_SPECS[c.right].failed(why))
    if lacks_landlock is None:
        fs_specs = [LANDLOCK_ABI] + [
            FS_SPECS[c.right]
            for c in FS_CHECKS
            if state.lacks(landlock.FS_RIGHTS[c.right].abi) is None
        ]
        add(fs_specs, lambda: LandlockFsGroup(state, base))
    for specs, abi, make in (
        ((NET_CONNECT, NET_BIND), 4, lambda: LandlockNetGroup(state)),
        ((SCOPE_SIGNAL, SCOPE_ABSTRACT), 6, lambda: LandlockScopeGroup(state)),
    ):
        why = state.lacks(abi)
        if why is not None:
            static.extend(s.failed(why) for s in specs)
        else:
            add(specs, make)
    flag_specs = []
    for name, spec in FLAG_SPECS.items():
        why = state.lacks(landlock.FLAGS[name].abi)
        if why is not None:
            static.append(spec.failed(why))
        else:
            flag_specs.append(spec)
    if flag_specs:
        add(flag_specs, lambda: LandlockFlagGroup(state, base))
    add(SeccompGroup.specs, lambda: SeccompGroup(arch, nr))
    add(ProcessGroup.specs, lambda: ProcessGroup(nr))
    add(RlimitGroup.specs, lambda: RlimitGroup(base))
    add(ReaperGroup.specs, ReaperGroup)
    return groups, static


def run_detailed(*, timeout: float = DEFAULT_TIMEOUT, extra: Sequence[Group] = ()) -> RunDetail:
    """:func:`run_probes`, also returning each child's raw outcome.

    ``extra`` adds groups to the run (tests use it to check the timeout and
    cleanup machinery with a child that hangs).
    """
    arch = os.uname().machine
    arch = {"arm64": "aarch64"}.get(arch, arch)
    try:
        nr = seccomp.table(arch)
    except seccomp.SeccompError as e:
        raise ProbeError(f"cannot probe this machine: {e}") from None
    state = landlock_state()
    started = datetime.now(UTC)
    try:
        base = _base_dir()
    except OSError as e:
        raise ProbeError(f"cannot create a scratch directory: {e}") from None
    groups: list[Group] = []
    strace: StraceRun | None = None
    try:
        strace = StraceRun.start(base)  # the slowest probe: runs while the children do
        groups, static = _build_groups(state, base, arch, nr)
        groups.extend(extra)
        deadline = time.monotonic() + timeout
        try:
            outcomes = _fork.run([(g.name, g.body) for g in groups], timeout)
        except OSError as e:
            raise ProbeError(f"cannot start the probe children: {e}") from None
        features = list(static)
        for g in groups:
            features.extend(g.results(outcomes[g.name]))
        strace_feature, strace_info = strace.finish(deadline)
        features.append(strace_feature)
    finally:
        if strace is not None:
            strace.abort()
        for g in groups:
            with contextlib.suppress(OSError):
                g.close()
        shutil.rmtree(base, ignore_errors=True)
    order = {name: i for i, name in enumerate(FEATURES)}
    features.sort(key=lambda f: order.get(f.name, len(order)))
    facts = Facts(
        kernel=os.uname().release,
        arch=arch,
        landlock_abi=min(state.kernel, 255),
        landlock_abi_cap=None if state.cap is None else min(state.cap, 255),
        euid=os.geteuid(),
        features=features,
        strace=strace_info,
        probed_at=started,
    )
    return RunDetail(facts, outcomes)


def run_probes(*, timeout: float = DEFAULT_TIMEOUT) -> Facts:
    """Probe every feature live, now, without the cache. Raises ProbeError only when
    the probe itself cannot run; a feature the kernel lacks is ``proven: false``."""
    return run_detailed(timeout=timeout).facts
