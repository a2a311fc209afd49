"""cvg-run --trace on the real kernel, as root and as an unprivileged user.

Each denial test first runs the same operation with no sandbox (as the same
identity) and sees it succeed; then runs it under ``cvg-run --trace`` and checks
what the record and stderr say refused it. The oracles are outside the code
under test: the tool's own output (what it saw), the exit status, and the record
as cvg_schema validates it.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess

# Imported here for the forked child that drops privileges: after the drop the
# interpreter under /root can import nothing more (see runhelp).
import tempfile  # noqa: F401
import threading  # noqa: F401
from pathlib import Path
from typing import Any

import pytest
from runhelp import PY, Box, Ran, load_record, make_policy, procs_with, run_main, start, token

import cvg_kernel.notify
import cvg_kernel.seccomp  # noqa: F401
import cvg_run.tracing.denials
import cvg_run.tracing.judge
import cvg_run.tracing.launch
import cvg_run.tracing.tracer  # noqa: F401
import cvg_trace.tool  # noqa: F401

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

Identity = pwd.struct_passwd | None


def _plain(script: str, user: Identity) -> subprocess.CompletedProcess[str]:
    """The oracle's baseline: ``script`` with no sandbox at all, as ``user``."""

    def child() -> dict[str, Any]:
        done = subprocess.run([PY, "-c", script], capture_output=True, text=True, check=False)
        return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}

    ran = start(child, user=user).finish(60)
    assert ran.error is None, ran.error
    value = ran.value
    return subprocess.CompletedProcess([PY], value["rc"], value["out"], value["err"])


def _traced(
    box: Box,
    user: Identity,
    script: str,
    *,
    trace: bool = True,
    env: dict[str, str | None] | None = None,
    **policy: Any,
) -> tuple[Ran, dict[str, Any]]:
    """``cvg-run [--trace] --record R -p P -- python3 -c script``; the run and its record
    (validated by cvg_schema.RunRecord)."""
    path = make_policy(box.share, **policy)
    rec = box.share / ("traced.json" if trace else "plain.json")
    argv = [*(["--trace"] if trace else []), "--record", str(rec), "-p", str(path)]
    ran = run_main([*argv, "--", PY, "-c", script], box=box, user=user, env=env)
    data, _validated = load_record(rec)
    return ran, data


