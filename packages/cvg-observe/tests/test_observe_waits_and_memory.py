"""What cvg-observe records beyond file and network events: memory, measured, and waits.

A tool that waits for its client's input leaves ``wait`` events: read of a stdin that
is a pipe, accept on a listening socket. A tool whose stdin is /dev/null or a file
leaves none, however much it reads."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cvg_observe.serving import InputWaits
from cvg_schema import Observation, loads
from cvg_trace.parse import TraceParser

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")

ECHO = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n"


def _observe(tmp_path: Path, stdin: object, *argv: str) -> Observation:
    proc = subprocess.run(
        [sys.executable, "-m", "cvg_observe", "--", *argv],
        stdin=stdin,  # type: ignore[arg-type]
        capture_output=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    msg = loads(proc.stdout)
    assert isinstance(msg, Observation)
    return msg


def _waits_when_fed(tmp_path: Path, code: str) -> list:
    """The wait events of a Python tool ``code`` observed with two lines piped in."""
    (tmp_path / "tool.py").write_text(code)
    feeder = subprocess.Popen(["printf", "a\\nb\\n"], stdout=subprocess.PIPE)
    try:
        o = _observe(tmp_path, feeder.stdout, sys.executable, "tool.py")
    finally:
        feeder.wait()
    return [e for e in o.events if e.op == "wait"]


def test_reading_a_piped_stdin_is_a_wait(tmp_path: Path) -> None:
    waits = _waits_when_fed(tmp_path, ECHO)
    assert waits and all(e.address == "stdin (pipe)" for e in waits)
    assert {e.syscall for e in waits} <= {"read", "readv", "recvfrom", "recvmsg"}
    per = {(e.pid, e.syscall) for e in waits}
    assert len(waits) <= 3 * len(per)


def test_a_stdin_of_dev_null_or_a_file_is_no_wait(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO)
    (tmp_path / "in.txt").write_text("a\nb\n")
    with open(tmp_path / "in.txt", "rb") as f:
        from_file = _observe(tmp_path, f, sys.executable, "echo.py")
    from_null = _observe(tmp_path, subprocess.DEVNULL, sys.executable, "echo.py")
    for o in (from_file, from_null):
        assert not [e for e in o.events if e.op == "wait"]


def test_accept_is_a_wait_naming_the_socket_and_listen_alone_is_not() -> None:
    parser = TraceParser()
    waits = InputWaits(None)
    lines = [
        "7 1.0 listen(3<TCP:[127.0.0.1:8000]>, 128) = 0",
        "7 1.1 accept4(3<TCP:[127.0.0.1:8000]>, NULL, NULL, SOCK_CLOEXEC) = 4",
        "7 1.2 read(0, 0x1000, 0x1000) = 0x10",  # stdin is not a pipe here: no wait
    ]
    out = [w for line in lines if (r := parser.feed(line)) and (w := waits.see(r))]
    assert [(w.op, w.syscall, w.address) for w in out] == [
        ("wait", "accept4", "TCP:[127.0.0.1:8000]"),
    ]


def test_peak_memory_is_measured(tmp_path: Path) -> None:
    code = "import time; b = bytearray(200 << 20); time.sleep(0.6); print(len(b))"
    o = _observe(tmp_path, subprocess.DEVNULL, sys.executable, "-c", code)
    assert o.peak_rss_kb is not None and o.peak_rss_kb >= 200 * 1024
    assert o.tree_rss_kb is not None and o.tree_rss_kb >= 200 * 1024


# As mcp 2.x's stdio server does: stdin copied above the standard descriptors, fd 0
# pointed elsewhere, requests read from the copy.
DIVERTED = (
    "import os\n"
    "wire = os.dup(0)\n"
    "os.dup2(os.open(os.devnull, os.O_RDONLY), 0)\n"
    "while chunk := os.read(wire, 4096):\n"
    "    os.write(1, chunk.upper())\n"
)


def test_reading_a_copy_of_stdin_is_a_wait(tmp_path: Path) -> None:
    waits = _waits_when_fed(tmp_path, DIVERTED)
    assert waits and all(e.address == "stdin (pipe)" for e in waits)
