"""A run's cgroup on the real kernel: made where the caller may, exact at pids.max,
and gone after close(); None where it may not (the caller then samples)."""

from __future__ import annotations

import errno
import os
import pwd

from cvg_kernel import cgroup
from cvg_testing import in_child


def _fork_in(group: cgroup.RunCgroup | None) -> list[str]:
    """Two forks in a child that joined ``group`` (pids.max 2 counts that child),
    or in a plain child for None. The grandchildren live until the report is read."""
    report_r, report_w = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the joined process
        try:
            os.close(report_r)
            os.close(hold_w)
            if group is not None:
                group.enter()
            got = []
            for _ in range(2):
                try:
                    kid = os.fork()
                except OSError as e:
                    got.append(errno.errorcode[e.errno or 0])
                    continue
                if kid == 0:
                    os.close(report_w)
                    os.read(hold_r, 1)  # EOF once the test has its report
                    os._exit(0)
                got.append("OK")
            os.write(report_w, ",".join(got).encode())
            os.close(report_w)
            while True:
                try:
                    os.wait()
                except ChildProcessError:
                    break
        finally:
            os._exit(0)
    os.close(report_w)
    os.close(hold_r)
    report = os.read(report_r, 64).decode().split(",")
    os.close(hold_w)
    os.close(report_r)
    os.waitpid(pid, 0)
    return report


def test_pids_max_is_exact_where_a_cgroup_can_be_made(
    identity: pwd.struct_passwd | None,
) -> None:
    def child() -> object:
        bare = _fork_in(None)
        group = cgroup.make(None, 2)
        if group is None:
            return {"bare": bare, "forks": None}
        dirs = list(group.dirs)
        try:
            return {"bare": bare, "forks": _fork_in(group)}
        finally:
            group.close()
            assert not any(os.path.exists(d) for d in dirs)

    got = in_child(child, user=identity)
    assert got.error is None, got.error
    assert got.value["bare"] == ["OK", "OK"]
    if identity is None:
        # Root, with cgroup v1 (this machine) or v2 (the real-kernel VMs) mounted.
        assert got.value["forks"] == ["OK", "EAGAIN"]
    else:
        # The unprivileged user has no delegated cgroup on these machines: None,
        # and its runs are sampled.
        assert got.value["forks"] is None


def test_a_limit_is_only_asked_for_when_set() -> None:
    assert cgroup.make(None, None) is None