def _only(data: dict[str, Any], **match: Any) -> dict[str, Any]:
    found = [d for d in data["denials"] if all(d.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, data["denials"])
    return found[0]


def _readable_dir(box: Box, name: str) -> Path:
    d = box.root / name
    d.mkdir()
    d.chmod(0o755)
    return d


# ------------------------------------------------------------------- files


def test_read_outside_every_grant_is_landlock_read_file(box: Box, identity: Identity) -> None:
    secret = _readable_dir(box, "secrets") / "id_rsa"
    secret.write_text("KEY\n")
    secret.chmod(0o644)
    script = (
        f"try:\n print(open({str(secret)!r}).read().strip())\n"
        "except PermissionError:\n print('refused')\n"
    )
    assert _plain(script, identity).stdout == "KEY\n"

    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "refused\n"
    assert data["traced"] is True
    d = _only(data, path=str(secret))
    assert (d["mechanism"], d["right"], d["rule"], d["errno"], d["op"]) == (
        "landlock_fs", "read_file", "filesystem.read", "EACCES", "read",
    )  # fmt: skip
    line = f"cvg-run: denied: open {secret} for read (no filesystem.read grant covers it"
    assert line in ran.err


def test_writes_in_a_read_only_tree_are_landlock_write_rights(box: Box, identity: Identity) -> None:
    # The working directory is readable (${CWD}) but not writable in the default policy.
    existing = box.cwd / "exists.txt"
    existing.write_text("old\n")
    existing.chmod(0o666)
    new = box.cwd / "new.txt"
    script = (
        "import os\n"
        f"for path, flags in (({str(new)!r}, os.O_WRONLY | os.O_CREAT),"
        f" ({str(existing)!r}, os.O_WRONLY)):\n"
        "    try:\n        os.close(os.open(path, flags, 0o644)); print('ok')\n"
        "    except PermissionError:\n        print('refused')\n"
    )
    baseline = _plain(script, identity)
    assert baseline.stdout == "ok\nok\n"
    new.unlink()

    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "refused\nrefused\n"
    created = _only(data, path=str(new))
    assert (created["mechanism"], created["right"], created["rule"], created["op"]) == (
        "landlock_fs", "make_reg", "filesystem.write", "create",
    )  # fmt: skip
    written = _only(data, path=str(existing))
    assert (written["mechanism"], written["right"], written["rule"], written["op"]) == (
        "landlock_fs", "write_file", "filesystem.write", "write",
    )  # fmt: skip
    assert f"cvg-run: denied: create {new} (no filesystem.write grant covers its directory" in (
        ran.err
    )
    assert f"cvg-run: denied: open {existing} for write (no filesystem.write grant" in ran.err


def test_execute_without_a_grant_is_landlock_execute(box: Box, identity: Identity) -> None:
    # A copy of `true` in the working directory: readable, not executable by policy.
    tool = box.cwd / "mytrue"
    shutil.copy("/usr/bin/true", tool)
    tool.chmod(0o755)
    script = (
        "import subprocess\n"
        f"try:\n print(subprocess.run([{str(tool)!r}]).returncode)\n"
        "except PermissionError:\n print('refused')\n"
    )
    assert _plain(script, identity).stdout == "0\n"

    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "refused\n"
    d = _only(data, path=str(tool), op="execute")
    assert (d["mechanism"], d["right"], d["rule"], d["errno"]) == (
        "landlock_fs", "execute", "filesystem.execute", "EACCES",
    )  # fmt: skip
    assert f"cvg-run: denied: execute {tool} (no filesystem.execute grant covers it" in ran.err


def test_enoent_probe_is_mechanism_none_and_prints_nothing(box: Box, identity: Identity) -> None:
    missing = box.cwd / "no-such-config.toml"
    script = f"import os\nprint(os.path.exists({str(missing)!r}))\ntry:\n open({str(missing)!r})\n"
    script += "except FileNotFoundError:\n print('absent')\n"
    assert _plain(script, identity).stdout == "False\nabsent\n"

    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "False\nabsent\n"
    d = _only(data, path=str(missing))
    assert (d["mechanism"], d["errno"]) == ("none", "ENOENT")
    assert "right" not in d and "rule" not in d
    assert str(missing) not in ran.err
    assert not any(x["mechanism"] != "none" for x in data["denials"]), data["denials"]


# File modes refuse an unprivileged user; root would hold them with its capabilities.
@pytest.mark.parametrize("identity", ["unpriv" if os.geteuid() == 0 else "self"], indirect=True)
def test_dac_refusal_on_a_granted_path_is_mechanism_none(box: Box, identity: Identity) -> None:
    locked = box.cwd / "locked.txt"  # beneath ${CWD}: filesystem.read grants it
    locked.write_text("x\n")
    locked.chmod(0o600)  # owned by root
    script = (
        f"try:\n open({str(locked)!r}).read(); print('read')\n"
        "except PermissionError:\n print('refused')\n"
    )
    # Without a sandbox the same user is refused too: the file's mode, not cvg.
    assert _plain(script, identity).stdout == "refused\n"
    assert _plain(f"print(open({str(box.cwd / 'locked.txt')!r}).read())", None).returncode == 0

    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "refused\n"
    d = _only(data, path=str(locked))
    assert (d["mechanism"], d["errno"]) == ("none", "EACCES")
    assert "denied:" not in ran.err


# ------------------------------------------------------------------- network


def _listener() -> socket.socket:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    return srv


def test_connect_to_an_ungranted_port_is_landlock_net(box: Box, identity: Identity) -> None:
    with _listener() as srv:
        port = srv.getsockname()[1]
        script = (
            "import socket\ns = socket.socket()\n"
            f"try:\n s.connect(('127.0.0.1', {port})); print('connected')\n"
            "except PermissionError:\n print('refused')\n"
        )
        assert _plain(script, identity).stdout == "connected\n"
        ran, data = _traced(box, identity, script, network={"tcp_connect": [443]})
    assert ran.rc == 0 and ran.out == "refused\n"
    d = _only(data, syscall="connect", port=port)
    assert (d["mechanism"], d["right"], d["rule"], d["errno"]) == (
        "landlock_net", "connect_tcp", "network.tcp_connect", "EACCES",
    )  # fmt: skip
    assert f"cvg-run: denied: connect tcp port {port} (network.tcp_connect grants 443)" in ran.err


def test_bind_to_an_ungranted_port_is_landlock_net(box: Box, identity: Identity) -> None:
    with _listener() as probe:
        port = probe.getsockname()[1]  # a port that was free a moment ago
    script = (
        "import socket\ns = socket.socket()\n"
        f"try:\n s.bind(('127.0.0.1', {port})); print('bound')\n"
        "except PermissionError:\n print('refused')\n"
    )
    assert _plain(script, identity).stdout == "bound\n"
    ran, data = _traced(box, identity, script, network={"tcp_connect": [443], "tcp_bind": [1]})
    assert ran.rc == 0 and ran.out == "refused\n"
    d = _only(data, syscall="bind", port=port)
    assert (d["mechanism"], d["right"], d["rule"]) == (
        "landlock_net", "bind_tcp", "network.tcp_bind",
    )  # fmt: skip
    assert f"cvg-run: denied: bind tcp port {port} (network.tcp_bind grants 1)" in ran.err


# ------------------------------------------------------------------- seccomp


def test_seccomp_denial_comes_from_the_notification_channel(box: Box, identity: Identity) -> None:
    # ptrace(PTRACE_TRACEME): allowed with no sandbox, on cvg's deny list under it.
    script = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r = libc.syscall(101, 0, 0, 0, 0)\n"
        "print(r, os.strerror(ctypes.get_errno()) if r else 'ok')\n"
    )
    assert _plain(script, identity).stdout == "0 ok\n"
    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "-1 Operation not permitted\n"
    d = _only(data, syscall="ptrace")
    assert (d["mechanism"], d["rule"], d["errno"]) == ("seccomp", "syscalls.allow", "EPERM")
    assert "cvg-run: denied: ptrace (seccomp: not in syscalls.allow" in ran.err


