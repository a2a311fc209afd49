"""End to end on the real kernel: cvg-observe runs commands under strace, confined by
cvg's own learning sandbox unless --unconfined, and prints one cvg.observation."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cvg_kernel.landlock import ABI_ENV
from cvg_observe.cli import UNCONFINED_WARNING, main
from cvg_schema import Observation, loads, loads_as

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")

PY = sys.executable
KEY = "-----BEGIN FAKE KEY----- s3cr3t-c0ntent"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a file and a subdirectory, and a fake home with a key."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    cwd = tmp_path / "work"
    (cwd / "sub").mkdir(parents=True)
    (cwd / "x").write_text("the x file\n")
    (cwd / "hello.txt").write_text("hello from the file\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv(ABI_ENV, raising=False)
    monkeypatch.delenv("CVG_STRACE", raising=False)
    monkeypatch.chdir(cwd)
    return cwd


def run(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def observation(out: str) -> Observation:
    assert out.endswith("\n") and out.count("\n") == 1, "stdout must be exactly one JSON line"
    return loads_as(Observation, out)


def test_cat_a_file(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capfd, "--", "cat", "hello.txt")
    assert code == 0
    obs = observation(out)  # stdout is exactly the observation...
    assert "hello from the file" in err  # ...and the tool's own stdout went to stderr
    assert "hello from the file" not in out
    assert obs.argv == ["cat", "hello.txt"] and obs.cwd == str(work)
    assert obs.home == os.environ["HOME"] and obs.exit_status == 0
    assert len(obs.scratch) == 1 and not os.path.exists(obs.scratch[0])  # removed after
    assert obs.strace_version and obs.strace_version[0].isdigit()
    first = obs.events[0]
    assert (first.id, first.op, first.syscall, first.result) == ("e1", "execute", "execve", "ok")
    assert first.path is not None and first.path.endswith("/cat")
    # Confining the held process (a fork of cvg-observe) is not in the observation.
    assert not any("cvg_kernel" in (e.path or "") for e in obs.events)
    reads = [e for e in obs.events if e.path == str(work / "hello.txt")]
    assert [(e.op, e.syscall, e.result) for e in reads] == [("read", "openat", "ok")]
    assert reads[0].pid == first.pid and reads[0].time is not None
    assert [e.path for e in obs.executables] == [first.path]
    assert obs.executables[0].event_id == "e1"
    assert obs.executables[0].interpreter is not None
    assert any("learning sandbox" in n for n in obs.notes)


def test_shell_cd_and_relative_path(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capfd, "--", "sh", "-c", "cd sub && cat ../x")
    assert code == 0, err
    obs = observation(out)
    assert "the x file" in err
    chdirs = [(e.op, e.path, e.result) for e in obs.events if e.op == "chdir"]
    assert chdirs == [("chdir", str(work / "sub"), "ok")]
    reads = [e for e in obs.events if e.path == str(work / "x")]
    assert [(e.op, e.result) for e in reads] == [("read", "ok")]
    sh = obs.events[0]
    assert reads[0].pid != sh.pid  # cat ran in a forked child, with the cwd it inherited
    assert [Path(e.path).name for e in obs.executables] == ["sh", "cat"]


@pytest.fixture
def tcp_server() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve() -> None:
        try:
            conn, _ = srv.accept()
            conn.sendall(b"pong")
            conn.close()
        except OSError:
            pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield port
    srv.close()
    t.join(5)


def test_python_connects_to_a_loopback_server(
    work: Path, tcp_server: int, capfd: pytest.CaptureFixture[str]
) -> None:
    (work / "client.py").write_text(
        "import socket, sys\n"
        f"s = socket.create_connection(('127.0.0.1', {tcp_server}))\n"
        "print(s.recv(4).decode())\n"
    )
    code, out, err = run(capfd, "--", PY, "client.py")
    assert code == 0, err
    assert "pong" in err
    obs = observation(out)
    connects = [e for e in obs.events if e.op == "connect"]
    assert [(e.port, e.address, e.family, e.sock_type, e.result) for e in connects] == [
        (tcp_server, "127.0.0.1", "inet", "stream", "ok")
    ]
    assert connects[0].source is None  # allowed while learning
    sockets = [(e.family, e.sock_type, e.result) for e in obs.events if e.op == "socket"]
    assert ("inet", "stream", "ok") in sockets


SECRET_READER = """\
import os, sys
try:
    with open(os.path.expanduser("~/.ssh/id_rsa")) as f:
        print(f.read())
