"""Planted denials, end to end on the real kernel.

For each: the tool first succeeds with no sandbox (judged by an external oracle);
under a policy missing one grant, ``cvg-run --trace --record`` records the denial with
the right mechanism, right, rule and errno; ``cvg-explain`` names that rule and the
exact fix (the added lines of its diff are checked, not just their presence); the
fix applied with ``cvg-explain --apply`` (``--accept-risk`` when it is rated high,
after checking it is refused without) is what ``patch -p0`` makes of the diff; and
the tool then runs under the fixed policy, judged by the same oracle. Denials no
policy can fix are explained as such, and ``--apply`` leaves the policy alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from planted import (
    PY,
    ROOT,
    Box,
    Who,
    cvg_explain,
    cvg_run,
    default_policy,
    load_record,
    patched,
    run,
    tool_argv,
    write_policy,
)

from cvg_kernel.landlock import effective_abi
from cvg_policy.load import load_policy

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="planted denials run as root and cvgtest")

Result = subprocess.CompletedProcess[str]
Effect = Callable[[Result], bool]
Attempt = Callable[[], tuple[list[str], Effect]]


@dataclass(frozen=True)
class Expect:
    """The denial the record must hold and what cvg-explain must say about it."""

    mechanism: str | tuple[str, ...]
    right: str | tuple[str | None, ...] | None
    rule: str | None
    errno: str | tuple[str | None, ...] | None
    added: list[str] | None  # the exact "+" lines of the fix; None: no policy can fix it
    risk: str | None = None
    port: int | None = None
    path: str | None = None


def _one_of(value: object, allowed: object) -> bool:
    return value in allowed if isinstance(allowed, tuple) else value == allowed


def _matches(d: dict[str, Any], e: Expect) -> bool:
    return (
        _one_of(d.get("mechanism"), e.mechanism)
        and _one_of(d.get("right"), e.right)
        and d.get("rule") == e.rule
        and _one_of(d.get("errno"), e.errno)
        and (e.port is None or d.get("port") == e.port)
        and (e.path is None or d.get("path") == e.path)
    )


def _added(diff: str) -> list[str]:
    return [
        line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
    ]


def planted(box: Box, who: Who, source: str, attempt: Attempt, policy: dict[str, Any],
            expect: Expect, *, as_json: bool = False) -> None:  # fmt: skip
    tool = box.write(box.cwd / "tool.py", source, 0o644)

    # 1. With no sandbox, the tool does what it is for.
    args, effect = attempt()
    r = run(who, tool_argv(tool, *args), box)
    assert r.returncode == 0 and effect(r), f"unconfined: {r}"

    # 2. Under the policy missing one grant, it fails, and the record says why.
    if as_json:
        p = box.write(box.cwd / "p.json", json.dumps(policy, indent=2) + "\n")
    else:
        p = write_policy(box, policy)
    original = p.read_text()
    record_path = box.root / "run.json"
    args, effect = attempt()
    r = cvg_run(who, box, "--trace", "--record", str(record_path), "-p", str(p), "--",
                *tool_argv(tool, *args))  # fmt: skip
    assert r.returncode != 0 and not effect(r), f"confined: {r}"
    record = load_record(record_path)
    assert record["traced"] is True
    denials = record["denials"]
    found = [d for d in denials if _matches(d, expect)]
    assert found, f"no denial matching {expect} in {json.dumps(denials, indent=1)}"
    # Nothing else is blamed on cvg: the one planted denial is the only kind there is.
    blamed = [d for d in denials if d["mechanism"] != "none"]
    assert all(_matches(d, expect) for d in blamed), json.dumps(blamed, indent=1)
    denial = found[0]

    # 3. cvg-explain names the rule and the exact fix.
    r = cvg_explain(who, box, str(record_path))
    assert r.returncode == 0, r.stderr
    explanation = json.loads(r.stdout)
    explained = {e["denial"]["id"]: e for e in explanation["denials"]}
    e = explained[denial["id"]]
    assert e["cause"]
    if expect.added is None:
        assert e["fix"] is None and e["risk"] is None, e
        assert "no policy" in e["cause"] or "not cvg" in e["cause"], e["cause"]
        r = cvg_explain(who, box, "--apply", str(record_path))
        assert r.returncode == 0 and "nothing to apply" in r.stderr, r
        assert p.read_text() == original
        return
    assert e["rule"] == expect.rule or (expect.rule is None and e["rule"]), e
    assert _added(e["fix"]) == expect.added, e["fix"]
    assert e["risk"]["level"] == expect.risk, e["risk"]
    fixes = [x for x in explanation["denials"] if x["fix"] is not None]

    # 4. --apply writes it (refusing a high-risk fix without --accept-risk first).
    if expect.risk == "high":
        r = cvg_explain(who, box, "--apply", str(record_path))
        assert r.returncode == 1, r
        assert "--accept-risk" in r.stderr.strip().splitlines()[-1]
        assert p.read_text() == original
        r = cvg_explain(who, box, "--apply", "--accept-risk", str(record_path))
    else:
        r = cvg_explain(who, box, "--apply", str(record_path))
    assert r.returncode == 0, r.stderr
    fixed = p.read_text()
    if as_json:
        json.loads(fixed)  # still JSON
    else:
        assert fixed.startswith("# planted: one grant is missing\n")
    if len(fixes) == 1:
        assert patched(original, e["fix"], box.root / "patched", p.name) == fixed

    # 5. Under the fixed policy the tool runs (a unix grant below Landlock ABI 9 only
    #    when degraded runs are accepted: the risk note says so).
    args, effect = attempt()
    degraded = []
    if "unix: true" in fixed and effective_abi()[0] < 9:
        assert "--allow-degraded" in json.dumps(e["risk"]), e["risk"]
        degraded = ["--allow-degraded"]
    r = cvg_run(who, box, "-p", str(p), *degraded, "--", *tool_argv(tool, *args))
    assert r.returncode == 0 and effect(r), f"fixed: {r}\n{fixed}"


def _token() -> str:
    return "tok" + os.urandom(6).hex()


def _printed(token: str) -> Effect:
    return lambda r: token in r.stdout


# --- 1. a file read -----------------------------------------------------------------

READ_TOOL = """\
import sys
print(open(sys.argv[1]).read())
"""


def test_file_read(box: Box, who: Who) -> None:
    token = _token()
    data = box.write(box.data / "input.txt", token, 0o644)
    path = str(data)
    planted(
        box,
        who,
        READ_TOOL,
        lambda: ([path], _printed(token)),
        default_policy(),
        Expect("landlock_fs", "read_file", "filesystem.read", "EACCES",
               [f"+  - {path}"], "low", path=path),
    )  # fmt: skip


def test_a_read_denied_inside_a_grant_names_the_deny_and_keeps_it(box: Box, who: Who) -> None:
    token = _token()
    proj = box.data / "proj"
    proj.mkdir()
    proj.chmod(0o755)
    box.write(proj / "notes.txt", "notes", 0o644)
    secret = str(box.write(proj / "secret.txt", token, 0o644))
    policy = default_policy()
    policy["filesystem"]["read"].append(str(proj))
    policy["filesystem"]["deny"] = [secret]
    # Refused by cvg-run's supervisor, which serves the grant around the denied entry:
    # the cause is the deny, not the read grant, and no fix takes the deny away.
    planted(
        box,
        who,
        READ_TOOL,
        lambda: ([secret], _printed(token)),
        policy,
        Expect("supervisor", None, "filesystem.deny[0]", "EACCES", None, path=secret),
    )
    r = cvg_explain(who, box, str(box.root / "run.json"))
    e = next(x for x in json.loads(r.stdout)["denials"] if x["denial"]["path"] == secret)
    assert "denied by filesystem.deny[0]" in e["cause"] and "deliberate" in e["cause"], e


def test_file_read_with_a_json_policy(box: Box) -> None:
    token = _token()
    path = str(box.write(box.data / "input.txt", token, 0o644))
    planted(
        box,
        ROOT,
        READ_TOOL,
        lambda: ([path], _printed(token)),
        default_policy(),
        Expect("landlock_fs", "read_file", "filesystem.read", "EACCES",
               ["+      \"/dev/random\",", f'+      "{path}"'], "low", path=path),
        as_json=True,
    )  # fmt: skip


# --- 2. a write in a read-only tree -------------------------------------------------

WRITE_TOOL = """\
import sys
with open(sys.argv[1], "w") as f:
    f.write(sys.argv[2])