# ------------------------------------------------------------------- the tool's own view


def test_stdout_stderr_and_status_are_the_tools_own(box: Box, identity: Identity) -> None:
    script = (
        "import sys\nprint('to stdout'); print('to stderr', file=sys.stderr)\n"
        "print(sys.stdin.read() == '', flush=True)\nsys.exit(3)\n"
    )
    plain, plain_data = _traced(box, identity, script, trace=False)
    traced, traced_data = _traced(box, identity, script)
    assert plain.rc == traced.rc == 3
    assert plain.out == traced.out == "to stdout\nTrue\n"
    assert plain.err == traced.err == "to stderr\n"
    assert plain_data["exit"] == traced_data["exit"] == {"status": 3, "meaning": "exited"}
    assert plain_data["traced"] is False and traced_data["traced"] is True


def test_killed_tool_status_is_unchanged(box: Box, identity: Identity) -> None:
    script = "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"
    plain, _ = _traced(box, identity, script, trace=False)
    traced, data = _traced(box, identity, script)
    assert plain.rc == traced.rc == 128 + 15
    assert data["exit"]["meaning"] == "signaled" and data["exit"]["signal"] == 15


def test_first_process_exit_ends_the_run_and_kills_a_daemon(box: Box, identity: Identity) -> None:
    # A daemon that outlives the tool's first process keeps strace alive; the run
    # still ends with the first process and the daemon is killed.
    marker = token()
    script = (
        f"# {marker}\nimport os, time\nif os.fork() == 0:\n    os.setsid(); time.sleep(60)\n"
        "print('parent done')\n"
    )
    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "parent done\n"
    assert procs_with(marker) == []
    assert ran.seconds < 30
    assert data["exit"] == {"status": 0, "meaning": "exited"}


