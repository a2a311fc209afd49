"""Landlock: negotiation (pure) and enforcement on the real kernel.

Every enforcement test first shows the operation succeeds for the same
identity without Landlock (or through the granted counterpart), so a denial
can only come from the ruleset. Confinement happens in forked children only.
"""

from __future__ import annotations

import os
import pwd
import socket
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import cvg_testing
from cvg_kernel import landlock as ll
from cvg_kernel.landlock import Dropped, LandlockError, LandlockUnavailable, Ruleset
from cvg_kernel.libc import prctl
from cvg_testing import attempt, ensure_unpriv_user, errname, in_child

PR_SET_NO_NEW_PRIVS = 38
KERNEL_ABI = ll.kernel_abi()
needs_abi = {n: cvg_testing.needs_abi(n) for n in range(1, 10)}

Identity = pwd.struct_passwd | None
Ops = dict[str, Callable[[], object]]


@pytest.fixture(autouse=True)
def _no_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ll.ABI_ENV, raising=False)


# ----------------------------------------------------------------------------- helpers


def confine(rs: Ruleset) -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    rs.restrict_self()


def probe(identity: Identity, rs: Ruleset | None, ops: Ops) -> dict[str, str]:
    """Run each op in one child (confined by ``rs`` if given); errno name per op."""

    def body() -> dict[str, str]:
        if rs is not None:
            confine(rs)
        return {k: errname(attempt(f)) for k, f in ops.items()}

    child = in_child(body, user=identity)
    assert child.error is None, child.error
    assert child.exitcode == 0
    return dict(child.value)


def check(
    identity: Identity,
    rs: Ruleset,
    ops: Ops,
    expected: dict[str, str],
    setup: Callable[[], None] = lambda: None,
) -> None:
    """Every op succeeds unconfined; confined by ``rs`` they give ``expected``."""
    setup()
    assert probe(identity, None, ops) == dict.fromkeys(ops, "OK")
    setup()
    assert probe(identity, rs, ops) == expected


def tree(base: Path, *dirs: str, files: tuple[str, ...] = ()) -> None:
    """World-usable dirs and files, so only Landlock can stand in the way."""
    for d in dirs:
        (base / d).mkdir(exist_ok=True)
        (base / d).chmod(0o777)
    for f in files:
        p = base / f
        p.write_text("data\n")
        p.chmod(0o666)


def rm(*paths: Path) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


def read(p: Path) -> Callable[[], object]:
    return p.read_bytes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connect(port: int) -> Callable[[], object]:
    def op() -> None:
        with socket.socket() as s:
            s.connect(("127.0.0.1", port))

    return op


def bind(port: int) -> Callable[[], object]:
    def op() -> None:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))

    return op


@pytest.fixture
def listeners() -> Iterator[tuple[int, int]]:
    socks = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        socks.append(s)
    try:
        yield socks[0].getsockname()[1], socks[1].getsockname()[1]
    finally:
        for s in socks:
            s.close()


def signal_probe(identity: Identity, rs: Ruleset | None) -> dict[str, str]:
    """kill(0) on a sibling forked *before* confinement (outside the domain) and on self.

    The sibling has the child's uid, so ordinary permission checks allow the
    signal for every identity; only Landlock's signal scope can refuse it.
    """

    def body() -> dict[str, str]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        os.close(r)
        try:
            if rs is not None:
                confine(rs)
            return {
                "sibling": errname(attempt(lambda: os.kill(pid, 0))),
                "self": errname(attempt(lambda: os.kill(os.getpid(), 0))),
            }
        finally:
            os.close(w)
            os.waitpid(pid, 0)

    child = in_child(body, user=identity)
    assert child.error is None, child.error
    return dict(child.value)


# ------------------------------------------------------------------------ negotiation