print("OK")
"""


def test_write_in_a_read_only_tree(box: Box, who: Who) -> None:
    tree = box.data / "ro"
    tree.mkdir()
    tree.chmod(0o777)
    out = box.write(tree / "out.txt", "old", 0o666)
    policy = default_policy()
    policy["filesystem"]["read"].append(str(tree))

    def attempt() -> tuple[list[str], Effect]:
        token = _token()
        return [str(out), token], lambda r: out.read_text() == token

    planted(
        box,
        who,
        WRITE_TOOL,
        attempt,
        policy,
        Expect("landlock_fs", "write_file", "filesystem.write", "EACCES",
               [f"+  - {out}"], "low", path=str(out)),
    )  # fmt: skip


# --- 3. an execute ------------------------------------------------------------------

EXEC_TOOL = """\
import subprocess, sys
print(subprocess.run([sys.argv[1], "-u"], capture_output=True, text=True, check=True).stdout)
"""


def test_execute(box: Box, who: Who) -> None:
    policy = default_policy()
    policy["filesystem"]["execute"] = ["${PYTHON}", "/lib64/ld-linux-x86-64.so.2"]
    uid = str(who.user.pw_uid if who.user is not None else 0)
    planted(
        box,
        who,
        EXEC_TOOL,
        lambda: (["/usr/bin/id"], lambda r: r.stdout.strip() == uid),
        policy,
        Expect("landlock_fs", "execute", "filesystem.execute", "EACCES",
               ["+  - /usr/bin/id"], "low", path="/usr/bin/id"),
    )  # fmt: skip


# --- 4-7. TCP connect, bind, UDP, a UNIX socket --------------------------------------


class Listener:
    """Collects what clients send, on a TCP port, a UDP port or a UNIX socket."""

    def __init__(self, family: int, kind: int, address: Any) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        if family == socket.AF_UNIX:
            os.chmod(address, 0o777)
        if kind == socket.SOCK_STREAM:
            self.sock.listen(8)
        self.address = self.sock.getsockname()
        self.received = b""
        self.lock = threading.Lock()
        self.stream = kind == socket.SOCK_STREAM
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                if self.stream:
                    conn, _ = self.sock.accept()
                    with conn:
                        conn.settimeout(5)
                        data = conn.recv(4096)
                else:
                    data = self.sock.recv(4096)
            except OSError:
                return
            with self.lock:
                self.received += data + b"\n"

    def got(self, token: str, wait: float = 3.0) -> bool:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with self.lock:
                if token.encode() in self.received:
                    return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def listening(family: int, kind: int, address: Any) -> Iterator[Listener]:
    listener = Listener(family, kind, address)
    try:
        yield listener
    finally:
        listener.close()


SEND_TOOL = """\
import socket, sys
kind, where, token = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "unix":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(where)
    s.sendall(token.encode())
