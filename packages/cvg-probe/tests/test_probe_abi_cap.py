"""CVG_LANDLOCK_ABI_MAX: the probe tests only what the capped ABI offers, and says why."""

from __future__ import annotations

import pytest
from probe_expect import KERNEL_ABI, LANDLOCK_ABI, assert_feature

from cvg_kernel.landlock import ABI_ENV
from cvg_probe import FEATURES, ProbeError, run_probes
from cvg_testing import needs_abi


@needs_abi(6)
def test_cap_4_withholds_scopes_and_ioctl_dev(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ABI_ENV, "4")
    facts = run_probes()
    assert facts.landlock_abi == KERNEL_ABI
    assert facts.landlock_abi_cap == 4
    capped = " (capped by CVG_LANDLOCK_ABI_MAX=4)"
    for name in ("landlock.scope.signal", "landlock.scope.abstract_unix_socket"):
        f = facts.feature(name)
        assert f is not None and not f.proven
        assert f.error == "needs Landlock ABI 6; this kernel offers 4" + capped
        assert f.abi == 6
    ioctl = facts.feature("landlock.fs.ioctl_dev")
    assert ioctl is not None and not ioctl.proven
    assert ioctl.error == "needs Landlock ABI 5; this kernel offers 4" + capped
    for name in FEATURES:
        assert_feature(facts, name, effective=4, cap=4)
    # Still proven at 4: TCP, truncate, refer and the ABI itself.
    for name in (
        "landlock.net.connect_tcp",
        "landlock.net.bind_tcp",
        "landlock.fs.truncate",
        "landlock.fs.refer",
        "landlock.abi",
    ):
        assert facts.proven(name), name
    abi = facts.feature("landlock.abi")
    assert abi is not None and "every right of ABI 4" in abi.how


@needs_abi(6)
def test_cap_6_proves_the_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ABI_ENV, "6")
    facts = run_probes()
    assert facts.landlock_abi_cap == 6
    assert facts.proven("landlock.scope.signal")
    assert facts.proven("landlock.scope.abstract_unix_socket")
    assert facts.proven("landlock.fs.ioctl_dev")
    for name in FEATURES:
        assert_feature(facts, name, effective=6, cap=6 if KERNEL_ABI > 6 else None)


def test_cap_0_means_no_landlock_but_the_rest_is_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ABI_ENV, "0")
    facts = run_probes()
    assert facts.landlock_abi_cap == 0
    for name in FEATURES:
        f = facts.feature(name)
        assert f is not None
        if name in LANDLOCK_ABI:
            assert not f.proven
            assert f.error is not None and f.error.startswith(
                f"needs Landlock ABI {LANDLOCK_ABI[name]}; this kernel offers"
            )
    assert facts.proven("seccomp.filter")
    assert facts.proven("no_new_privs")


def test_cap_above_the_kernel_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ABI_ENV, "99")
    facts = run_probes()
    assert facts.landlock_abi_cap == 99
    for name in FEATURES:
        assert_feature(facts, name)  # no "(capped by ...)" in any error


def test_empty_cap_is_no_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ABI_ENV, "")
    assert run_probes().landlock_abi_cap is None


@pytest.mark.parametrize("bad", ["four", "-1", "+4", " 4"])
def test_invalid_cap_is_a_probe_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(ABI_ENV, bad)
    with pytest.raises(ProbeError, match=ABI_ENV):
        run_probes()
