"""The pieces behind the verdicts: the tsync harness and the interpretation of
results, fed outcomes that must *not* count as proof."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cvg_kernel import landlock, seccomp
from cvg_kernel.process import PR_SET_NO_NEW_PRIVS
from cvg_probe._fork import Outcome
from cvg_probe._landlock import LandlockState, landlock_state
from cvg_probe._landlock_flags import try_layer
from cvg_probe._landlock_fs import _ANYTHING_BUT_DENIAL, FS_CHECKS, LandlockFsGroup
from cvg_probe._libc import prctl
from cvg_probe._seccomp import SeccompGroup
from cvg_testing import in_child, needs_abi, require_abi


def _make_reg(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


@needs_abi(1)
@pytest.mark.parametrize("flags", [[], ["tsync"]])
def test_other_thread_harness(tmp_path: Path, flags: list[str]) -> None:
    """Without tsync the thread started before restrict_self is outside the new layer;
    with it (ABI 8) it is inside. The harness must tell the two apart."""
    if flags:
        require_abi(8)  # tsync
    ruleset = landlock.Ruleset.build(
        handled_fs=["make_reg"], handled_net=[], scoped=[], flags=flags
    )

    def body() -> dict[str, str]:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        return try_layer(ruleset, _make_reg, str(tmp_path / "f"), other_thread=True)

    try:
        child = in_child(body)
    finally:
        ruleset.close()
    assert child.error is None, child.error
    want_other = "EACCES" if flags else "OK"
    assert child.value == {
        "before": "OK", "restrict": "OK", "after": "EACCES", "other thread": want_other,
    }  # fmt: skip


@pytest.fixture
def fs_group(tmp_path: Path) -> Iterator[LandlockFsGroup]:
    require_abi(3)
    group = LandlockFsGroup(landlock_state(), str(tmp_path))
    try:
        yield group
    finally:
        group.close()


def _fs_outcome(group: LandlockFsGroup, **override: list[str]) -> Outcome:
    checks: dict[str, Any] = {}
    for c in group.checks:
        checks[c.right] = [
            sorted(c.ok)[0] if c.ok != _ANYTHING_BUT_DENIAL else "ENOTTY",
            c.denied,
        ]
    checks.update(override)
    return Outcome(report={"restrict": "OK", "checks": checks}, status=0)


def test_fs_interpretation_accepts_the_expected_pattern(fs_group: LandlockFsGroup) -> None:
    features = fs_group.results(_fs_outcome(fs_group))
    assert all(f.proven for f in features), [f for f in features if not f.proven]


def test_fs_denial_that_did_not_happen_is_not_proof(fs_group: LandlockFsGroup) -> None:
    features = {f.name: f for f in fs_group.results(_fs_outcome(fs_group, read_file=["OK", "OK"]))}
    f = features["landlock.fs.read_file"]
    assert not f.proven
    assert f.error == "open(O_RDONLY) of a file without read_file gave OK, not EACCES"
    assert features["landlock.fs.write_file"].proven


def test_fs_failed_control_is_not_proof(fs_group: LandlockFsGroup) -> None:
    out = _fs_outcome(fs_group, execute=["EACCES", "EACCES"], refer=["EXDEV", "EXDEV"])
    features = {f.name: f for f in fs_group.results(out)}
    assert not features["landlock.fs.execute"].proven
    assert "noexec" in (features["landlock.fs.execute"].error or "")
    assert not features["landlock.fs.refer"].proven
    assert (features["landlock.fs.refer"].error or "").startswith("control failed")


def test_fs_restrict_failure_fails_every_fs_feature(fs_group: LandlockFsGroup) -> None:
    out = Outcome(report={"restrict": "LandlockError: EPERM"}, status=0)
    features = fs_group.results(out)
    assert features and not any(f.proven for f in features)


def test_timed_out_or_importing_child_proves_nothing(fs_group: LandlockFsGroup) -> None:
    good = _fs_outcome(fs_group)
    for bad in (
        Outcome(report=good.report, status=None, timed_out=True),
        Outcome(report={**good.report, "_imported": ["colorsys"]}, status=0),
        Outcome(report={**good.report, "_error": "RuntimeError: x"}, status=70 << 8),
        Outcome(report={}, status=0),
    ):
        assert not any(f.proven for f in fs_group.results(bad))


def test_arch_trap_needs_sigsys() -> None:
    group = SeccompGroup("x86_64", seccomp.table("x86_64"))
    try:
        base = {"install": "OK", "getpid": "OK"}
        returned = {f.name: f for f in group.results(
            Outcome(report={**base, "int 0x80": "returned 7 instead of killing the process"},
                    status=0))}  # fmt: skip
        assert not returned["seccomp.arch_trap"].proven
        segv = {f.name: f for f in group.results(Outcome(report=base, status=11))}
        assert "SIGSEGV" in (segv["seccomp.arch_trap"].error or "")
        sigsys = {f.name: f for f in group.results(Outcome(report=base, status=31))}
        assert sigsys["seccomp.arch_trap"].proven
        assert sigsys["seccomp.filter"].proven
        assert not sigsys["seccomp.errno"].proven  # no unshare results: no proof
    finally:
        group.close()


def test_abi_shortfall_messages() -> None:
    state = LandlockState(kernel=7, effective=4, cap=4)
    assert state.lacks(4) is None
    assert (
        state.lacks(6) == "needs Landlock ABI 6; this kernel offers 4 (capped by "
        "CVG_LANDLOCK_ABI_MAX=4)"
    )
    assert LandlockState(4, 4, None).lacks(5) == "needs Landlock ABI 5; this kernel offers 4"
    assert LandlockState(0, 0, None).lacks(1) == (
        "needs Landlock ABI 1; this kernel offers no Landlock (ABI 0)"
    )
    assert LandlockState(7, 7, 9).lacks(8) == "needs Landlock ABI 8; this kernel offers 7"


@pytest.mark.parametrize(("right", "kind"), [("make_char", "S_IFCHR"), ("make_block", "S_IFBLK")])
def test_device_checks_make_a_real_device(
    right: str, kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A character device 0:0 is a whiteout, which some kernels let through without
    make_char (landlock-lsm/linux#63): its denial would prove nothing about devices."""
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "mknod", lambda _path, mode, dev: calls.append((mode, dev)))
    (check,) = [c for c in FS_CHECKS if c.right == right]
    check.op(str(tmp_path))
    ((mode, dev),) = calls
    assert stat.S_IFMT(mode) == getattr(stat, kind)
    assert dev != 0 and os.major(dev) != 0