elif kind == "udp":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(token.encode(), ("127.0.0.1", int(where)))
else:
    s = socket.create_connection(("127.0.0.1", int(where)), timeout=5)
    s.sendall(token.encode())
s.close()
print("OK")
"""


def _send_attempt(kind: str, where: str, listener: Listener) -> Attempt:
    def attempt() -> tuple[list[str], Effect]:
        token = _token()
        return [kind, where, token], lambda r: "OK" in r.stdout and listener.got(token)

    return attempt


def _tcp_policy(field: str, port: int) -> dict[str, Any]:
    """A policy that already speaks TCP on another port. With no TCP grant at all the
    seccomp filter refuses TCP sockets before any port is named (see the next test)."""
    policy = default_policy()
    policy["network"][field] = [port]
    return policy


def test_tcp_with_no_tcp_grant_names_the_rule_but_cannot_know_the_port(box: Box) -> None:
    with listening(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)) as listener:
        port = listener.address[1]
        tool = box.write(box.cwd / "tool.py", SEND_TOOL, 0o644)
        p = write_policy(box, default_policy())
        record_path = box.root / "run.json"
        argv = tool_argv(tool, "tcp", str(port), _token())
        r = cvg_run(ROOT, box, "--trace", "--record", str(record_path), "-p", str(p), "--", *argv)
        assert r.returncode == 1
        record = load_record(record_path)
        refused = [d for d in record["denials"] if d["mechanism"] == "seccomp"]
        assert [(d["syscall"], d.get("errno")) for d in refused] == [("socket", "EAFNOSUPPORT")]
        r = cvg_explain(ROOT, box, str(record_path))
        explained = json.loads(r.stdout)["denials"]
        e = next(x for x in explained if x["denial"]["id"] == refused[0]["id"])
        assert e["rule"] == "network.tcp_connect" and e["fix"] is None
        assert "grants no TCP port" in e["cause"] and "unknown" in e["cause"]


@pytest.mark.parametrize("kind", ["tcp", "udp", "unix"])
def test_a_send_to_a_listener_outside(box: Box, kind: str) -> None:
    family, type_, addr = {
        "tcp": (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)),
        "udp": (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0)),
        "unix": (socket.AF_UNIX, socket.SOCK_STREAM, str(box.root / "s.sock")),
    }[kind]
    with listening(family, type_, addr) as listener:
        if kind == "tcp":
            port = listener.address[1]
            target, policy = str(port), _tcp_policy("tcp_connect", 443)
            expect = Expect("landlock_net", "connect_tcp", "network.tcp_connect", "EACCES",
                            [f"+  - {port}"], "high", port=port)  # fmt: skip
        elif kind == "unix":
            # A policy that already reaches another socket: the supervisor refuses this
            # path, and the fix names it (network.unix: true would reach only sockets
            # beneath the filesystem grants, and this one is outside them).
            target, policy = str(addr), default_policy()
            policy["network"]["unix"] = [str(box.root / "other.sock")]
            expect = Expect("supervisor", None, "network.unix", "EACCES",
                            [f"+  - {addr}"], "high", path=str(addr))  # fmt: skip
        else:
            # No inet socket is granted at all: the family is refused.
            target, policy = str(listener.address[1]), default_policy()
            expect = Expect("seccomp", None, f"network.{kind}", "EAFNOSUPPORT",
                            [f"+  {kind}: true"], "high")  # fmt: skip
        planted(box, ROOT, SEND_TOOL, _send_attempt(kind, target, listener), policy, expect)


BIND_TOOL = """\
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
print("OK bound", s.getsockname()[1])
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_tcp_bind(box: Box) -> None:
    port = _free_port()
    planted(
        box,
        ROOT,
        BIND_TOOL,
        lambda: ([str(port)], _printed(f"OK bound {port}")),
        _tcp_policy("tcp_bind", 8443),
        Expect("landlock_net", "bind_tcp", "network.tcp_bind", "EACCES",
               [f"+  - {port}"], "high", port=port),
    )  # fmt: skip