ALL_FS = [
    "execute",
    "write_file",
    "read_file",
    "read_dir",
    "remove_dir",
    "remove_file",
    "make_char",
    "make_dir",
    "make_reg",
    "make_sock",
    "make_fifo",
    "make_block",
    "make_sym",
    "refer",
    "truncate",
    "ioctl_dev",
    "resolve_unix",
]
ALL_NET = ["bind_tcp", "connect_tcp"]
ALL_SCOPES = ["abstract_unix_socket", "signal"]
ALL_FLAGS = ["log_same_exec_off", "log_new_exec_on", "log_subdomains_off", "tsync"]

# Written out by hand from the kernel's history (docs/kernel-notes.md), not
# derived from the module's tables, so a wrong table entry fails here.
FS_MASK_AT = {
    0: 0,
    1: (1 << 13) - 1,
    2: (1 << 14) - 1,
    3: (1 << 15) - 1,
    4: (1 << 15) - 1,
    5: (1 << 16) - 1,
    6: (1 << 16) - 1,
    7: (1 << 16) - 1,
    8: (1 << 16) - 1,
    9: (1 << 17) - 1,
}
ABI1_FS = {f"fs.{n}" for n in ALL_FS[:13]}
NET = {"net.bind_tcp", "net.connect_tcp"}
SCOPE = {"scope.abstract_unix_socket", "scope.signal"}
LOGF = {"flag.log_same_exec_off", "flag.log_new_exec_on", "flag.log_subdomains_off"}
DROPPED_AT = {
    0: ABI1_FS
    | {"fs.refer", "fs.truncate", "fs.ioctl_dev", "fs.resolve_unix"}
    | NET
    | SCOPE
    | LOGF
    | {"flag.tsync", "landlock"},
    1: {"fs.refer", "fs.truncate", "fs.ioctl_dev", "fs.resolve_unix"}
    | NET
    | SCOPE
    | LOGF
    | {"flag.tsync"},
    2: {"fs.truncate", "fs.ioctl_dev", "fs.resolve_unix"} | NET | SCOPE | LOGF | {"flag.tsync"},
    3: {"fs.ioctl_dev", "fs.resolve_unix"} | NET | SCOPE | LOGF | {"flag.tsync"},
    4: {"fs.ioctl_dev", "fs.resolve_unix"} | SCOPE | LOGF | {"flag.tsync"},
    5: {"fs.resolve_unix"} | SCOPE | LOGF | {"flag.tsync"},
    6: {"fs.resolve_unix"} | LOGF | {"flag.tsync"},
    7: {"fs.resolve_unix", "flag.tsync"},
    8: {"fs.resolve_unix"},
    9: set(),
}


@pytest.mark.parametrize("abi", range(10))
def test_negotiate_all_never_drops(abi: int) -> None:
    neg = ll.negotiate(abi, best_effort=True)
    assert neg.handled_fs == FS_MASK_AT[abi]
    assert neg.handled_net == (0b11 if abi >= 4 else 0)
    assert neg.scoped == (0b11 if abi >= 6 else 0)
    # "all" drops nothing; only ABI 0 reports that Landlock does nothing at all.
    assert [d.item for d in neg.dropped] == (["landlock"] if abi == 0 else [])


@pytest.mark.parametrize("abi", range(10))
def test_negotiate_explicit_drops_exactly_what_the_abi_lacks(abi: int) -> None:
    neg = ll.negotiate(
        abi,
        handled_fs=ALL_FS,
        handled_net=ALL_NET,
        scoped=ALL_SCOPES,
        flags=ALL_FLAGS,
        best_effort=True,
    )
    items = [d.item for d in neg.dropped]
    assert set(items) == DROPPED_AT[abi]
    assert len(items) == len(set(items))
    assert neg.handled_fs == FS_MASK_AT[abi]
    assert neg.flags == (0b1111 if abi >= 8 else 0b111 if abi == 7 else 0)
    for d in neg.dropped:
        if d.item != "landlock" and not (abi == 0 and d.item.startswith("flag.")):
            assert f"this kernel offers {abi}" in d.reason
    if abi < 9:
        with pytest.raises(LandlockError, match="cannot honour"):
            ll.negotiate(
                abi, handled_fs=ALL_FS, handled_net=ALL_NET, scoped=ALL_SCOPES, flags=ALL_FLAGS
            )
    else:
        assert (
            ll.negotiate(
                abi, handled_fs=ALL_FS, handled_net=ALL_NET, scoped=ALL_SCOPES, flags=ALL_FLAGS
            ).dropped
            == ()
        )