def test_strace_missing_is_125_with_a_hint(box: Box) -> None:
    path = make_policy(box.share)
    ran = run_main(
        ["--trace", "-p", str(path), "--", PY, "-c", "print(1)"],
        box=box,
        env={"CVG_STRACE": "/nonexistent/strace"},
    )
    assert ran.rc == 125
    assert ran.out == ""
    lines = ran.err.strip().splitlines()
    assert len(lines) == 1 and "install it" in lines[0], ran.err


def test_record_keeps_distinct_denials_once_with_a_count(box: Box) -> None:
    secret = _readable_dir(box, "secrets") / "k"
    secret.write_text("k")
    secret.chmod(0o644)
    script = f"for _ in range(3):\n try: open({str(secret)!r})\n except OSError: pass\n"
    ran, data = _traced(box, None, script)
    assert ran.rc == 0
    d = _only(data, path=str(secret))
    assert d["detail"].startswith("3 times; ")
    assert ran.err.count(f"denied: open {secret} for read") == 1
    assert json.loads(json.dumps(data))["denials"][0]["id"] == "d1"
    assert os.path.exists(box.share / "traced.json")


# ------------------------------------------------------------------- supervisor and scopes


def test_process_count_is_the_tools_not_strace(box: Box, identity: Identity) -> None:
    # The tool and two children: three processes, the limit. strace sits between the
    # supervisor and the tool and must not be counted as a fourth.
    script = (
        "import subprocess\n"
        "ps = [subprocess.Popen(['/usr/bin/sleep', '1']) for _ in range(2)]\n"
        "print([p.wait() for p in ps])\n"
    )
    assert _plain(script, identity).stdout == "[0, 0]\n"
    ran, data = _traced(box, identity, script, resources={"processes": 3})
    assert ran.rc == 0 and ran.out == "[0, 0]\n", ran.err
    assert data["exit"] == {"status": 0, "meaning": "exited"}


def test_too_many_processes_is_named_resources_processes(box: Box, identity: Identity) -> None:
    script = (
        "import subprocess\nps = []\n"
        "try:\n"
        "    for _ in range(6): ps.append(subprocess.Popen(['/usr/bin/sleep', '5']))\n"
        "except OSError as e: print('fork refused', e.errno)\n"
        "print(len([p.wait() for p in ps]))\n"
    )
    assert _plain(script, identity).stdout == "6\n"
    ran, data = _traced(box, identity, script, resources={"processes": 3})
    found = [d for d in data["denials"] if d.get("rule") == "resources.processes"]
    assert found, data["denials"]
    assert {d["mechanism"] for d in found} <= {"supervisor", "rlimit"}
    if ran.rc == 137:  # the supervisor ended the run
        assert data["exit"]["meaning"] == "limit"
        assert any(d["mechanism"] == "supervisor" for d in found)
    else:  # RLIMIT_NPROC refused a fork first (an unprivileged user's backstop)
        assert "fork refused" in ran.out
        assert any(d["mechanism"] == "rlimit" and d["right"] == "nproc" for d in found)


def test_wall_clock_ends_a_traced_run(box: Box, identity: Identity) -> None:
    ran, data = _traced(
        box, identity, "import time\ntime.sleep(30)\n", resources={"wall_clock_seconds": 1}
    )
    assert ran.rc == 124
    assert ran.seconds < 15
    d = _only(data, mechanism="supervisor")
    assert d["rule"] == "resources.wall_clock_seconds"


