"""memfd_create on kernels before Linux 6.3, which refuse MFD_NOEXEC_SEAL (EINVAL).

Measured on Debian's 6.1 under qemu (docs/kernels.md): requiring the seal there refused
every memfd. Here the kernel's answer is stood in for; the filter that results is checked
against the real kernel of this machine."""

from __future__ import annotations

import errno
import os

import pytest

from cvg_kernel import libc, seccomp
from cvg_kernel.plan import prepare

PLAN = {
    "kind": "cvg.plan",
    "schema_version": "1.0",
    "landlock": {"fs_rules": [{"path": "/", "access": ["read_file", "read_dir", "execute"]}]},
}
MFD_CLOEXEC = 0x1


def test_this_kernel_knows_the_seal() -> None:
    # 6.3 and later: the filter keeps requiring the seal.
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    assert seccomp.memfd_noexec_seal_supported() is ((major, minor) >= (6, 3))
    prepared = prepare(PLAN, {})
    try:
        assert not any(n.item == "seccomp.memfd_noexec" for n in prepared.notes)
    finally:
        prepared.close()


def test_without_the_seal_memfd_is_allowed_unsealed_and_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(seccomp, "_noexec_seal", False)
    prepared = prepare(PLAN, {})
    try:
        (note,) = [n for n in prepared.notes if n.item == "seccomp.memfd_noexec"]
        assert "Landlock" in note.reason
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                prepared.apply()
                nr = seccomp.table(libc.machine())["memfd_create"]
                fd = libc.syscall(nr, b"x", MFD_CLOEXEC)  # no seal: allowed now
                code = 0 if fd >= 0 else 2
            except OSError as e:
                code = 10 + (e.errno or 0) % 100 if e.errno != errno.EPERM else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        prepared.close()
