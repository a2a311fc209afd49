"""Process primitives on the real kernel: rlimit preparation, the subreaper,
the descendant scan and pidfd kills of a daemon that left its session."""

from __future__ import annotations

import os
import resource
import signal
import time

import pytest

from cvg_kernel import process
from cvg_kernel.libc import prctl
from cvg_testing import in_child

PR_SET_DUMPABLE = 4


def test_prepare_rlimits_forms() -> None:
    got = process.prepare_rlimits({"cpu": 5, "nofile": [32, 64], "core": 0})
    assert (resource.RLIMIT_CPU, 5, 5) in got
    assert (resource.RLIMIT_NOFILE, 32, 64) in got


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"bogus": 1}, "unknown rlimit 'bogus'"),
        ({"cpu": -1}, "not a non-negative integer"),
        ({"cpu": True}, "not a non-negative integer"),
        ({"cpu": [2, 1]}, "soft limit above hard"),
        ({"cpu": [1, 2, 3]}, "expected [soft, hard]"),
        ({"cpu": "lots"}, "not a non-negative integer"),
    ],
)
def test_prepare_rlimits_refuses(spec: dict, message: str) -> None:
    with pytest.raises(process.RlimitError, match=message.replace("[", r"\[")):
        process.prepare_rlimits(spec)


def test_rlimit_above_hard_is_refused() -> None:
    def child() -> str:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        try:
            process.prepare_rlimits({"nofile": 128})
        except process.RlimitError as e:
            return str(e)
        return "accepted"

    assert "above the current hard limit 64" in in_child(child).value


def test_no_new_privs_sets() -> None:
    def child() -> list[bool]:
        before = process.no_new_privs()
        process.set_no_new_privs()
        return [before, process.no_new_privs()]

    assert in_child(child).value == [False, True]


# A uid no account or other test uses: as root, the count of its processes is
# exact, where the caller's own count moves with every process the machine
# starts or ends meanwhile (a flaky test at a load average of 9).
_FRESH_UID = 61_873


def _hold_as(uid: int, ready: int) -> None:
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    prctl(PR_SET_DUMPABLE, 1)  # a changed uid leaves /proc/PID owned by root
    os.write(ready, b"x")
    time.sleep(30)
    os._exit(0)


def test_count_user_processes_counts_a_new_child() -> None:
    if os.geteuid() == 0:
        uid, expected_before = _FRESH_UID, 0
        assert process.count_user_processes(uid) == 0, f"uid {uid} is in use here"
    else:
        uid, expected_before = os.getuid(), None
    before = process.count_user_processes(uid)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if expected_before is not None:
                _hold_as(uid, w)
            os.write(w, b"x")
            time.sleep(30)
        finally:
            os._exit(0)
    os.close(w)
    try:
        assert os.read(r, 1) == b"x", "the child did not start"
        during = process.count_user_processes(uid)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
    if expected_before is None:
        assert during >= before + 1
    else:
        assert (before, during, process.count_user_processes(uid)) == (0, 1, 0)


def test_subreaper_catches_and_kills_a_setsid_double_fork_daemon() -> None:
    """The escape: a daemon that double-forks and calls setsid leaves its
    parent's process group and session. Without a subreaper it re-parents to
    init; with one it re-parents to us, the scan finds it, a pidfd kills it."""

    def supervisor(subreaper: bool) -> dict:
        if subreaper:
            process.set_child_subreaper()
        r, w = os.pipe()
        tool = os.fork()
        if tool == 0:
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.write(w, str(os.getpid()).encode())
                    time.sleep(60)
                os._exit(0)
            os._exit(0)
        os.close(w)
        daemon = int(os.read(r, 32))
        os.waitpid(tool, 0)
        time.sleep(0.1)
        ppid = process.parent_of(daemon)
        found = daemon in process.descendants(os.getpid())
        pidfd = process.pidfd_open(daemon)
        process.pidfd_send_signal(pidfd, signal.SIGKILL)
        if subreaper:
            os.waitpid(daemon, 0)  # ours to reap
        else:
            for _ in range(100):  # init reaps it
                if process.parent_of(daemon) is None:
                    break
                time.sleep(0.01)
        os.close(pidfd)
        return {
            "ppid": ppid,
            "found": found,
            "alive": process.parent_of(daemon) is not None,
            "me": os.getpid(),
        }

    without = in_child(lambda: supervisor(False)).value
    assert without["ppid"] != without["me"] and not without["found"]
    with_ = in_child(lambda: supervisor(True)).value
    assert with_["ppid"] == with_["me"] and with_["found"]
    assert not with_["alive"]


def test_pidfd_of_reaped_process_is_esrch() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    with pytest.raises(OSError) as e:
        process.pidfd_open(pid)
    assert e.value.errno == 3  # ESRCH


def test_cloexec_from_marks_inherited_descriptors() -> None:
    def child() -> list[bool]:
        fd = os.open("/dev/null", os.O_RDONLY)
        os.set_inheritable(fd, True)
        before = os.get_inheritable(fd)
        process.cloexec_from(3)
        return [before, os.get_inheritable(fd), os.get_inheritable(1)]

    assert in_child(child).value == [True, False, True]


def test_descendants_walk_matches_the_full_scan() -> None:
    """The fast walk over children files and the portable /proc scan agree on a
    tree three deep with a thread that has children of its own."""

    def child() -> dict:
        import threading

        r, w = os.pipe()
        pids = []

        def spawn_sleeper() -> None:
            pid = os.fork()
            if pid == 0:
                if os.fork() == 0:  # grandchild
                    os.write(w, b"x")
                    time.sleep(30)
                    os._exit(0)
                time.sleep(30)
                os._exit(0)
            pids.append(pid)

        spawn_sleeper()
        t = threading.Thread(target=spawn_sleeper)  # a child forked by another thread
        t.start()
        t.join()
        os.read(r, 1)
        os.read(r, 1)
        fast = sorted(process.descendants(os.getpid()))
        slow = sorted(process.descendants_by_scan(os.getpid()))
        for pid in fast:  # grandchildren too: they hold in_child's result pipe
            os.kill(pid, signal.SIGKILL)
        return {"fast": fast, "slow": slow}

    got = in_child(child).value
    assert len(got["fast"]) == 4
    assert got["fast"] == got["slow"]