def test_signal_outside_the_sandbox_is_landlock_scope(box: Box, identity: Identity) -> None:
    pidfile = box.cwd / "pid"

    def outside() -> None:
        # A process of the same user, started outside the sandbox.
        p = subprocess.Popen(["/usr/bin/sleep", "30"])
        pidfile.write_text(str(p.pid))

    script = (
        f"import os\npid = int(open({str(pidfile)!r}).read())\n"
        "try:\n os.kill(pid, 0); print('signalled')\n"
        "except PermissionError:\n print('refused')\n"
    )
    ran = run_main(
        ["--trace", "--record", str(box.share / "r.json"), "--", PY, "-c", script],
        box=box,
        user=identity,
        before=outside,
    )
    assert ran.rc == 0 and ran.out == "refused\n", ran.err
    data, _ = load_record(box.share / "r.json")
    d = _only(data, syscall="kill")
    assert (d["mechanism"], d["right"], d["rule"], d["errno"]) == (
        "landlock_scope", "signal", "ipc.signal_outside", "EPERM",
    )  # fmt: skip
    # With no sandbox, the same user signals it.
    pidfile.unlink()

    def plain() -> dict[str, Any]:
        outside()
        done = subprocess.run([PY, "-c", script], capture_output=True, text=True, check=False)
        os.kill(int(pidfile.read_text()), 9)
        return {"out": done.stdout}

    got = start(plain, user=identity).finish(60)
    assert got.error is None, got.error
    assert got.value["out"] == "signalled\n"


@pytest.mark.parametrize(
    ("family", "rule", "line"),
    [
        pytest.param(
            "socket.AF_UNIX",
            "network.unix",
            "socket unix stream (seccomp: network.unix is false)",
            id="unix",
        ),
        # With no TCP port granted the filter refuses the socket itself: the rule to
        # change is network.tcp_connect, even though the port is not known yet.
        pytest.param(
            "socket.AF_INET, socket.SOCK_STREAM",
            "network.tcp_connect",
            "socket inet stream (seccomp: no TCP port is granted",
            id="tcp",
        ),
    ],
)
def test_a_socket_refused_by_seccomp_names_its_rule(
    box: Box, identity: Identity, family: str, rule: str, line: str
) -> None:
    script = (
        f"import socket\ntry:\n socket.socket({family}); print('made')\n"
        "except OSError as e:\n print('refused', e.errno)\n"
    )
    assert _plain(script, identity).stdout == "made\n"
    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out.startswith("refused")
    d = _only(data, syscall="socket")
    assert (d["mechanism"], d["rule"]) == ("seccomp", rule)
    assert f"cvg-run: denied: {line}" in ran.err


def test_the_tool_cannot_write_the_trace(box: Box, identity: Identity) -> None:
    # Even with /proc readable and writable by policy, strace's descriptors (the trace
    # pipe among them) are out of reach: strace is outside the tool's Landlock domain.
    script = (
        "import os\nppid = os.getppid()\nn = 0\n"
        # Only strace's descriptors get the forged line: with no sandbox the parent is
        # the test's own process, whose descriptors are only opened, never written.
        "forge = open(f'/proc/{ppid}/comm').read().strip() == 'strace'\n"
        "try:\n names = os.listdir(f'/proc/{ppid}/fd')\n"
        "except OSError:\n names = [str(i) for i in range(3, 64)]\n"
        "for fd in names:\n"
        "    try:\n"
        "        w = os.open(f'/proc/{ppid}/fd/{fd}', os.O_WRONLY | os.O_APPEND)\n"
        "    except OSError:\n        continue\n"
        "    n += 1\n"
        "    if forge:\n"
        '        os.write(w, f\'{os.getpid()} 1.0 openat(AT_FDCWD, "/forged", O_RDONLY)'
        " = -1 EACCES (Permission denied)\\n'.encode())\n"
        "    os.close(w)\n"
        "print(n)\n"
    )
    # With no sandbox, a process can open its parent's descriptors this way (the
    # parent a fresh python of the same user, as strace is under --trace).
    wrapper = f"import subprocess\nsubprocess.run([{PY!r}, '-c', {script!r}])\n"
    assert int(_plain(wrapper, identity).stdout) > 0
    ran, data = _traced(
        box, identity, script, filesystem={"read": ["/usr", "/proc"], "write": ["/proc"]}
    )
    assert ran.rc == 0 and ran.out == "0\n", ran.err
    assert not [d for d in data["denials"] if d.get("path") == "/forged"]