except OSError as e:
    print("refused:", e.strerror)
    sys.exit(3)
"""


def test_secret_read_is_refused_and_marked(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (work / "steal.py").write_text(SECRET_READER)
    code, out, err = run(capfd, "--", PY, "steal.py")
    assert code == 3  # the tool's own status
    assert "refused: Permission denied" in err
    assert KEY not in out and KEY not in err
    obs = observation(out)
    key = os.path.join(os.environ["HOME"], ".ssh", "id_rsa")
    hits = [e for e in obs.events if e.path == key]
    assert [(e.op, e.syscall, e.result) for e in hits] == [("read", "openat", "EACCES")]
    assert (hits[0].denied_while_learning, hits[0].denied_by) == (True, "landlock")
    assert obs.exit_status == 3
    assert any(os.path.join(os.environ["HOME"], ".ssh") in n for n in obs.notes)


def test_unconfined_warns_and_is_not_a_sandbox(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (work / "steal.py").write_text(SECRET_READER)
    code, out, err = run(capfd, "--unconfined", "--", PY, "steal.py")
    assert code == 0
    assert UNCONFINED_WARNING in err
    assert KEY in err  # read for real: the tool's stdout went to stderr
    assert KEY not in out
    obs = observation(out)
    key = os.path.join(os.environ["HOME"], ".ssh", "id_rsa")
    hits = [e for e in obs.events if e.path == key]
    assert [(e.op, e.result, e.source) for e in hits] == [("read", "ok", None)]
    # strace starts the tool itself: the first event is the tool's own exec.
    assert obs.events[0].path == PY and obs.events[0].op == "execute"
    assert any("--unconfined" in n for n in obs.notes)


def test_seccomp_denied_calls_are_seen_and_marked(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (work / "esc.py").write_text(
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.unshare(0x20000), ctypes.get_errno())\n"  # CLONE_NEWNS
        "import socket\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX)\n"
        "except OSError as e:\n"
        "    print('unix', e.errno)\n"
    )
    code, out, err = run(capfd, "--", PY, "esc.py")
    assert code == 0, err
    assert "-1 1" in err  # EPERM from cvg's seccomp filter
    obs = observation(out)
    unshare = [e for e in obs.events if e.syscall == "unshare"]
    assert [(e.op, e.result) for e in unshare] == [("other", "EPERM")]
    assert (unshare[0].denied_while_learning, unshare[0].denied_by) == (True, "seccomp")
    unix = [e for e in obs.events if e.op == "socket" and e.family == "unix"]
    assert [(e.result, e.denied_while_learning) for e in unix] == [("EAFNOSUPPORT", True)]


FORGER = """\
import os
where = f"/proc/{os.getppid()}/fd"
try:
    names = os.listdir(where)
except OSError as e:
    print("cannot list", e.errno)
    names = [str(n) for n in range(3, 64)]