# --- 8. ptrace, 9. a clone with a namespace flag --------------------------------------

PTRACE_TOOL = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid = os.fork()
if pid == 0:
    ok = libc.ptrace(0, 0, None, None) == 0  # PTRACE_TRACEME: the parent traces it
    os._exit(0 if ok else 10)
_, status = os.waitpid(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit("ptrace failed")
print("OK traced")
"""


def test_ptrace(box: Box) -> None:
    planted(
        box,
        ROOT,
        PTRACE_TOOL,
        lambda: ([], _printed("OK traced")),
        default_policy(),
        Expect("seccomp", None, "syscalls.allow", "EPERM",
               ["+syscalls:", "+  allow:", "+    - ptrace"], "high"),
    )  # fmt: skip


CLONE_TOOL = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
pid = libc.syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)  # clone, like fork
if pid == 0:
    os._exit(0)
if pid < 0:
    sys.exit("clone: " + os.strerror(ctypes.get_errno()))
os.waitpid(pid, 0)
print("OK namespace")
"""


def test_clone_with_a_namespace_flag_has_no_fix(box: Box) -> None:
    planted(
        box,
        ROOT,
        CLONE_TOOL,
        lambda: ([], _printed("OK namespace")),
        default_policy(),
        Expect("seccomp", None, None, "EPERM", None),
    )


# --- 10. rlimit memory, 11. rlimit processes -----------------------------------------

MEMORY_TOOL = """\
import sys
block = bytearray(int(sys.argv[1]) << 20)
print("OK", len(block) >> 20)
"""


def test_rlimit_memory(box: Box) -> None:
    policy = default_policy()
    policy["resources"]["memory_mb"] = 128
    # 128 MiB now and a 300 MiB request: 428, rounded up to 64 MiB steps.
    planted(
        box,
        ROOT,
        MEMORY_TOOL,
        lambda: (["300"], _printed("OK 300")),
        policy,
        Expect("rlimit", "data", "resources.memory_mb", "ENOMEM", ["+  memory_mb: 448"], "low"),
    )


PROCESSES_TOOL = """\
import os, sys, time
children = []
for _ in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        time.sleep(1.5)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("OK children", len(children))
"""


def test_rlimit_processes(box: Box, who: Who) -> None:
    policy = default_policy()
    policy["resources"]["processes"] = 3
    # The tool and 4 children: 5 at once, more than 3; the fix doubles the limit to 6.
    planted(
        box,
        who,
        PROCESSES_TOOL,
        lambda: (["4"], _printed("OK children 4")),
        policy,
        Expect(("supervisor", "rlimit"), (None, "nproc"), "resources.processes",
               (None, "EAGAIN"), ["+  processes: 6"], "low"),
    )  # fmt: skip


# --- 12. a signal outside the sandbox ------------------------------------------------

KILL_TOOL = """\
import os, signal, sys
os.kill(int(sys.argv[1]), signal.SIGTERM)
print("OK killed")
"""


def test_signal_outside(box: Box, who: Who) -> None:
    sleepers: list[subprocess.Popen[bytes]] = []

    def attempt() -> tuple[list[str], Effect]:
        sleeper = subprocess.Popen([PY, "-c", "import time; time.sleep(120)"], **who.popen_args())
        sleepers.append(sleeper)

        def died(r: Result) -> bool:
            try:
                return sleeper.wait(timeout=3) == -signal.SIGTERM
            except subprocess.TimeoutExpired:
                return False

        return [str(sleeper.pid)], died

    try:
        planted(
            box,
            who,
            KILL_TOOL,
            attempt,
            default_policy(),
            Expect("landlock_scope", "signal", "ipc.signal_outside", "EPERM",
                   ["+  signal_outside: true"], "medium"),
        )  # fmt: skip
    finally:
        for s in sleepers:
            s.kill()
            s.wait()


# --- ENOENT noise, and the whole pipeline ---------------------------------------------

PROBE_TOOL = """\
import os
for p in ("missing.cfg", "/usr/lib/no-such-lib.so", "/etc/no-such.conf", "a/b/c"):
    try:
        open(p)
    except FileNotFoundError:
        pass
print("OK probed")
"""


def test_enoent_noise_gives_no_denial_lines(box: Box) -> None:
    tool = box.write(box.cwd / "tool.py", PROBE_TOOL, 0o644)
    record_path = box.root / "run.json"
    r = cvg_run(ROOT, box, "--trace", "--record", str(record_path), "--", *tool_argv(tool))
    assert r.returncode == 0 and "OK probed" in r.stdout, r
    record = load_record(record_path)
    assert not [d for d in record["denials"] if d["mechanism"] != "none"], record["denials"]
    r = cvg_explain(ROOT, box, "--format", "text", str(record_path))
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].endswith("no denials: the sandbox refused nothing this run") or (
        "ENOENT" in lines[0] and "left out" in lines[0]
    ), r.stdout
    assert not [ln for ln in lines if ln[:1] == "d" and ln[1:2].isdigit()], r.stdout