def test_the_tool_itself_without_an_execute_grant(box: Box, identity: Identity) -> None:
    tool = box.cwd / "mytrue"
    shutil.copy("/usr/bin/true", tool)
    tool.chmod(0o755)
    assert (
        _plain(
            f"import subprocess\nprint(subprocess.run([{str(tool)!r}]).returncode)", identity
        ).stdout
        == "0\n"
    )
    path = make_policy(box.share)
    untraced = run_main(["-p", str(path), "--", "./mytrue"], box=box, user=identity)
    rec = box.share / "r.json"
    traced = run_main(
        ["--trace", "--record", str(rec), "-p", str(path), "--", "./mytrue"], box=box, user=identity
    )
    assert untraced.rc == traced.rc == 126
    message = "cvg-run: ./mytrue: Permission denied"
    assert message in untraced.err and message in traced.err
    data, _ = load_record(rec)
    assert data["exit"]["meaning"] == "not_executable"
    d = _only(data, path=str(tool))
    assert (d["mechanism"], d["right"], d["rule"]) == (
        "landlock_fs", "execute", "filesystem.execute",
    )  # fmt: skip
    assert f"cvg-run: denied: execute {tool} (no filesystem.execute grant covers it" in traced.err


def test_rename_out_of_scratch_and_truncate_name_the_path_to_grant(
    box: Box, identity: Identity
) -> None:
    # ${SCRATCH} is writable, the working directory only readable.
    kept = box.cwd / "kept.txt"
    kept.write_text("data\n")
    kept.chmod(0o666)
    moved = box.cwd / "moved.txt"
    script = (
        "import os\nsrc = os.path.join(os.environ['TMPDIR'], 'f')\nopen(src, 'w').write('x')\n"
        f"calls = ((os.rename, (src, {str(moved)!r})), (os.truncate, ({str(kept)!r}, 0)))\n"
        "for fn, args in calls:\n"
        "    try:\n        fn(*args); print('done')\n"
        "    except PermissionError:\n        print('refused')\n"
    )
    plain = _plain(script.replace("os.environ['TMPDIR']", repr(str(box.share))), identity)
    assert plain.stdout == "done\ndone\n"
    moved.unlink()
    kept.write_text("data\n")

    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "refused\nrefused\n", ran.err
    renamed = _only(data, path=str(moved))
    assert (renamed["mechanism"], renamed["right"], renamed["rule"], renamed["op"]) == (
        "landlock_fs", "make_reg", "filesystem.write", "rename",
    )  # fmt: skip
    truncated = _only(data, path=str(kept), syscall="truncate")
    assert (truncated["mechanism"], truncated["right"], truncated["rule"]) == (
        "landlock_fs", "truncate", "filesystem.write",
    )  # fmt: skip
    assert kept.read_text() == "data\n"


def test_the_tool_inherits_no_more_descriptors_when_traced(box: Box, identity: Identity) -> None:
    # The trace pipe, the error pipe, the plan memfd and the notification socket all
    # stop at the launcher.
    script = "import os\nprint(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))\n"
    sections = {"filesystem": {"read": ["/usr", "/proc"], "execute": ["/usr"]}}
    plain, _ = _traced(box, identity, script, trace=False, **sections)
    traced, _ = _traced(box, identity, script, **sections)
    assert plain.rc == traced.rc == 0
    assert plain.out == traced.out == "[0, 1, 2, 3]\n"


@pytest.mark.parametrize("where", ["{os.getpid()}", "self", "thread-self"])
def test_reading_its_own_proc_entries_is_expected_and_not_said(
    box: Box, identity: Identity, where: str
) -> None:
    # Landlock rules attach to inodes, and each process's /proc entries are new ones:
    # no policy can grant them, so a runtime's probe of them is noise, kept apart.
    script = (
        "import os\nfor name in ('cgroup', 'maps'):\n try:\n"
        f"  open(f'/proc/{where}/' + name).read(); print('read')\n"
        " except PermissionError:\n  print('refused')\n"
    )
    assert _plain(script, identity).stdout == "read\nread\n"
    ran, data = _traced(box, identity, script)
    assert ran.rc == 0 and ran.out == "refused\nrefused\n", ran.err
    own = [d for d in data["denials"] if d.get("path", "").startswith("/proc/")]
    assert own and all(d["mechanism"] == "landlock_fs" and d["expected"] is True for d in own)
    assert "/proc/" not in ran.err  # counted, not said