def test_negotiate_abi4_reason_and_rules() -> None:
    neg = ll.negotiate(
        4,
        handled_fs=["read_file", "ioctl_dev"],
        handled_net="all",
        scoped=["signal"],
        fs_rules=[("/dev", ["read_file", "ioctl_dev", "write_file"]), ("/x", ["ioctl_dev"])],
        net_rules=[(443, ["connect_tcp"])],
        best_effort=True,
        abi_note=f"capped by {ll.ABI_ENV}=4",
    )
    assert neg.dropped == (
        Dropped(
            "fs.ioctl_dev",
            "needs Landlock ABI 5; this kernel offers 4 (capped by CVG_LANDLOCK_ABI_MAX=4)",
        ),
        Dropped(
            "scope.signal",
            "needs Landlock ABI 6; this kernel offers 4 (capped by CVG_LANDLOCK_ABI_MAX=4)",
        ),
    )
    assert neg.handled_fs == ll.FS_RIGHTS["read_file"].mask
    assert neg.handled_net == 0b11 and neg.scoped == 0
    # write_file is not handled (unrestricted), ioctl_dev is gone: read_file remains.
    assert neg.fs_rules == (("/dev", ll.FS_RIGHTS["read_file"].mask),)
    assert [d.item for d in neg.skipped] == ["fs_rule /x"]
    assert neg.net_rules == ((443, 0b10),)


def test_negotiate_abi6_keeps_scopes_drops_log_flags() -> None:
    neg = ll.negotiate(
        6, scoped=["signal", "abstract_unix_socket"], flags=["log_new_exec_on"], best_effort=True
    )
    assert neg.scoped == 0b11
    assert [d.item for d in neg.dropped] == ["flag.log_new_exec_on"]
    assert neg.flags == 0


def test_negotiate_abi3_drops_net_and_net_rules() -> None:
    neg = ll.negotiate(
        3, handled_net=["connect_tcp"], net_rules=[(80, ["connect_tcp"])], best_effort=True
    )
    assert [d.item for d in neg.dropped] == ["net.connect_tcp"]
    assert neg.handled_net == 0 and neg.net_rules == ()
    assert [d.item for d in neg.skipped] == ["net_rule 80"]
    assert neg.handled_fs == (1 << 15) - 1  # fs is still enforced


def test_negotiate_abi1_refer_is_more_restrictive() -> None:
    neg = ll.negotiate(1, handled_fs=["refer", "read_file"], best_effort=True)
    (d,) = neg.dropped
    assert d.item == "fs.refer"
    assert "needs Landlock ABI 2; this kernel offers 1" in d.reason
    assert "always denied" in d.reason


def test_negotiate_not_best_effort_lists_every_drop() -> None:
    with pytest.raises(LandlockError) as e:
        ll.negotiate(4, handled_fs=["ioctl_dev"], scoped=["signal"], flags=["tsync"])
    for item in ("fs.ioctl_dev", "scope.signal", "flag.tsync"):
        assert item in str(e.value)
    # Nothing requested beyond the ABI: no error, nothing dropped.
    assert ll.negotiate(4, handled_fs=["read_file"], scoped="all").dropped == ()


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"handled_fs": ["read_file", "read_files"]}, "read_files"),
        ({"handled_net": ["connect_udp"]}, "connect_udp"),
        ({"scoped": ["signals"]}, "signals"),
        ({"flags": ["tsync", "log"]}, "log"),
        ({"fs_rules": [("/usr", ["exec"])]}, "exec"),
        ({"net_rules": [(80, ["connect"])]}, "connect"),
        ({"handled_fs": "read_file"}, "read_file"),
        ({"net_rules": [(70000, ["connect_tcp"])]}, "70000"),
    ],
)
def test_negotiate_rejects_bad_names(kwargs: dict[str, Any], bad: str) -> None:
    with pytest.raises(LandlockError, match=bad) as e:
        ll.negotiate(9, **kwargs)
    assert isinstance(e.value, ValueError)


