"""Every exit status of cvg-run (docs/design.md), as root and as an unprivileged user.

Each run's record is read back and validated against cvg_schema.RunRecord, so
every exit meaning is also a record that validates (see test_run_record.py).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
from pathlib import Path
from typing import get_args

import pytest
from runhelp import Box, load_record, make_policy, only_record, run_main

from cvg_schema.run import ExitMeaning
from cvg_testing import ensure_unpriv_user, needs_abi

Identity = pwd.struct_passwd | None


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cvg-run: "), err
    assert "Traceback" not in err
    return lines[0]


# --- the tool's own status -------------------------------------------------------------


@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_tool_status_is_passed_through(identity: Identity, box: Box, code: int) -> None:
    ran = run_main(["--", "sh", "-c", f"echo out; exit {code}"], box=box, user=identity)
    assert ran.rc == code, ran.err
    assert ran.out == "out\n"
    assert ran.err == ""
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.status) == ("exited", code)
    assert rec.argv == ["sh", "-c", f"echo out; exit {code}"]
    assert rec.cwd == str(box.cwd)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGUSR1, signal.SIGSEGV])
def test_tool_killed_by_signal_is_128_plus_n(identity: Identity, box: Box, sig: int) -> None:
    ran = run_main(["--", "sh", "-c", f"kill -{int(sig)} $$; sleep 5"], box=box, user=identity)
    assert ran.rc == 128 + sig, ran.err
    _, rec = only_record(box)
    assert rec.exit.meaning == "signaled"
    assert rec.exit.signal == sig
    assert rec.exit.status == 128 + sig


# --- 124: the wall clock -----------------------------------------------------------------


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_wall_clock_is_124(identity: Identity, box: Box) -> None:
    policy = make_policy(box.share, resources={"wall_clock_seconds": 1})
    ran = run_main(["-p", str(policy), "--", "sleep", "30"], box=box, user=identity)
    assert ran.rc == 124, ran.err
    assert 1.0 <= ran.seconds < 10, ran.seconds
    assert "wall clock" in _one_line(ran.err)
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.status) == ("wall_clock", 124)
    assert rec.timings.wall_seconds >= 1.0


# --- 125: not started --------------------------------------------------------------------

BAD_POLICIES = {
    "invalid-yaml": "version: [\n",
    "relative-path": "version: 1\nfilesystem:\n  read: [usr]\n",
    "unknown-key": "version: 1\nfilesystem:\n  raed: [/usr]\n",
    "unknown-variable": "version: 1\nfilesystem:\n  read: ['${NOPE}']\n",
    "wrong-version": "version: 99\n",
    "not-a-mapping": "- just\n- a list\n",
}


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
@pytest.mark.parametrize("name", sorted(BAD_POLICIES))
def test_bad_policy_is_125_in_one_line(identity: Identity, box: Box, name: str) -> None:
    good = make_policy(box.share, name="good.json")
    ran = run_main(["-p", str(good), "--", "true"], box=box, user=identity)
    assert ran.rc == 0, ran.err  # the command itself is fine

    bad = box.share / "bad.yaml"
    bad.write_text(BAD_POLICIES[name])
    bad.chmod(0o644)
    ran = run_main(["-p", str(bad), "--", "sh", "-c", "echo ran"], box=box, user=identity)
    assert ran.rc == 125
    assert ran.out == ""  # the tool never ran
    line = _one_line(ran.err)
    assert "bad.yaml" in line


def _unreadable_policy(kind: str, box: Box) -> Path:
    if kind == "missing":
        return box.share / "nope.yaml"
    d = box.share / "a-directory.yaml"
    d.mkdir()
    return d


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_policy_is_125(identity: Identity, box: Box, kind: str) -> None:
    path = _unreadable_policy(kind, box)
    ran = run_main(["-p", str(path), "--", "sh", "-c", "echo ran"], box=box, user=identity)
    assert ran.rc == 125
    assert ran.out == ""
    assert "cannot read policy" in _one_line(ran.err)


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_policy_without_read_permission_is_125(as_root: None, box: Box) -> None:
    policy = make_policy(box.share, name="secret.json")
    policy.chmod(0o600)  # owned by root: unreadable to the unprivileged user
    argv = ["-p", str(policy), "--", "sh", "-c", "echo ran"]
    assert run_main(argv, box=box).rc == 0  # root may read it
    ran = run_main(argv, box=box, user=ensure_unpriv_user())
    assert ran.rc == 125
    assert ran.out == ""
    assert "cannot read policy: Permission denied" in _one_line(ran.err)


def _degradable_policy(box: Box) -> Path:
    # Device ioctls are controlled from ABI 5: reading /dev/ptmx is degraded at ABI 4,
    # and nothing else is (below ABI 6 the supervisor scopes signals).
    return make_policy(
        box.share,
        filesystem={
            "read": ["/usr", "/etc", "/bin", "/lib", "/lib64", "${CWD}", "/dev/ptmx"],
            "write": ["${SCRATCH}"],
            "execute": ["/usr", "/bin", "/lib", "/lib64"],
        },
        ipc={"signal_outside": False},
    )


@needs_abi(6)
def test_degraded_policy_is_refused_then_allowed(identity: Identity, box: Box) -> None:
    policy = _degradable_policy(box)
    argv = ["-p", str(policy), "--", "sh", "-c", "echo ran"]

    # On this kernel (uncapped) the same policy is enforced in full and runs.
    ran = run_main(argv, box=box, user=identity)
    assert (ran.rc, ran.out, ran.err) == (0, "ran\n", "")
    _, rec = only_record(box)
    assert rec.degraded == []
    shutil.rmtree(box.runs)

    abi4 = {"CVG_LANDLOCK_ABI_MAX": "4"}
    ran = run_main(argv, box=box, user=identity, env=abi4)
    assert ran.rc == 125
    assert ran.out == ""
    assert "degraded [filesystem.read[6]]" in ran.err
    assert "signal" not in ran.err
    assert "refusing to run" in ran.err
    assert "Traceback" not in ran.err

    ran = run_main(["--allow-degraded", *argv], box=box, user=identity, env=abi4)
    assert ran.rc == 0, ran.err
    assert ran.out == "ran\n"
    assert "degraded [filesystem.read[6]]" in ran.err  # still listed on stderr

    records = [load_record(p) for p in box.records()]
    assert len(records) == 2
    by_status = {rec.exit.status: (raw, rec) for raw, rec in records}
    assert sorted(by_status) == [0, 125]
    refused, allowed = by_status[125][1], by_status[0][1]
    assert refused.exit.meaning == "not_started"
    assert not refused.allow_degraded
    assert allowed.exit.meaning == "exited"
    assert allowed.allow_degraded
    for rec in (refused, allowed):
        assert [d.rule for d in rec.degraded] == ["filesystem.read[6]"]
        assert "ioctl_dev" in rec.degraded[0].item


@needs_abi(4)  # capping at 4 needs a kernel that has it
def test_default_policy_runs_out_of_the_box_at_abi_4(box: Box) -> None:
    """On stock Ubuntu 24.04 (ABI 4, simulated) the embedded default runs with nothing
    degraded: the supervisor scopes signals where Landlock cannot."""
    ran = run_main(["--", "true"], box=box, env={"CVG_LANDLOCK_ABI_MAX": "4"})
    assert ran.rc == 0, ran.err
    assert ran.err == ""
    ((_, rec),) = [load_record(p) for p in box.records()]
    assert not rec.allow_degraded
    assert rec.degraded == []
    loud = run_main(["-v", "--", "true"], box=box, env={"CVG_LANDLOCK_ABI_MAX": "4"})
    assert loud.rc == 0 and "degraded" not in loud.err


# --- 126: could not be executed ------------------------------------------------------------


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_missing_execute_grant_is_126(identity: Identity, box: Box) -> None:
    """The kernel refuses exec: the file is readable and mode 0755, but outside the
    execute grant."""
    tools = box.root / "tools"
    tools.mkdir()
    tools.chmod(0o755)
    copy = tools / "mytrue"
    shutil.copy2("/usr/bin/true", copy)
    copy.chmod(0o755)
    # Without the sandbox the copy runs.
    assert subprocess.run([str(copy)], check=False).returncode == 0

    loader = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
    policy = make_policy(
        box.share,
        filesystem={
            "read": ["/usr", "/etc", "/lib", "/lib64", str(tools)],
            "write": [],
            "execute": ["/usr/bin", loader],
        },
    )
    control = run_main(["-p", str(policy), "--", "/usr/bin/true"], box=box, user=identity)
    assert control.rc == 0, control.err  # the policy does execute what it grants

    ran = run_main(["-p", str(policy), "--", str(copy)], box=box, user=identity)
    assert ran.rc == 126, ran.err
    line = _one_line(ran.err)
    assert "Permission denied" in line and "execute" in line
    recs = [rec for _, rec in map(load_record, box.records())]
    assert sorted((r.exit.meaning, r.exit.status) for r in recs) == [
        ("exited", 0),
        ("not_executable", 126),
    ]


@pytest.mark.parametrize("where", ["absolute", "relative-to-cwd"])
def test_non_executable_file_is_126(identity: Identity, box: Box, where: str) -> None:
    script = box.cwd / "tool"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o644)
    command = str(script) if where == "absolute" else "./tool"
    ran = run_main(["--", command], box=box, user=identity)
    assert ran.rc == 126, ran.err
    assert ran.out == ""
    assert "not executable" in _one_line(ran.err)
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.status) == ("not_executable", 126)


@needs_abi(3)  # below it every read grant is degraded (truncate), so refused
def test_relative_command_resolves_against_cwd(identity: Identity, box: Box) -> None:
    """`--cwd DIR -- ./tool` runs DIR/tool, wherever cvg-run itself was started."""
    script = box.cwd / "tool"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    policy = make_policy(box.share, filesystem={"execute": ["/usr", "/bin", "/lib", "/lib64",
                                                            "${CWD}"]})  # fmt: skip
    argv = ["-p", str(policy), "--", "./tool"]
    ran = run_main(argv, box=box, user=identity, before=lambda: os.chdir("/"))
    assert (ran.rc, ran.out) == (0, "ran\n"), ran.err


def test_directory_is_126(identity: Identity, box: Box) -> None:
    ran = run_main(["--", "/usr/bin"], box=box, user=identity)
    assert ran.rc == 126, ran.err
    _one_line(ran.err)


# --- 127: not found ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["no-such-command-cvg", "/usr/bin/no-such-command-cvg", "./no-such-tool"]
)
def test_not_found_is_127(identity: Identity, box: Box, command: str) -> None:
    ran = run_main(["--", command], box=box, user=identity)
    assert ran.rc == 127, ran.err
    assert "not found" in _one_line(ran.err)
    _, rec = only_record(box)
    assert (rec.exit.meaning, rec.exit.status) == ("not_found", 127)


def test_not_found_on_the_policy_path(identity: Identity, box: Box) -> None:
    """The tool's PATH is the policy's, not the caller's."""
    tools = box.root / "tools"
    tools.mkdir()
    tools.chmod(0o755)
    (tools / "cvg-only-here").write_text("#!/bin/sh\necho ran\n")
    (tools / "cvg-only-here").chmod(0o755)
    ran = run_main(
        ["--", "cvg-only-here"],
        box=box,
        user=identity,
        env={"PATH": f"{tools}:/usr/bin:/bin"},
    )
    assert ran.rc == 127, ran.err
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in _one_line(ran.err)


# --- every meaning is covered --------------------------------------------------------------

COVERED = {
    "exited": "test_tool_status_is_passed_through",
    "signaled": "test_tool_killed_by_signal_is_128_plus_n",
    "wall_clock": "test_wall_clock_is_124",
    "not_started": "test_degraded_policy_is_refused_then_allowed",
    "not_executable": "test_missing_execute_grant_is_126",
    "not_found": "test_not_found_is_127",
    "limit": "test_run_processes.py::test_fork_storm_is_stopped",
    "protected_created": (
        "test_run_protected_created.py::test_protected_names_created_in_new_directories"
    ),
}


def test_every_exit_meaning_has_a_test() -> None:
    assert set(COVERED) == set(get_args(ExitMeaning))