PIPELINE_TOOL = """\
import socket, sys
data, out, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
failed = []
try:
    text = open(data).read()
except OSError as e:
    failed.append(str(e)); text = ""
try:
    with open(out, "w") as f:
        f.write(text)
except OSError as e:
    failed.append(str(e))
try:
    socket.create_connection(("127.0.0.1", port), timeout=5).sendall(text.encode())
except OSError as e:
    failed.append(str(e))
if failed:
    sys.exit("; ".join(failed))
print("OK all")
"""


def test_done_means_every_denial_named_and_fixed(box: Box) -> None:
    """cvg-run --trace --record run.json -p p.yaml -- CMD; cvg-explain run.json: each
    denial named with its rule, and the merged fix makes the tool run."""
    token = _token()
    data = box.write(box.data / "in.txt", token, 0o644)
    out = box.cwd / "out.txt"
    with listening(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)) as listener:
        port = listener.address[1]
        tool = box.write(box.cwd / "tool.py", PIPELINE_TOOL, 0o644)
        p = write_policy(box, _tcp_policy("tcp_connect", 443))
        argv = tool_argv(tool, str(data), str(out), str(port))
        record_path = box.root / "run.json"
        r = cvg_run(ROOT, box, "--trace", "--record", str(record_path), "-p", str(p), "--", *argv)
        assert r.returncode == 1
        record = load_record(record_path)
        blamed = {(d["mechanism"], d.get("right"), d.get("rule")) for d in record["denials"]
                  if d["mechanism"] != "none"}  # fmt: skip
        assert blamed == {
            ("landlock_fs", "read_file", "filesystem.read"),
            ("landlock_fs", "make_reg", "filesystem.write"),
            ("landlock_net", "connect_tcp", "network.tcp_connect"),
        }
        r = cvg_explain(ROOT, box, str(record_path))
        explanation = json.loads(r.stdout)
        rules = {e["rule"] for e in explanation["denials"] if e["fix"]}
        assert rules == {"filesystem.read", "filesystem.write", "network.tcp_connect"}
        r = cvg_explain(ROOT, box, "--apply", "--accept-risk", str(record_path))
        assert r.returncode == 0, r.stderr
        fixed = load_policy(p.read_text(), filename=str(p)).policy
        assert fixed.filesystem.read[-1] == str(data)
        assert fixed.filesystem.write[-1] == "${CWD}"  # out.txt is created in it
        assert fixed.network.tcp_connect == [443, port]
        r = cvg_run(ROOT, box, "-p", str(p), "--", *argv)
        assert r.returncode == 0 and "OK all" in r.stdout, r
        assert out.read_text() == token and listener.got(token)