def test_negotiate_empty_ruleset() -> None:
    with pytest.raises(LandlockError, match="nothing is left to restrict"):
        ll.negotiate(7, handled_fs=[], handled_net=[], scoped=[])
    neg = ll.negotiate(
        3, handled_fs=[], scoped=["signal"], flags=["log_new_exec_on"], best_effort=True
    )
    assert not neg.enforced
    assert "landlock" in [d.item for d in neg.dropped]


def test_file_rights_table() -> None:
    file_rights = {"execute", "write_file", "read_file", "truncate", "ioctl_dev", "resolve_unix"}
    assert file_rights == ll.FILE_RIGHTS
    assert ll.FS_RIGHTS["resolve_unix"] == ll.Right("resolve_unix", 16, 9)
    assert ll.FLAGS["tsync"].mask == 8 and ll.FLAGS["log_subdomains_off"].mask == 4


# --------------------------------------------------------------------------- ABI, env


def test_kernel_abi_and_env_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    assert KERNEL_ABI >= 1, "these tests need a kernel with Landlock"
    assert ll.effective_abi() == (KERNEL_ABI, f"kernel offers ABI {KERNEL_ABI}")
    monkeypatch.setenv(ll.ABI_ENV, "1")
    assert ll.effective_abi() == (
        1,
        f"kernel offers ABI {KERNEL_ABI}, capped to 1 by CVG_LANDLOCK_ABI_MAX=1",
    )
    monkeypatch.setenv(ll.ABI_ENV, "99")
    abi, why = ll.effective_abi()
    assert abi == KERNEL_ABI and "does not lower it" in why
    for bad in ("four", "-1", "4.0", " 4", "4_0"):
        monkeypatch.setenv(ll.ABI_ENV, bad)
        with pytest.raises(LandlockError, match=ll.ABI_ENV):
            ll.effective_abi()


def test_cap_zero_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ll.ABI_ENV, "0")
    with pytest.raises(LandlockUnavailable):
        Ruleset.build()
    with pytest.raises(LandlockUnavailable):
        Ruleset.build(abi=0)


@cvg_testing.needs_abi(4)  # capping at 4 needs a kernel that has it
def test_build_reports_cap_in_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ll.ABI_ENV, "4")
    with pytest.raises(LandlockError, match=r"scope\.signal"):
        Ruleset.build(scoped=["signal"])
    with Ruleset.build(handled_fs=["read_file", "ioctl_dev"], best_effort=True) as rs:
        assert rs.abi == 4 and rs.fd >= 0
        assert rs.dropped == [
            Dropped(
                "fs.ioctl_dev",
                "needs Landlock ABI 5; this kernel offers 4 (capped by CVG_LANDLOCK_ABI_MAX=4)",
            )
        ]


@cvg_testing.below_abi(9)
def test_kernel_error_names_syscall_and_errno() -> None:
    # Pinning an ABI the kernel lacks sends it a right it does not know (EINVAL), or an
    # attribute larger than it knows (E2BIG, as Linux 6.1 answers).
    with pytest.raises(LandlockError, match=r"landlock_create_ruleset.*(EINVAL|E2BIG)"):
        Ruleset.build(abi=9)


