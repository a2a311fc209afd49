"""cvg-exec end to end: a hand-written plan, a real command, the real kernel.

Each test runs cvg-exec's main() in a forked child (as root and as an
unprivileged user) so the confinement never touches the test process, and
the command it execs is a real binary from /usr.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from cvg_kernel.cli import main
from cvg_testing import spawn

SYSTEM = [{"path": "/usr", "access": ["read_file", "read_dir", "execute"]},
          {"path": "/etc/ld.so.cache", "access": ["read_file"]}]  # fmt: skip


def plan_file(d: Path, **extra: object) -> Path:
    plan = {"kind": "cvg.plan", "schema_version": "1.0"}
    plan.update(extra)
    p = d / "plan.json"
    p.write_text(json.dumps(plan))
    p.chmod(0o644)
    return p


def landlock(*rules: dict) -> dict:
    return {"fs_rules": [*SYSTEM, *rules]}


def test_denies_read_outside_grants_and_allows_granted(files: Path, identity) -> None:
    plan = plan_file(
        files,
        landlock=landlock({"path": str(files / "granted.txt"), "access": ["read_file"]}),
    )
    # The oracle first: with no sandbox the secret is readable by this identity.
    bare = spawn(
        lambda: os.execv("/usr/bin/cat", ["cat", str(files / "secret.txt")]), user=identity
    )
    assert (bare.exitcode, bare.stdout) == (0, b"secret\n")

    ok = spawn(
        lambda: main(["--plan", str(plan), "--", "cat", str(files / "granted.txt")]), user=identity
    )
    assert (ok.exitcode, ok.stdout) == (0, b"granted\n"), ok.stderr

    denied = spawn(
        lambda: main(["--plan", str(plan), "--", "cat", str(files / "secret.txt")]), user=identity
    )
    assert denied.exitcode == 1
    assert denied.stdout == b""
    assert b"Permission denied" in denied.stderr


def test_plan_from_stdin(files: Path, identity) -> None:
    plan = plan_file(files, landlock=landlock())
    r = spawn(lambda: main(["--plan", "-", "--", "true"]), user=identity, stdin=plan.read_bytes())
    assert r.exitcode == 0, r.stderr


@pytest.mark.parametrize(
    ("argv", "code"),
    [(["no-such-command-cvg"], 127), (["/nonexistent/bin/x"], 127)],
)
def test_not_found_is_127(files: Path, identity, argv: list[str], code: int) -> None:
    plan = plan_file(files, landlock=landlock(), environment={"set": {"PATH": "/usr/bin"}})
    r = spawn(lambda: main(["--plan", str(plan), "--", *argv]), user=identity)
    assert r.exitcode == code, r.stderr
    assert r.stderr.startswith(b"cvg-exec: ")


def test_missing_execute_grant_is_126(files: Path, identity) -> None:
    # /usr readable but not executable: the kernel refuses the exec itself.
    plan = plan_file(
        files, landlock={"fs_rules": [{"path": "/usr", "access": ["read_file", "read_dir"]}]}
    )
    bare = spawn(lambda: os.execv("/usr/bin/true", ["true"]), user=identity)
    assert bare.exitcode == 0
    r = spawn(lambda: main(["--plan", str(plan), "--", "/usr/bin/true"]), user=identity)
    assert r.exitcode == 126, r.stderr
    assert b"execute granted" in r.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", b"not valid JSON"),
        ('{"kind": "cvg.policy", "schema_version": "1.0"}', b"$.kind"),
        ('{"kind": "cvg.plan", "schema_version": "2.0"}', b"not supported"),
        ('{"kind": "cvg.plan", "schema_version": "1.0", "landlok": {}}', b"$.landlok"),
        (
            '{"kind": "cvg.plan", "schema_version": "1.0", "landlock": {"fs_rules": '
            '[{"path": "${NOPE}/x", "access": ["read_file"]}]}}',
            b"unknown variable ${NOPE}",
        ),
        (
            '{"kind": "cvg.plan", "schema_version": "1.0", "landlock": {"fs_rules": '
            '[{"path": "/usr", "access": ["reed_file"]}]}}',
            b"reed_file",
        ),
        (
            '{"kind": "cvg.plan", "schema_version": "1.0", "seccomp": {"deny": ["no_such_call"]}}',
            b"no_such_call",
        ),
        ('{"kind": "cvg.plan", "schema_version": "1.0", "rlimits": {"bogus": 1}}', b"bogus"),
        (
            '{"kind": "cvg.plan", "schema_version": "1.0", "capabilities": {"keep": ["CAP_X"]}}',
            b"CAP_X",
        ),
    ],
)
def test_bad_plan_is_one_line_and_125(world_dir: Path, text: str, message: bytes) -> None:
    p = world_dir / "bad.json"
    p.write_text(text)
    r = spawn(lambda: main(["--plan", str(p), "--", "true"]))
    assert r.exitcode == 125
    assert message in r.stderr, r.stderr
    assert r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr


def test_usage_errors_are_2(world_dir: Path) -> None:
    assert spawn(lambda: main(["--plan", "x"])).exitcode == 2
    assert spawn(lambda: main(["--", "true"])).exitcode == 2
    r = spawn(lambda: main(["--plan", "x", "--var", "novalue", "--", "true"]))
    assert r.exitcode == 2 and b"NAME=VALUE" in r.stderr


def test_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "exit status" in out and "125" in out and "cvg-validate --compile" in out


def test_environment_comes_from_the_plan_alone(files: Path, identity) -> None:
    plan = plan_file(
        files,
        landlock=landlock(),
        environment={"set": {"PATH": "/usr/bin", "GREETING": "${SCRATCH}/hi"}, "pass": ["LANG"]},
    )

    def run() -> int:
        os.environ["CVG_TEST_SECRET"] = "hunter2"
        os.environ["LANG"] = "C.UTF-8"
        return main(["--plan", str(plan), "--var", "SCRATCH=/s", "--", "env"])

    r = spawn(run, user=identity)
    assert r.exitcode == 0, r.stderr
    assert sorted(r.stdout.decode().splitlines()) == [
        "GREETING=/s/hi",
        "LANG=C.UTF-8",
        "PATH=/usr/bin",
    ]


def test_inherited_descriptor_is_closed(files: Path, identity) -> None:
    plan = plan_file(files, landlock=landlock())
    leak = files / "granted.txt"

    def open_fd5() -> None:
        fd = os.open(leak, os.O_RDONLY)
        os.dup2(fd, 5, inheritable=True)

    # Oracle: without cvg-exec, the shell reads the inherited descriptor.
    bare = spawn(
        lambda: os.execv("/usr/bin/sh", ["sh", "-c", "cat <&5"]), user=identity, before=open_fd5
    )
    assert bare.stdout == b"granted\n"
    r = spawn(
        lambda: main(["--plan", str(plan), "--", "sh", "-c", "cat <&5"]),
        user=identity,
        before=open_fd5,
    )
    assert r.exitcode != 0 and r.stdout == b""
    assert b"5" in r.stderr  # "sh: 1: 5: Bad file descriptor"


def _status(text: bytes) -> dict[str, str]:
    out = {}
    for line in text.decode().splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def test_no_capabilities_nnp_and_seccomp(files: Path, identity) -> None:
    plan = plan_file(files, landlock=landlock({"path": "/proc", "access": ["read_file"]}))
    r = spawn(lambda: main(["--plan", str(plan), "--", "cat", "/proc/self/status"]), user=identity)
    assert r.exitcode == 0, r.stderr
    st = _status(r.stdout)
    assert st["CapEff"] == st["CapPrm"] == st["CapInh"] == st["CapAmb"] == "0000000000000000"
    if identity is None and os.geteuid() == 0:
        # Root loses the bounding set too; an unprivileged caller cannot touch it
        # (no CAP_SETPCAP) and no_new_privs stops it from gaining anything on exec.
        assert st["CapBnd"] == "0000000000000000"
    assert st["NoNewPrivs"] == "1"
    assert st["Seccomp"] == "2"


def test_rlimits_bite(files: Path, identity) -> None:
    out = files / "out"
    out.mkdir()
    out.chmod(0o777)
    plan = plan_file(
        files,
        landlock=landlock(
            {"path": str(out), "access": ["write_file", "make_reg", "read_file", "read_dir"]}
        ),
        rlimits={"fsize": 4096, "nofile": 64},
    )
    big = f"yes | head -c 100000 > {out}/big"
    bare = spawn(lambda: os.execv("/usr/bin/sh", ["sh", "-c", big + "2"]), user=identity)
    assert bare.exitcode == 0 and (out / "big2").stat().st_size == 100000
    r = spawn(
        lambda: main(["--plan", str(plan), "--", "sh", "-c", "ulimit -c; ulimit -n; " + big]),
        user=identity,
    )
    assert r.stdout.split() == [b"0", b"64"], r.stderr
    # The shell's child dies of SIGXFSZ at the 4 KiB file-size limit.
    assert (out / "big").stat().st_size == 4096
    assert r.exitcode == 128 + signal.SIGXFSZ


class _NoImports:
    """A meta-path finder that refuses every import: stands for an interpreter
    whose own library the plan does not grant."""

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        raise ImportError(f"import of {name} after confinement")


def test_nothing_is_imported_between_confinement_and_exec(files: Path, identity) -> None:
    """A PATH search must not import (os.execvpe imports warnings): after
    Landlock the interpreter's library may be unreadable."""
    plan = plan_file(
        files, landlock=landlock(), environment={"set": {"PATH": "/nonexistent:/usr/bin"}}
    )

    def run() -> int:
        sys.modules.pop("warnings", None)
        sys.meta_path.insert(0, _NoImports())
        return main(["--plan", str(plan), "--", "true"])

    r = spawn(run, user=identity)
    assert r.exitcode == 0, r.stderr
