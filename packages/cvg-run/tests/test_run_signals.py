"""SIGINT, SIGTERM and SIGHUP sent to cvg-run reach the tool; then the whole
tree ends and the record is still written."""

from __future__ import annotations

import pwd
import signal
import subprocess
import time
from pathlib import Path

import pytest
from runhelp import (
    CVG_RUN,
    Box,
    cli_env,
    load_record,
    main,
    make_policy,
    only_record,
    procs_with,
    start,
    token,
    wait_for,
)

from cvg_testing import alive

Identity = pwd.struct_passwd | None
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]

# The tool handles the signal (writes a marker, then dies of it); its child
# ignores it, so only cvg-run's tree kill can end that one.
TOOL = r"""
import os, signal, sys, time
share, tok, signum = sys.argv[1], sys.argv[2], int(sys.argv[3])
child = os.fork()
if child == 0:
    signal.signal(signum, signal.SIG_IGN)
    time.sleep(100)
    os._exit(0)
def on(n, frame):
    with open(share + "/got", "w") as f:
        f.write(str(n))
    signal.signal(n, signal.SIG_DFL)
    os.kill(os.getpid(), n)
signal.signal(signum, on)
with open(share + "/ready.tmp", "w") as f:
    f.write(f"{os.getpid()} {child}")
os.rename(share + "/ready.tmp", share + "/ready")
time.sleep(100)
"""

# This one ignores the signal altogether: cvg-run ends it after a grace period.
DEAF = r"""
import os, signal, sys, time
share, tok, signum = sys.argv[1], sys.argv[2], int(sys.argv[3])
signal.signal(signum, signal.SIG_IGN)
with open(share + "/ready", "w") as f:
    f.write(f"{os.getpid()} 0")
time.sleep(100)
"""


def _policy(box: Box) -> Path:
    return make_policy(box.share, filesystem={"write": ["${SCRATCH}", "/dev/null", str(box.share)]})


def _ready(box: Box) -> list[int]:
    def read() -> list[int] | None:
        try:
            text = (box.share / "ready").read_text()
        except FileNotFoundError:
            return None
        return [int(x) for x in text.split()] if text.strip() else None

    pids: list[int] = wait_for(read, what="the tool to be ready")
    return pids


def _check_after(box: Box, sig: int, pids: list[int], tok: str) -> None:
    assert (box.share / "got").read_text() == str(int(sig))
    assert not any(alive(p) for p in pids)
    assert procs_with(tok) == []


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_console_script_forwards_and_records(as_root: None, box: Box, sig: int) -> None:
    tok = token()
    policy = _policy(box)
    rec_path = box.share / "run.json"
    argv = [str(CVG_RUN), "-p", str(policy), "--record", str(rec_path), "--",
            "python3", "-c", TOOL, str(box.share), tok, str(int(sig))]  # fmt: skip
    proc = subprocess.Popen(argv, env=cli_env(box), cwd=box.cwd, stderr=subprocess.PIPE)
    try:
        pids = _ready(box)
        assert all(alive(p) for p in pids)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    _check_after(box, sig, pids, tok)
    _, rec = load_record(rec_path)
    assert (rec.exit.meaning, rec.exit.signal, rec.exit.status) == ("signaled", sig, 128 + sig)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_forwarding_as_each_identity(identity: Identity, box: Box, sig: int) -> None:
    tok = token()
    policy = _policy(box)
    argv = ["--cwd", str(box.cwd), "-p", str(policy), "--",
            "python3", "-c", TOOL, str(box.share), tok, str(int(sig))]  # fmt: skip
    run = start(lambda: {"rc": main(argv)}, user=identity, env=box.env)
    pids = _ready(box)
    assert all(alive(p) for p in pids)
    run.signal(sig)
    ran = run.finish(20)
    assert ran.rc == 128 + sig, ran.err
    _check_after(box, sig, pids, tok)
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.signal) == ("signaled", sig)


def test_tool_ignoring_the_forwarded_signal_is_ended(identity: Identity, box: Box) -> None:
    tok = token()
    policy = _policy(box)
    sig = signal.SIGTERM
    argv = ["-p", str(policy), "--", "python3", "-c", DEAF, str(box.share), tok, str(int(sig))]
    full = ["--cwd", str(box.cwd), *argv]
    run = start(lambda: {"rc": main(full)}, user=identity, env=box.env)
    tool = _ready(box)[0]
    run.signal(sig)
    t0 = time.monotonic()
    time.sleep(0.5)
    assert alive(tool)  # it really ignores the signal
    ran = run.finish(20)
    took = time.monotonic() - t0
    assert ran.rc == 128 + sig, ran.err
    assert 1.0 < took < 10, took
    assert not alive(tool)
    assert procs_with(tok) == []
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.signal) == ("signaled", sig)
    assert "SIGTERM" in (rec.exit.detail or "")