def test_missing_path_and_file_mask_do_not_fail(world_dir: Path) -> None:
    tree(world_dir, files=("f",))
    with Ruleset.build(
        fs_rules=[
            (str(world_dir / "absent"), ["read_file"]),
            (str(world_dir / "f" / "below-a-file"), ["read_file"]),
            (str(world_dir / "f"), ["read_dir", "make_reg"]),
            (str(world_dir / "f"), ["read_file", "read_dir"]),
        ]
    ) as rs:
        assert [d.item for d in rs.skipped] == [
            f"fs_rule {world_dir / 'absent'}",
            f"fs_rule {world_dir / 'f' / 'below-a-file'}",
            f"fs_rule {world_dir / 'f'}",
        ]
        assert rs.fs_rules == [(str(world_dir / "f"), ll.FS_RIGHTS["read_file"].mask)]
    rs.close()  # a second close is harmless
    with pytest.raises(LandlockError, match="closed"):
        rs.restrict_self()


def test_restrict_self_without_no_new_privs_is_eperm() -> None:
    user = ensure_unpriv_user() if os.geteuid() == 0 else None  # root may skip NNP

    def body() -> str:
        try:
            rs.restrict_self()
        except LandlockError as e:
            return str(e)
        return "restricted"

    with Ruleset.build() as rs:
        child = in_child(body, user=user)
    assert child.error is None, child.error
    assert "landlock_restrict_self" in child.value and "EPERM" in child.value


# ------------------------------------------------------------------------ enforcement


def test_read_file(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no", files=("ok/f", "no/f"))
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["read_file"])]) as rs:
        check(
            identity,
            rs,
            {"ok": read(world_dir / "ok/f"), "no": read(world_dir / "no/f")},
            {"ok": "OK", "no": "EACCES"},
        )


def test_rule_on_file_masks_dir_rights(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, files=("f", "g"))
    # read_dir on a file would make the kernel refuse the rule (EINVAL) if not masked.
    with Ruleset.build(fs_rules=[(str(world_dir / "f"), ["read_file", "read_dir"])]) as rs:
        assert rs.fs_rules == [(str(world_dir / "f"), ll.FS_RIGHTS["read_file"].mask)]
        check(
            identity,
            rs,
            {"f": read(world_dir / "f"), "g": read(world_dir / "g")},
            {"f": "OK", "g": "EACCES"},
        )


def test_read_dir(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no", files=("ok/f", "no/f"))
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["read_dir"])]) as rs:
        check(
            identity,
            rs,
            {
                "ok": lambda: os.listdir(world_dir / "ok"),
                "no": lambda: os.listdir(world_dir / "no"),
            },
            {"ok": "OK", "no": "EACCES"},
        )


def test_write_file(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no", files=("ok/f", "no/f"))

    def write(p: Path) -> Callable[[], object]:
        def op() -> None:
            fd = os.open(p, os.O_WRONLY)
            try:
                os.write(fd, b"x")
            finally:
                os.close(fd)

        return op

    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["write_file"])]) as rs:
        check(
            identity,
            rs,
            {"ok": write(world_dir / "ok/f"), "no": write(world_dir / "no/f")},
            {"ok": "OK", "no": "EACCES"},
        )


def test_make_reg(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no")
    ok, no = world_dir / "ok/new", world_dir / "no/new"
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["make_reg"])]) as rs:
        check(
            identity,
            rs,
            {
                "ok": lambda: os.mknod(ok, stat.S_IFREG | 0o600),
                "no": lambda: os.mknod(no, stat.S_IFREG | 0o600),
            },
            {"ok": "OK", "no": "EACCES"},
            setup=lambda: rm(ok, no),
        )


def test_remove_file(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no")
    ok, no = world_dir / "ok/f", world_dir / "no/f"
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["remove_file"])]) as rs:
        check(
            identity,
            rs,
            {"ok": ok.unlink, "no": no.unlink},
            {"ok": "OK", "no": "EACCES"},
            setup=lambda: tree(world_dir, files=("ok/f", "no/f")),
        )


@needs_abi[3]
def test_truncate(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no")
    ok, no = world_dir / "ok/f", world_dir / "no/f"
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["truncate"])]) as rs:
        check(
            identity,
            rs,
            {"ok": lambda: os.truncate(ok, 0), "no": lambda: os.truncate(no, 0)},
            {"ok": "OK", "no": "EACCES"},
            setup=lambda: tree(world_dir, files=("ok/f", "no/f")),
        )