# --- needing root: a device node -----------------------------------------------------

MKNOD_TOOL = """\
import os, stat, sys
os.mknod(sys.argv[1], 0o600 | stat.S_IFCHR, os.makedev(1, 3))
print("OK node")
"""


def test_device_node_needs_root_and_has_no_fix(box: Box) -> None:
    where = box.data / "dev"
    where.mkdir()
    policy = default_policy()
    policy["filesystem"]["write"].append(str(where))
    node = where / "null"

    def attempt() -> tuple[list[str], Effect]:
        node.unlink(missing_ok=True)
        return [str(node)], lambda r: "OK node" in r.stdout and node.is_char_device()

    planted(
        box,
        ROOT,
        MKNOD_TOOL,
        attempt,
        policy,
        Expect("landlock_fs", "make_char", "filesystem.write", "EACCES", None, path=str(node)),
    )


# --- an execute whose "#!" interpreter is missing --------------------------------------

SCRIPT_TOOL = """\
import subprocess, sys
print(subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout)
"""


def test_execute_a_script_whose_interpreter_is_missing(box: Box) -> None:
    script = box.write(box.cwd / "run.sh", "#!/bin/sh\necho OK script\n", 0o755)
    policy = default_policy()
    policy["filesystem"]["execute"] = [
        "${PYTHON}",
        "/lib64/ld-linux-x86-64.so.2",
        "${CWD}/run.sh",
    ]
    planted(
        box,
        ROOT,
        SCRIPT_TOOL,
        lambda: ([str(script)], _printed("OK script")),
        policy,
        Expect("landlock_fs", "execute", "filesystem.execute", "EACCES",
               ["+  - /bin/sh"], "low", path=str(script)),
    )  # fmt: skip
