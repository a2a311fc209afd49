"""The shared helpers' own contracts: what the tests of every package lean on."""

from __future__ import annotations

import os
import socket
import stat
import subprocess

import pytest

from cvg_testing import Sink, Tree, Under, alive, spawn, tree_root


@pytest.mark.parametrize("kind", ["tcp", "udp"])
def test_sink_keeps_every_byte_sent_before_it_closes(kind: str) -> None:
    sink = Sink(kind)
    if kind == "tcp":
        for part in (b"one ", b"two"):
            with socket.create_connection(sink.addr) as s:
                s.sendall(part)
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"one two", sink.addr)
    assert sink.close() == b"one two"


def test_sink_on_a_unix_path_and_an_untouched_one(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "sink.sock")
    with (
        Sink("unix", path) as reached,
        Sink("tcp") as untouched,
        socket.socket(socket.AF_UNIX) as s,
    ):
        s.connect(path)
        s.sendall(b"exfil")
        s.close()  # the sink reads to the end of the stream before it closes
    assert (reached.received, untouched.received) == (b"exfil", b"")


def test_tree_root_modes_and_names() -> None:
    root = tree_root("cvg-testing-test-", "extra", "ro", mode=0o755, readonly=("ro",))
    try:
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in root.iterdir()}
        assert stat.S_IMODE(root.stat().st_mode) == 0o755
        assert modes == {
            "home": 0o777, "state": 0o777, "cache": 0o777, "tmp": 0o777, "cwd": 0o777,
            "extra": 0o777, "ro": 0o755,
        }  # fmt: skip

        class Mine(Tree):
            extra = Under("extra")

        t = Mine(root)
        assert (t.extra, t.runs) == (root / "extra", root / "state" / "cvg" / "runs")
        assert t.xdg_env() == {
            "HOME": str(root / "home"), "XDG_STATE_HOME": str(root / "state"),
            "XDG_CACHE_HOME": str(root / "cache"), "TMPDIR": str(root / "tmp"),
        }  # fmt: skip
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=True)


def test_alive_tells_a_running_process_from_a_zombie_and_a_reaped_one() -> None:
    p = subprocess.Popen(["sleep", "30"])
    try:
        assert alive(p.pid)
        p.kill()
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # a zombie, not yet reaped
        assert not alive(p.pid)
    finally:
        p.kill()
        p.wait()
    assert not alive(p.pid)


def test_a_spawned_childs_output_and_status_come_back() -> None:
    def child() -> int:
        print("out")
        os.write(2, b"err")
        return 3

    got = spawn(child)
    assert (got.exitcode, got.stdout, got.stderr) == (3, b"out\n", b"err")


def test_wilson_interval() -> None:
    from cvg_testing import wilson

    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(0, 16)
    assert low == 0.0 and 0.19 < high < 0.20
    low, high = wilson(8, 16)
    assert 0.27 < low < 0.28 and 0.72 < high < 0.73 and abs(low + high - 1) < 1e-9
