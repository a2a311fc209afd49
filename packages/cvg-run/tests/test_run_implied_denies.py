"""Secrets and protected paths beneath a broad grant stay out unless named exactly.

``read: [${HOME}]`` names the home, not ``~/.ssh/id_rsa`` or ``~/.env``; ``write:
[${CWD}]`` names the repository, not its ``.git/config``. Each test runs the same tool
bare first, where it reaches the canaries (the premise), then under cvg-run, as root
and as the unprivileged user. The oracles are outside the code under test: the
canaries' bytes on disk and in what the tool printed.
"""

from __future__ import annotations

import json
import pwd
import subprocess
from pathlib import Path
from typing import Any

from runhelp import PY, STEPS, Box, make_policy, only_record, run_main

from cvg_testing import needs_abi

pytestmark = needs_abi(1)

Identity = pwd.struct_passwd | None

KEY = "canary-7f2a-ssh-key"
ENV = "canary-7f2a-env"
GIT = "[core]\n\tbare = false\n"
SYSTEM = ["/usr", "/etc", "/lib", "/lib64", "/bin"]

TOOL = (
    STEPS
    + r"""
home, repo = sys.argv[1], sys.argv[2]
def append(p, text):
    with open(p, "a") as f:
        f.write(text)
    return "OK"
H = lambda *n: os.path.join(home, *n)
R = lambda *n: os.path.join(repo, *n)
step("list home", lambda: sorted(os.listdir(home)))
step("notes", lambda: read(H("notes")))
step("id_rsa", lambda: read(H(".ssh", "id_rsa")))
step("list .ssh", lambda: sorted(os.listdir(H(".ssh"))))
step(".env", lambda: read(H(".env")))
step("list repo", lambda: sorted(os.listdir(repo)))
step("list .git", lambda: sorted(os.listdir(R(".git"))))
step("read config", lambda: read(R(".git", "config")))
step("append config", lambda: append(R(".git", "config"), "\tfsmonitor = /tmp/x\n"))
step("create in repo", lambda: append(R("new.txt"), "new\n"))
step("edit in repo", lambda: append(R("a.txt"), "edited\n"))
print(json.dumps(out), flush=True)
"""
)


def make_world(box: Box) -> tuple[Path, Path]:
    """A home holding an SSH key, a .env and a plain file; a repository with its
    .git/config, in the working directory. Readable and writable by every identity."""
    home, repo = box.home, box.cwd
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / ".env").write_text(ENV)
    (home / "notes").write_text("notes\n")
    (repo / ".git").mkdir(exist_ok=True)
    (repo / ".git" / "config").write_text(GIT)
    (repo / "a.txt").write_text("a\n")
    for d in (home, home / ".ssh", repo, repo / ".git"):
        d.chmod(0o777)
    for f in (home / ".ssh" / "id_rsa", home / ".env", home / "notes",
              repo / ".git" / "config", repo / "a.txt"):  # fmt: skip
        f.chmod(0o666)
    return home, repo