@needs_abi[2]
def test_refer(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "a", "b")
    src, dst = world_dir / "a/f", world_dir / "b/f"
    same_src, same_dst = world_dir / "a/g", world_dir / "a/h"
    ops: Ops = {"cross": lambda: os.rename(src, dst), "same": lambda: os.rename(same_src, same_dst)}

    def setup() -> None:
        rm(dst, same_dst)
        tree(world_dir, files=("a/f", "a/g"))

    base = ["remove_file", "make_reg"]
    with (
        Ruleset.build(fs_rules=[(str(world_dir), [*base, "refer"])]) as granted,
        Ruleset.build(fs_rules=[(str(world_dir), base)]) as denied,
    ):
        check(identity, granted, ops, {"cross": "OK", "same": "OK"}, setup=setup)
        check(identity, denied, ops, {"cross": "EXDEV", "same": "OK"}, setup=setup)


def test_refer_at_abi1_always_denied(
    identity: Identity, world_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(world_dir, "a", "b")
    src, dst = world_dir / "a/f", world_dir / "b/f"

    def setup() -> None:
        rm(dst)
        tree(world_dir, files=("a/f",))

    monkeypatch.setenv(ll.ABI_ENV, "1")
    # The rule asks for refer; ABI 1 cannot handle it, so it cannot be granted either.
    with Ruleset.build(fs_rules=[(str(world_dir), ["remove_file", "make_reg", "refer"])]) as rs:
        assert rs.abi == 1 and rs.dropped == []
        check(identity, rs, {"cross": lambda: os.rename(src, dst)}, {"cross": "EXDEV"}, setup=setup)


def test_make_char(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, "ok", "no")
    ok, no = world_dir / "ok/null", world_dir / "no/null"
    dev = os.makedev(1, 3)
    ops: Ops = {
        "ok": lambda: os.mknod(ok, stat.S_IFCHR | 0o666, dev),
        "no": lambda: os.mknod(no, stat.S_IFCHR | 0o666, dev),
    }
    privileged = identity is None and os.geteuid() == 0
    # Without CAP_MKNOD the kernel says EPERM; Landlock's check comes first and says EACCES.
    unconfined = "OK" if privileged else "EPERM"
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["make_char"])]) as rs:
        rm(ok, no)
        assert probe(identity, None, ops) == {"ok": unconfined, "no": unconfined}
        rm(ok, no)
        assert probe(identity, rs, ops) == {"ok": unconfined, "no": "EACCES"}
    if privileged:
        assert stat.S_ISCHR(ok.stat().st_mode)


