"""The embedded default policy keeps known secrets out, from any working directory.

Each secret is first read bare by the same identity (the attack works without cvg),
then under ``cvg-run -- CMD`` with no policy, where it must not appear.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest
from runhelp import Box, run_main, token

Identity = pwd.struct_passwd | None


def _plant(d: Path, names: list[str], user: Identity) -> str:
    secret = token()
    for name in names:
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secret + "\n")
        if user is not None:
            os.chown(path.parent, user.pw_uid, user.pw_gid)
            os.chown(path, user.pw_uid, user.pw_gid)
    return secret


def _bare(user: Identity, cwd: Path, names: list[str]) -> str:
    def demote() -> None:
        if user is not None:
            os.setgroups([])
            os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
            os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)

    script = "; ".join(f"cat {n} 2>/dev/null" for n in names)
    done = subprocess.run(["sh", "-c", script], cwd=cwd, preexec_fn=demote,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout


def test_run_from_home_reads_no_key(identity: Identity, box: Box) -> None:
    names = [".ssh/id_rsa", ".env", ".aws/credentials"]
    secret = _plant(box.home, names, identity)
    assert secret in _bare(identity, box.home, names)
    ran = run_main(["--cwd", str(box.home), "--", "sh", "-c",
                    "; ".join(f"cat {n}" for n in names)],
                   box=box, user=identity, cwd=False)  # fmt: skip
    assert secret not in ran.out and secret not in ran.err
    assert "Permission denied" in ran.err


def test_run_from_a_project_reads_its_files_but_not_its_secrets(
    identity: Identity, box: Box
) -> None:
    secret = _plant(box.cwd, [".env", "server.key"], identity)
    (box.cwd / "README").write_text("public\n")
    assert secret in _bare(identity, box.cwd, [".env", "server.key"])
    ran = run_main(["--", "sh", "-c", "cat README; cat .env; cat server.key"],
                   box=box, user=identity)  # fmt: skip
    assert "public" in ran.out
    assert secret not in ran.out


def test_root_reads_no_shadow_under_the_default_policy(box: Box) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: as an ordinary user the file permissions refuse it")
    shadow = Path("/etc/shadow").read_text()
    assert shadow
    ran = run_main(["--", "cat", "/etc/shadow"], box=box)
    assert ran.rc != 0 and ran.out == ""
    # The rest of /etc still reads.
    assert run_main(["--", "cat", "/etc/passwd"], box=box).out.startswith("root:")