def results(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, stdout
    got: dict[str, Any] = json.loads(lines[-1])
    return got


def bare(box: Box, identity: Identity) -> dict[str, Any]:
    home, repo = make_world(box)
    user = identity
    ran = subprocess.run(
        [PY, "-c", TOOL, str(home), str(repo)], capture_output=True, text=True, timeout=60,
        cwd=repo, user=user.pw_uid if user else None, group=user.pw_gid if user else None,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return results(ran.stdout)


def confined(box: Box, identity: Identity, **filesystem: Any) -> tuple[dict[str, Any], str]:
    home, repo = make_world(box)
    policy = make_policy(box.share, filesystem={"write": ["${SCRATCH}", "/dev/null"],
                                                 **filesystem})  # fmt: skip
    argv = ["-p", str(policy), "--", PY, "-c", TOOL, str(home), str(repo)]
    ran = run_main(argv, box=box, user=identity)
    assert ran.rc == 0, ran.err
    return results(ran.out), ran.out


def test_bare_the_tool_reaches_every_canary(box: Box, identity: Identity) -> None:
    got = bare(box, identity)
    assert got["id_rsa"] == KEY and got[".env"] == ENV
    assert got["append config"] == "OK"
    assert GIT + "\tfsmonitor" in (box.cwd / ".git" / "config").read_text()


def test_reading_the_home_keeps_its_secrets_out(box: Box, identity: Identity) -> None:
    got, text = confined(box, identity, read=["${HOME}", *SYSTEM])
    assert got["id_rsa"] == "EACCES" and got[".env"] == "EACCES", got
    assert got["list .ssh"] == "EACCES", got
    assert KEY not in text and ENV not in text
    # The home itself keeps working: listable, its other files readable.
    assert got["list home"] == [".env", ".ssh", "notes"], got
    assert got["notes"] == "notes\n"


def test_a_secret_named_exactly_is_granted(box: Box, identity: Identity) -> None:
    got, text = confined(box, identity, read=["${HOME}", "${HOME}/.ssh", *SYSTEM])
    assert got["id_rsa"] == KEY and got["list .ssh"] == ["id_rsa"], got
    assert got[".env"] == "EACCES" and ENV not in text  # only what is named


def test_writing_the_repository_keeps_git_config_read_only(box: Box, identity: Identity) -> None:
    got, _ = confined(box, identity, read=SYSTEM, write=["${SCRATCH}", "/dev/null", "${CWD}"])
    assert got["append config"] == "EACCES", got
    assert (box.cwd / ".git" / "config").read_text() == GIT
    assert got["read config"] == GIT and got["list .git"] == ["config"], got
    # The rest of the repository stays writable, new files in its top included.
    assert got["create in repo"] == "OK" and got["edit in repo"] == "OK", got
    assert (box.cwd / "new.txt").read_text() == "new\n"
    assert (box.cwd / "a.txt").read_text() == "a\nedited\n"


def test_git_config_named_exactly_is_writable(box: Box, identity: Identity) -> None:
    write = ["${SCRATCH}", "/dev/null", "${CWD}", "${CWD}/.git/config"]
    got, _ = confined(box, identity, read=SYSTEM, write=write)
    assert got["append config"] == "OK", got
    assert (box.cwd / ".git" / "config").read_text() == GIT + "\tfsmonitor = /tmp/x\n"


def test_a_secret_made_after_the_plan_was_cached_is_denied(box: Box, identity: Identity) -> None:
    policy = make_policy(box.share, filesystem={"read": ["${HOME}", *SYSTEM],
                                                 "write": ["${SCRATCH}", "/dev/null"]})  # fmt: skip
    token = box.home / ".vault-token"
    argv = ["-p", str(policy), "--", PY, "-c", f"print(open({str(token)!r}).read())"]
    first = run_main(argv, box=box, user=identity)
    assert first.rc != 0 and "FileNotFoundError" in first.err, first.err
    plans = sorted((box.cache / "cvg" / "plans").glob("*.plan"))
    assert len(plans) == 1  # the plan is cached
    token.write_text(KEY)
    token.chmod(0o666)
    again = run_main(argv, box=box, user=identity)
    assert again.rc != 0 and "PermissionError" in again.err, again.err
    assert KEY not in again.out
    # Bare, the same identity reads it: the denial is cvg's.
    user = identity
    ran = subprocess.run(
        [PY, "-c", f"print(open({str(token)!r}).read())"], capture_output=True, text=True,
        user=user.pw_uid if user else None, group=user.pw_gid if user else None, timeout=60,
    )  # fmt: skip
    assert ran.stdout.strip() == KEY


def test_a_traced_run_with_an_implied_deny_names_the_refused_file(
    box: Box, identity: Identity
) -> None:
    # The implied deny of ~/.ssh makes the supervisor serve every path call; the file
    # outside every grant is still refused by Landlock, and the trace must say so.
    outside = box.share / "outside.txt"
    outside.write_text(KEY)
    outside.chmod(0o666)
    make_world(box)
    policy = make_policy(box.share, filesystem={"read": ["${HOME}", *SYSTEM],
                                                 "write": ["${SCRATCH}", "/dev/null"]})  # fmt: skip
    argv = ["--trace", "-p", str(policy), "--", PY, "-c", f"open({str(outside)!r}).read()"]
    ran = run_main(argv, box=box, user=identity)
    assert ran.rc != 0 and "PermissionError" in ran.err, ran.err
    data, _ = only_record(box)
    assert data["plan"]["implied"], data["plan"]
    mine = [d for d in data["denials"] if d.get("path") == str(outside)]
    assert mine and mine[0]["mechanism"] == "landlock_fs", data["denials"]