def run_true() -> None:
    """fork + execv /usr/bin/true; raise the exec errno, as the child cannot exec itself."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execv("/usr/bin/true", ["true"])
        except OSError as e:
            os._exit(e.errno or 255)
        os._exit(255)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise OSError(code, os.strerror(code))


def test_execute(identity: Identity) -> None:
    read_usr = ("/usr", ["read_file", "read_dir"])
    cache = ("/etc/ld.so.cache", ["read_file"])
    ops: Ops = {"true": run_true}
    with (
        Ruleset.build(fs_rules=[("/usr", ["read_file", "read_dir", "execute"]), cache]) as ok,
        Ruleset.build(fs_rules=[read_usr, cache]) as no,
        Ruleset.build(fs_rules=[read_usr, cache, ("/usr/bin/true", ["execute"])]) as half,
    ):
        check(identity, ok, ops, {"true": "OK"})
        check(identity, no, ops, {"true": "EACCES"})
        # The binary alone is not enough: its ELF interpreter needs execute too.
        check(identity, half, ops, {"true": "EACCES"})


@needs_abi[4]
def test_tcp_connect(identity: Identity, listeners: tuple[int, int]) -> None:
    a, b = listeners
    with Ruleset.build(handled_fs=[], scoped=[], net_rules=[(a, ["connect_tcp"])]) as rs:
        check(identity, rs, {"a": connect(a), "b": connect(b)}, {"a": "OK", "b": "EACCES"})


@needs_abi[4]
def test_tcp_bind(identity: Identity) -> None:
    a, b = free_port(), free_port()
    with Ruleset.build(handled_fs=[], scoped=[], net_rules=[(a, ["bind_tcp"])]) as rs:
        check(identity, rs, {"a": bind(a), "b": bind(b)}, {"a": "OK", "b": "EACCES"})


@needs_abi[6]
def test_signal_scope(identity: Identity) -> None:
    assert signal_probe(identity, None) == {"sibling": "OK", "self": "OK"}
    with Ruleset.build(handled_fs=[], handled_net=[], scoped=["signal"]) as rs:
        assert signal_probe(identity, rs) == {"sibling": "EPERM", "self": "OK"}
    # Handling the other scope only leaves signals alone.
    with Ruleset.build(handled_fs=[], handled_net=[], scoped=["abstract_unix_socket"]) as rs:
        assert signal_probe(identity, rs) == {"sibling": "OK", "self": "OK"}


@needs_abi[6]
def test_abstract_unix_scope(identity: Identity) -> None:
    name = f"\0cvg-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen(16)

        def op() -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(name)

        with Ruleset.build(handled_fs=[], handled_net=[], scoped=["abstract_unix_socket"]) as rs:
            check(identity, rs, {"connect": op}, {"connect": "EPERM"})
        with Ruleset.build(handled_fs=[], handled_net=[], scoped=["signal"]) as rs:
            check(identity, rs, {"connect": op}, {"connect": "OK"})


@needs_abi[7]
def test_log_flags_accepted(identity: Identity, world_dir: Path) -> None:
    tree(world_dir, files=("f",))
    flags = ["log_same_exec_off", "log_new_exec_on", "log_subdomains_off"]
    with Ruleset.build(flags=flags) as rs:
        assert rs.flags == 0b111
        check(identity, rs, {"f": read(world_dir / "f")}, {"f": "EACCES"})


# ------------------------------------------------------------- simulated older kernels


@needs_abi[6]
@pytest.mark.parametrize(("cap", "sibling"), [("4", "OK"), ("6", "EPERM")])
def test_cap_decides_signal_scope(
    identity: Identity,
    listeners: tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
    cap: str,
    sibling: str,
) -> None:
    a, b = listeners
    monkeypatch.setenv(ll.ABI_ENV, cap)
    with Ruleset.build(handled_fs=[], net_rules=[(a, ["connect_tcp"])]) as rs:
        assert rs.abi == int(cap)
        assert rs.scoped == (0 if cap == "4" else 0b11)
        assert signal_probe(identity, rs) == {"sibling": sibling, "self": "OK"}
        # The ruleset is in force either way: TCP is restricted at both levels.
        check(identity, rs, {"a": connect(a), "b": connect(b)}, {"a": "OK", "b": "EACCES"})


@needs_abi[3]
@pytest.mark.parametrize(("cap", "truncate"), [("2", "OK"), ("3", "EACCES"), (None, "EACCES")])
def test_cap_decides_truncate(
    identity: Identity,
    world_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    cap: str | None,
    truncate: str,
) -> None:
    tree(world_dir, "ok", "no")
    f = world_dir / "no/f"

    def op_write() -> None:
        os.close(os.open(f, os.O_WRONLY))

    if cap is not None:
        monkeypatch.setenv(ll.ABI_ENV, cap)
    with Ruleset.build(fs_rules=[(str(world_dir / "ok"), ["write_file", "truncate"])]) as rs:
        check(
            identity,
            rs,
            {"truncate": lambda: os.truncate(f, 0), "write": op_write},
            {"truncate": truncate, "write": "EACCES"},
            setup=lambda: tree(world_dir, files=("no/f",)),
        )