opened = []
for name in names:
    try:
        fd = os.open(f"{where}/{name}", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    opened.append(name)
    os.write(fd, b'1 1.0 openat(AT_FDCWD</w>, "/forged", O_RDONLY) = 3</forged>\\n')
print("opened", opened)
"""


def test_the_tool_cannot_write_the_trace(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The trace's pipe is reachable only as cvg-observe's own descriptor, through /proc,
    which Landlock keeps a sandboxed process out of."""
    (work / "forge.py").write_text(FORGER)
    code, out, err = run(capfd, "--", PY, "forge.py")
    assert code == 0, err
    assert "opened []" in err
    assert not [e for e in observation(out).events if e.path == "/forged"]


def test_writes_outside_the_write_roots_are_refused(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    target = "/etc/cvg-observe-test-must-not-exist"
    (work / "w.py").write_text(
        "import os\n"
        f"try:\n    open({target!r}, 'w')\nexcept OSError as e:\n    print(e.errno)\n"
        "open('made-here.txt', 'w').write('ok')\n"
        "import tempfile\n"
        "with tempfile.NamedTemporaryFile() as f: print(os.path.dirname(f.name))\n"
    )
    code, out, err = run(capfd, "--", PY, "w.py")
    assert code == 0, err
    assert not os.path.exists(target)
    assert (work / "made-here.txt").read_text() == "ok"
    obs = observation(out)
    refused = [e for e in obs.events if e.path == target]
    assert [(e.op, e.result, e.denied_by) for e in refused] == [("create", "EACCES", "landlock")]
    made = [e for e in obs.events if e.path == str(work / "made-here.txt")]
    assert [(e.op, e.result, e.denied_while_learning) for e in made] == [("create", "ok", False)]
    assert obs.scratch[0] in err  # $TMPDIR pointed the tool at the scratch directory


def test_out_file_leaves_stdio_alone(
    work: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "obs.json"
    code, out, _ = run(capfd, "--out", str(dest), "--", "cat", "hello.txt")
    assert code == 0
    assert out == "hello from the file\n"  # the tool's stdout is its own again
    obs = loads_as(Observation, dest.read_bytes())
    assert any(e.path == str(work / "hello.txt") for e in obs.events)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".obs.json.")]


def test_out_dir_keeps_one_observation_per_session(
    work: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sessions = tmp_path / "state" / "server"  # made on first use
    for text in ("hello.txt", "x"):
        code, out, _ = run(capfd, "--out-dir", str(sessions), "--", "cat", text)
        assert code == 0 and out.endswith("\n") and "kind" not in out
    files = sorted(sessions.iterdir())
    assert len(files) == 2 and all(f.suffix == ".json" for f in files), files
    read = {e.path for f in files for e in loads_as(Observation, f.read_bytes()).events}
    assert {str(work / "hello.txt"), str(work / "x")} <= read
    assert sessions.stat().st_mode & 0o777 == 0o700
    code, _, err = run(capfd, "--out-dir", str(sessions), "--out", "o.json", "--", "true")
    assert code == 2 and "--out and --out-dir" in err
    assert len(list(sessions.iterdir())) == 2


def test_an_out_dir_that_cannot_be_made_is_a_usage_error(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capfd, "--out-dir", "/proc/no-such/dir", "--", "true")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "cvg-observe: --out-dir /proc/no-such/dir: No such file or directory "
        "(see 'cvg-observe --help')"
    ]


def test_exit_status_is_the_tools(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capfd, "--", "sh", "-c", "exit 7")
    assert code == 7 and observation(out).exit_status == 7
    code, out, _ = run(capfd, "--", "sh", "-c", "kill -TERM $$")
    assert code == 128 + 15 and observation(out).exit_status == 128 + 15


def test_stdin_reaches_the_tool(work: Path) -> None:
    # A real process: stdin must be the caller's, stdout exactly one observation.
    proc = subprocess.run(
        [sys.executable, "-m", "cvg_observe", "--", "sh", "-c", "read line; echo got:$line"],
        input=b"ping\n",
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.endswith(b"got:ping\n")
    msg = loads(proc.stdout)
    assert isinstance(msg, Observation)
    assert proc.stdout.count(b"\n") == 1


def test_strace_missing(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capfd, "--strace", "/nonexistent/strace", "--", "true")
    assert code == 125 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "strace not found" in lines[0]


@pytest.mark.parametrize("mode", [[], ["--unconfined"]])
def test_a_strace_that_fails_is_blamed_not_the_command(
    work: Path, capfd: pytest.CaptureFixture[str], mode: list[str]
) -> None:
    false = shutil.which("false")
    assert false is not None
    code, out, err = run(capfd, *mode, "--strace", false, "--", "true")
    lines = [x for x in err.strip().splitlines() if not x.startswith(UNCONFINED_WARNING)]
    assert code == 125 and out == "", err
    assert lines == [f"cvg-observe: strace {false} exited 1 before the command started"]
    code, out, _ = run(capfd, "--help")
    assert code == 0 and "strace missing, or failing before the" in " ".join(out.split())


def test_a_strace_that_never_attaches_is_blamed(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    true = shutil.which("true")
    assert true is not None
    code, out, err = run(capfd, "--strace", true, "--", "sh", "-c", "echo ran")
    assert code == 125 and out == "" and "ran" not in err
    assert err.strip().splitlines() == [f"cvg-observe: strace {true} did not attach to the command"]


def test_usage_errors(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capfd)
    assert code == 2 and out == ""
    code, out, err = run(capfd, "--")
    assert code == 2 and out == "" and "no command given" in err
    code, out, err = run(capfd, "--bogus-option", "--", "true")
    assert code == 2 and out == ""


@pytest.mark.parametrize("unconfined", [False, True])
def test_command_not_found(work: Path, capfd: pytest.CaptureFixture[str], unconfined: bool) -> None:
    flags = ["--unconfined"] if unconfined else []
    code, out, err = run(capfd, *flags, "--", "no-such-command-cvg")
    assert code == 127 and out == ""
    assert "no-such-command-cvg" in err


def test_a_confinement_that_fails_is_said_and_nothing_runs(
    work: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cvg_kernel.plan import Prepared

    def refused(self: Prepared) -> None:
        raise OSError(1, "refused for the test")

    monkeypatch.setattr(Prepared, "apply", refused)  # in the forked, held process
    code, out, err = run(capfd, "--", "sh", "-c", "echo ran")
    assert code == 125 and out == "" and "ran" not in err
    assert err.strip().splitlines() == [
        "cvg-observe: confinement failed: [Errno 1] refused for the test"
    ]


def test_help_teaches(capfd: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capfd, "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "cvg-observe -- python3 tool.py | cvg-generate | cvg-validate > p.yaml" in text
    assert "--out" in text and "MCP" in text
    assert "~/.ssh" in text and "/etc/shadow" in text and ".env" in text
    assert "125" in text and "127" in text


def test_observation_json_keys_are_in_model_order(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capfd, "--", "true")
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    assert list(data)[:2] == ["kind", "schema_version"]
    assert data["kind"] == "cvg.observation"


SLEEPER = "import time; print('started', flush=True); time.sleep(30)"


def test_sigterm_is_passed_on_to_the_tool(work: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cvg_observe", "--", PY, "-c", SLEEPER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"started\n"  # the tool runs (its stdout: stderr)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    obs = loads_as(Observation, out)
    assert obs.exit_status == 128 + signal.SIGTERM
    assert [e.path for e in obs.events if e.op == "execute"] == [PY]


# A server that shuts down gracefully: SIGTERM starts a shutdown that takes a while.
GRACEFUL = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1), open('/etc/hostname').read(),"
    " sys.exit(3)))\n"
    "print('started', flush=True)\n"
    "time.sleep(30)\n"
)


def test_a_client_that_kills_the_whole_process_group_still_gets_an_observation(
    work: Path,
) -> None:
    """MCP clients end a server that outlives its closed stdin with SIGTERM to the
    server's whole process group. strace must not be in that group: it would die
    with the tool and leave no observation. cvg-observe passes the signal on to the
    tool and writes what it saw."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cvg_observe", "--", PY, "-c", GRACEFUL],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a group of its own, as a client starts a server
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"started\n"
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 3, err
    obs = loads_as(Observation, out)
    assert obs.exit_status == 3
    assert [e.path for e in obs.events if e.op == "execute"] == [PY]
    # What the tool did after the signal is in the observation too.
    assert any(e.path == "/etc/hostname" for e in obs.events if e.op == "read")


@pytest.fixture
def outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory outside /tmp (the learning sandbox writes /tmp whatever the cwd),
    holding a home with a shell startup file and a folder."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="cvg-observe-home-", dir="/var/tmp"))
    try:
        home = root / "home"
        (home / "notes").mkdir(parents=True)
        (home / ".bashrc").write_text("orig\n")
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv(ABI_ENV, raising=False)
        monkeypatch.delenv("CVG_STRACE", raising=False)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


WRITER = (
    "import sys\n"
    "for path in sys.argv[1:]:\n"
    "    try:\n"
    "        with open(path, 'a') as f: f.write('evil\\n')\n"
    "        print(path, open(path).read().splitlines()[-1])\n"
    "    except OSError as e:\n"
    "        print(path, e.errno)\n"
)


def test_a_home_as_working_directory_is_writable_only_in_its_folders(
    outside_tmp: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started in the home may keep its data in the home's folders, but not
    plant a shell startup file or a new entry there while it is learned."""
    home = outside_tmp / "home"
    monkeypatch.chdir(home)
    code, out, err = run(
        capfd, "--", PY, "-c", WRITER, ".bashrc", "notes/today", ".profile", "new.txt"
    )
    assert code == 0, err
    assert (home / ".bashrc").read_text() == "orig\n"
    assert not (home / ".profile").exists() and not (home / "new.txt").exists()
    assert (home / "notes" / "today").read_text() == "evil\n"
    obs = observation(out)
    assert any("is the home: writable only in its existing folders (notes)" in n for n in obs.notes)


def test_a_working_directory_holding_a_home_is_not_writable(
    outside_tmp: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(outside_tmp)
    code, out, err = run(capfd, "--", PY, "-c", WRITER, "planted", "home/notes/x")
    assert code == 0, err
    assert not (outside_tmp / "planted").exists()
    assert not (outside_tmp / "home" / "notes" / "x").exists()
    obs = observation(out)
    assert any("a directory holding a home directory: not writable" in n for n in obs.notes)


THREADS_AND_SOCKETS = """\
import asyncio, socket, sys, threading
a, b = socket.socketpair()
def echo():
    b.sendall(b.recv(5))
t = threading.Thread(target=echo)
t.start()
a.sendall(b"hello")
print(a.recv(5).decode())
t.join()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"x")
print(s.recv(4).decode())
async def main():
    p = await asyncio.create_subprocess_exec("true")
    await p.wait()
asyncio.run(main())
"""


def test_connected_sockets_and_threads_are_understood(
    work: Path, tcp_server: int, capfd: pytest.CaptureFixture[str]
) -> None:
    """Connected sockets' ends ("->" inside strace's -yy annotation), threads and an
    asyncio child: every line of the trace is understood, so nothing is noted."""
    (work / "busy.py").write_text(THREADS_AND_SOCKETS)
    code, out, err = run(capfd, "--", PY, "busy.py", str(tcp_server))
    assert code == 0, err
    assert "hello" in err and "pong" in err
    obs = observation(out)
    assert not [n for n in obs.notes if "not understood" in n], obs.notes
    assert "not understood" not in err


def test_lines_not_understood_say_what_they_were() -> None:
    """Only lines of calls a policy is learned from (or of no call one can name) are
    loud: they may have cost the policy a rule."""
    from cvg_observe.observe import LOUD_NOTE, skipped_note
    from cvg_trace.parse import TraceParser

    quiet = TraceParser()
    for i in range(3):
        quiet.feed(f'7 1.{i} <... futex resumed>"unterminated')
    note = skipped_note(quiet)
    assert note.startswith("3 strace lines were not understood and skipped (3 futex)")
    assert LOUD_NOTE not in note and "none was of a call a policy is learned from" in note

    loud = TraceParser()
    first = '7 1.0 openat(AT_FDCWD, "/etc/unterminated'
    for line in (first, '7 1.1 <... futex resumed>"unterminated'):
        loud.feed(line)
    note = skipped_note(loud)
    assert "(1 futex, 1 openat)" in note and LOUD_NOTE in note and note.endswith(first)
