"""The Landlock filesystem probes: one child, one ruleset handling every right, and
each right withheld from a directory of its own, where its operation must be denied
while the same operation works in a directory granted everything."""

from __future__ import annotations

import fcntl
import os
import socket
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cvg_kernel import landlock
from cvg_schema import Feature

from ._fork import Outcome, Send
from ._group import Group, Spec, outcome_of
from ._landlock import LandlockState, restrict

FIONREAD = 0x541B  # the same on x86_64 and aarch64 (asm-generic)


def _touch(path: str, data: bytes = b"cvg-probe\n", mode: int = 0o644) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


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


def open_close(path: str, flags: int, mode: int = 0o600) -> None:
    os.close(os.open(path, flags | os.O_CLOEXEC, mode))


def _bind_unix(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(path)


def connect_unix(path: str) -> None:
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
            lambda d: open_close(f"{d}/w", os.O_WRONLY), lambda d: _touch(f"{d}/w")),
    FsCheck("read_file", "open(O_RDONLY) of a file",
            lambda d: open_close(f"{d}/r", os.O_RDONLY), lambda d: _touch(f"{d}/r")),
    FsCheck("read_dir", "open(O_DIRECTORY) of a directory",
            lambda d: open_close(d, os.O_RDONLY | os.O_DIRECTORY)),
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
            lambda d: open_close(f"{d}/mr", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
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
            lambda d: connect_unix(f"{d}/u")),
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
        restricted = restrict(self.ruleset)
        if restricted != "OK":
            return {"restrict": restricted}
        out: dict[str, list[str]] = {}
        for c in self.checks:
            granted, withheld = self.targets[c.right]
            out[c.right] = [
                outcome_of(lambda c=c, t=granted: c.op(t)),  # type: ignore[misc]
                outcome_of(lambda c=c, t=withheld: c.op(t)),  # type: ignore[misc]
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
