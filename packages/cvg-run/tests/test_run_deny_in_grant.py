"""A denied entry inside a grant: the directory keeps working, the entry stays out.

With ``write: [${CWD}/proj]`` and ``deny: [${CWD}/proj/.env]`` the supervisor serves
the calls that name a path in ``proj`` (cvg_kernel.paths_guard). Each test runs the same
tool bare first, where every attack reaches the canary in ``.env`` (the premise), then
under cvg-run, as root and as the unprivileged user. The oracles are outside the code
under test: the canary's bytes on disk and in what the tool printed, and the files
the tool left in ``proj``.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from runhelp import PY, STEPS, Box, make_policy, run_main

from cvg_testing import needs_abi

pytestmark = needs_abi(1)

Identity = pwd.struct_passwd | None

CANARY = "canary-5d1e-env"
PLANTED = "planted-by-tool"

# Each step prints one JSON line: its name and what came of it (a value or an errno
# name). Every step is tried whatever the ones before it did.
TOOL = (
    STEPS
    + r"""
proj = sys.argv[1]
def write(p, text, mode="w"):
    with open(p, mode) as f:
        f.write(text)
    return "OK"
P = lambda *n: os.path.join(proj, *n)
os.umask(0o027)
step("list", lambda: sorted(os.listdir(proj)))
step("create", lambda: write(P("new.txt"), "new\n"))
step("read back", lambda: read(P("new.txt")))
step("mode", lambda: oct(os.stat(P("new.txt")).st_mode & 0o777))
step("mkdir", lambda: os.mkdir(P("made")) or "OK")
step("write in made", lambda: write(P("made", "f"), "deep\n"))
step("read in made", lambda: read(P("made", "f")))
step("rename", lambda: os.rename(P("new.txt"), P("renamed.txt")) or "OK")
step("renamed", lambda: read(P("renamed.txt")))
step("edit", lambda: write(P("a.txt"), "edited\n", "a"))
step("edited", lambda: read(P("a.txt")))
step("unlink made/f", lambda: os.unlink(P("made", "f")) or "OK")
step("rmdir made", lambda: os.rmdir(P("made")) or "OK")
def tmpfile():
    fd = os.open(proj, os.O_TMPFILE | os.O_RDWR, 0o660)
    try:
        return oct(os.fstat(fd).st_mode & 0o777)
    finally:
        os.close(fd)
step("tmpfile", tmpfile)
step("read .env", lambda: read(P(".env")))
step("read .env by ..", lambda: read(os.path.join(proj, "sub", "..", ".env")))
def at():
    fd = os.open(proj, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with open(os.open(".env", os.O_RDONLY, dir_fd=fd)) as f:
            return f.read()
    finally:
        os.close(fd)
step("read .env by dirfd", at)
step("read hard link", lambda: read(P("envlink")))
step("link .env", lambda: os.link(P(".env"), P("hl")) or "OK")
step("read link", lambda: read(P("hl")))
step("symlink .env", lambda: os.symlink(".env", P("sl")) or "OK")
step("read symlink", lambda: read(P("sl")))
step("rename .env away", lambda: os.rename(P(".env"), P("away")) or "OK")
step("read away", lambda: read(P("away")))
step("rename over .env", lambda: os.rename(P("renamed.txt"), P(".env")) or "OK")
step("unlink .env", lambda: os.unlink(P(".env")) or "OK")
step("recreate .env", lambda: write(P(".env"), sys.argv[2]))
step("read .env again", lambda: read(P(".env")))
step("append .env", lambda: write(P(".env"), "x", "a"))
step("truncate .env", lambda: os.truncate(P(".env"), 0) or "OK")
print(json.dumps(out), flush=True)
"""
)


def make_proj(where: Path) -> Path:
    proj = where / "proj"
    proj.mkdir()
    (proj / "sub").mkdir()
    (proj / "a.txt").write_text("a\n")
    (proj / ".env").write_text(CANARY)
    os.link(proj / ".env", proj / "envlink")  # made before the tool starts
    for p in (proj, proj / "sub"):
        p.chmod(0o777)
    for p in (proj / "a.txt", proj / ".env"):
        p.chmod(0o666)
    return proj


def policy_for(box: Box, right: str) -> Path:
    grants: dict[str, Any] = {"write": ["${SCRATCH}", "/dev/null"]}
    grants[right] = [*grants.get(right, []), "${CWD}/proj"]
    if right == "read":
        grants["read"] = [*grants["read"], "/usr", "/etc", "/lib", "/lib64", "/bin"]
    return make_policy(box.share, filesystem={**grants, "deny": ["${CWD}/proj/.env"]})


def results(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, stdout
    got: dict[str, Any] = json.loads(lines[-1])
    return got


def run_tool(box: Box, identity: Identity, right: str | None) -> tuple[dict[str, Any], str]:
    proj = box.cwd / "proj"
    if proj.exists():
        shutil.rmtree(proj)
    make_proj(box.cwd)
    argv = [PY, "-c", TOOL, str(proj), PLANTED]
    if right is None:
        user = identity
        bare = subprocess.run(
            argv, capture_output=True, text=True, timeout=60, cwd=box.cwd,
            user=user.pw_uid if user else None, group=user.pw_gid if user else None,
        )  # fmt: skip
        assert bare.returncode == 0, bare.stderr
        return results(bare.stdout), bare.stdout
    ran = run_main(["-p", str(policy_for(box, right)), "--", *argv], box=box, user=identity)
    assert ran.rc == 0, ran.err
    return results(ran.out), ran.out


def leftovers(proj: Path) -> dict[str, str]:
    """Every regular file left in proj and its content (the outside oracle)."""
    out = {}
    for top, _dirs, files in os.walk(proj):
        for name in files:
            path = Path(top, name)
            if path.is_file() and not path.is_symlink():
                out[str(path.relative_to(proj))] = path.read_text()
    return out


def test_bare_every_attack_reaches_the_denied_file(box: Box, identity: Identity) -> None:
    got, _ = run_tool(box, identity, None)
    assert got["read .env"] == CANARY
    assert got["read .env by dirfd"] == CANARY
    assert got["read hard link"] == CANARY
    assert got["read link"] == CANARY
    assert got["read symlink"] == CANARY
    assert got["read away"] == CANARY
    assert got["unlink .env"] == "OK" and got["recreate .env"] == "OK"
    assert got["read .env again"] == PLANTED


def test_a_write_grant_with_a_deny_keeps_the_directory_working(
    box: Box, identity: Identity
) -> None:
    got, text = run_tool(box, identity, "write")
    proj = box.cwd / "proj"
    assert got["list"] == [".env", "a.txt", "envlink", "sub"]
    assert got["create"] == "OK" and got["read back"] == "new\n"
    assert got["mode"] == "0o640"  # what the tool asked for, minus its umask
    assert got["mkdir"] == "OK" and got["write in made"] == "OK"
    assert got["read in made"] == "deep\n"
    assert got["rename"] == "OK" and got["renamed"] == "new\n"
    assert got["edit"] == "OK" and got["edited"] == "a\nedited\n"
    assert got["unlink made/f"] == "OK" and got["rmdir made"] == "OK"
    assert got["tmpfile"] == "0o640"
    # The denied entry: no way to read it, change it, replace it or reach it by another name.
    for name in ("read .env", "read .env by ..", "read .env by dirfd", "read hard link",
                 "append .env", "truncate .env", "link .env", "read symlink",
                 "rename .env away", "rename over .env", "unlink .env", "recreate .env",
                 "read .env again"):  # fmt: skip
        assert got[name] == "EACCES", (name, got)
    assert got["symlink .env"] == "OK"  # a link is only text; following it is refused
    assert got["read link"] == "ENOENT" and got["read away"] == "ENOENT"
    assert CANARY not in text and PLANTED not in text
    files = leftovers(proj)
    assert files[".env"] == CANARY and files["envlink"] == CANARY
    assert [n for n, content in files.items() if CANARY in content] == [".env", "envlink"]
    assert PLANTED not in files.values()
    assert files["renamed.txt"] == "new\n" and files["a.txt"] == "a\nedited\n"


def test_a_read_grant_with_a_deny_lists_and_reads_but_never_writes(
    box: Box, identity: Identity
) -> None:
    got, text = run_tool(box, identity, "read")
    assert got["list"] == [".env", "a.txt", "envlink", "sub"]
    assert got["edited"] == "a\n"  # readable
    for name in ("create", "mkdir", "edit", "tmpfile", "read .env", "read .env by dirfd",
                 "read hard link", "append .env", "unlink .env", "rename .env away",
                 "recreate .env", "symlink .env"):  # fmt: skip
        assert got[name] == "EACCES", (name, got)
    assert CANARY not in text
    assert leftovers(box.cwd / "proj") == {".env": CANARY, "envlink": CANARY, "a.txt": "a\n"}


RACE = r"""
import ctypes, json, os, sys, threading
proj, rounds = sys.argv[1], int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
benign, denied = (proj + "/aaaa").encode(), (proj + "/.env").encode()
buf = ctypes.create_string_buffer(benign, len(benign) + 1)
with open(benign, "w") as f:  # made now: under cvg-run no rule covers it, the supervisor opens it
    f.write("benign")
stop = False
def flip():
    while not stop:
        ctypes.memmove(buf, denied, len(denied))
        ctypes.memmove(buf, benign, len(benign))
threading.Thread(target=flip, daemon=True).start()
seen = {"benign": 0, "secret": 0, "refused": 0}
for _ in range(rounds):
    fd = libc.syscall(257, -100, buf, os.O_RDONLY, 0)  # openat, x86_64
    if fd < 0:
        seen["refused"] += 1
        continue
    data = os.read(fd, 100)
    os.close(fd)
    seen["secret" if b"canary" in data else "benign"] += 1
stop = True
print(json.dumps(seen), flush=True)
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the racer calls openat by number")
def test_a_racing_thread_never_gets_the_denied_file(box: Box, identity: Identity) -> None:
    proj = make_proj(box.cwd)
    argv = [PY, "-c", RACE, str(proj), "3000"]
    user = identity
    bare = subprocess.run(
        argv, capture_output=True, text=True, timeout=120,
        user=user.pw_uid if user else None, group=user.pw_gid if user else None,
    )  # fmt: skip
    bare_seen = json.loads(bare.stdout)
    assert bare_seen["secret"] > 0  # the premise: the flipped name reaches the canary
    (proj / "aaaa").unlink()
    ran = run_main(["-p", str(policy_for(box, "write")), "--", *argv], box=box, user=identity,
                   timeout=180)  # fmt: skip
    assert ran.rc == 0, ran.err
    seen = json.loads(ran.out.strip().splitlines()[-1])
    assert seen["secret"] == 0, seen
    assert seen["benign"] > 0 and seen["refused"] > 0, seen
    assert (proj / ".env").read_text() == CANARY


MODES = r"""
import errno, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        with open(name) as f:
            out[name] = f.read()
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
print(json.dumps(out), flush=True)
"""


def test_as_root_the_supervisor_meets_the_file_modes_the_tool_meets(
    box: Box, as_root: None
) -> None:
    proj = make_proj(box.cwd)
    for path in (proj / "locked", proj / "sub" / "locked"):
        path.write_text(CANARY)
        path.chmod(0)
    names = [str(proj / "locked"), str(proj / "sub" / "locked")]
    bare = subprocess.run([PY, "-c", MODES, *names], capture_output=True, text=True, timeout=60)
    assert set(results(bare.stdout).values()) == {CANARY}  # root with its capabilities
    ran = run_main(["-p", str(policy_for(box, "write")), "--", PY, "-c", MODES, *names], box=box)
    assert ran.rc == 0, ran.err
    # The tool has no CAP_DAC_OVERRIDE: the kernel refuses sub/locked for it, and the
    # supervisor, which opens proj/locked, refuses it the same way.
    assert results(ran.out) == dict.fromkeys(names, "EACCES")


GIT = shutil.which("git", path="/usr/bin:/bin")


def _git(identity: Identity, cwd: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip
    done = subprocess.run(
        [str(GIT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
        user=identity.pw_uid if identity else None, group=identity.pw_gid if identity else None,
    )  # fmt: skip
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_git_status_and_checkout_work_beside_a_denied_env(box: Box, identity: Identity) -> None:
    proj = box.cwd / "proj"
    proj.mkdir()
    if identity is not None:
        os.chown(proj, identity.pw_uid, identity.pw_gid)
    _git(identity, proj, "init", "-q", "-b", "main")
    (proj / "a.txt").write_text("a\n")
    (proj / "keep.txt").write_text("keep\n")
    (proj / ".env").write_text(CANARY)
    for p in proj.iterdir():
        if identity is not None and p.name != ".git":
            os.chown(p, identity.pw_uid, identity.pw_gid)
    _git(identity, proj, "add", "a.txt", "keep.txt")
    _git(identity, proj, "commit", "-q", "-m", "one")
    _git(identity, proj, "checkout", "-q", "-b", "other")
    _git(identity, proj, "rm", "-q", "a.txt")
    _git(identity, proj, "commit", "-q", "-m", "two")
    _git(identity, proj, "checkout", "-q", "main")
    (proj / "untracked.txt").write_text("u\n")
    if identity is not None:
        os.chown(proj / "untracked.txt", identity.pw_uid, identity.pw_gid)
    bare = _git(identity, proj, "status", "--porcelain")
    assert "?? untracked.txt" in bare  # the premise

    policy = policy_for(box, "write")
    env = {"HOME": str(proj), "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}

    def git(*args: str) -> str:
        ran = run_main(["-p", str(policy), "--", str(GIT), *args], box=box, user=identity,
                       env=env)  # fmt: skip
        assert ran.rc == 0, (args, ran.err)
        return ran.out

    assert git("-C", str(proj), "status", "--porcelain") == bare
    git("-C", str(proj), "checkout", "-q", "other")
    assert not (proj / "a.txt").exists() and (proj / "keep.txt").read_text() == "keep\n"
    git("-C", str(proj), "checkout", "-q", "main")
    assert (proj / "a.txt").read_text() == "a\n"
    assert git("-C", str(proj), "status", "--porcelain") == bare
    assert (proj / ".env").read_text() == CANARY


def test_the_warm_sandbox_keeps_the_entry_out_with_landlock_alone(box: Box) -> None:
    # The warm helper serves no held directory: Landlock alone keeps .env out and the
    # siblings' own rules stand; the held directory itself loses its own rights.
    from cvg_run.api import Sandbox

    proj = make_proj(box.cwd)
    bare = subprocess.run(["cat", str(proj / ".env")], capture_output=True)
    assert bare.stdout.decode() == CANARY  # the premise: bare, it is readable
    policy = policy_for(box, "write")
    with Sandbox(str(policy), cwd=str(box.cwd)) as sandbox:
        secret = sandbox.run(["cat", str(proj / ".env")], cwd=str(box.cwd))
        sibling = sandbox.run(["cat", str(proj / "a.txt")], cwd=str(box.cwd))
    assert secret.status != 0 and CANARY.encode() not in secret.stdout
    assert sibling.status == 0 and sibling.stdout == b"a\n"


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_under_trace_the_directory_keeps_working_and_the_entry_stays_out(
    box: Box, identity: Identity
) -> None:
    make_proj(box.cwd)
    proj = box.cwd / "proj"
    argv = ["--trace", "-p", str(policy_for(box, "write")), "--", PY, "-c", TOOL, str(proj),
            PLANTED]  # fmt: skip
    ran = run_main(argv, box=box, user=identity, timeout=120)
    assert ran.rc == 0, ran.err
    got = results(ran.out)
    assert got["list"] == [".env", "a.txt", "envlink", "sub"]
    assert got["create"] == "OK" and got["rename"] == "OK" and got["edited"] == "a\nedited\n"
    for name in ("read .env", "read hard link", "unlink .env", "recreate .env"):
        assert got[name] == "EACCES", (name, got)
    assert CANARY not in ran.out
    assert leftovers(proj)[".env"] == CANARY


REFUSED_TOOL = r"""
import errno, json, os, sys
proj, outside = sys.argv[1], sys.argv[2]
out = {}
for name, fn in (("read .env", lambda: open(os.path.join(proj, ".env")).read()),
                 ("unlink .env", lambda: os.unlink(os.path.join(proj, ".env")) or "OK"),
                 ("read outside", lambda: open(outside).read())):
    try:
        out[name] = fn()
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out), flush=True)
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_under_trace_the_supervisors_refusals_and_landlocks_are_recorded(
    box: Box, identity: Identity
) -> None:
    make_proj(box.cwd)
    proj = box.cwd / "proj"
    outside = box.root / "outside.txt"  # beneath no grant of the policy
    outside.write_text("outside-canary")
    outside.chmod(0o644)
    argv = [PY, "-c", REFUSED_TOOL, str(proj), str(outside)]
    user = identity
    bare = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=box.cwd,
        user=user.pw_uid if user else None, group=user.pw_gid if user else None,
    )  # fmt: skip
    assert results(bare.stdout) == {"read .env": CANARY, "unlink .env": "OK",
                                    "read outside": "outside-canary"}  # fmt: skip
    shutil.rmtree(proj)  # the bare run removed .env
    make_proj(box.cwd)

    record = box.share / "run.json"
    ran = run_main(["--trace", "--record", str(record), "-p", str(policy_for(box, "write")),
                    "--", *argv], box=box, user=identity, timeout=120)  # fmt: skip
    assert ran.rc == 0, ran.err
    assert results(ran.out) == {name: "EACCES" for name in ("read .env", "unlink .env",
                                                            "read outside")}  # fmt: skip
    assert (proj / ".env").read_text() == CANARY
    denials = [d for d in json.loads(record.read_text())["denials"] if d["mechanism"] != "none"]
    env = str(proj / ".env")
    # The supervisor's refusals, named: path, op, errno, the rule that refused them.
    mine = {(d["op"], d["path"]): d for d in denials if d["mechanism"] == "supervisor"}
    for op in ("read", "remove"):
        d = mine[(op, env)]
        assert (d["errno"], d["rule"]) == ("EACCES", "filesystem.deny[0]"), d
    assert f"cvg-run: denied: open {env} for read (filesystem.deny[0] denies {env}" in ran.err
    assert f"cvg-run: denied: remove {env} (filesystem.deny[0] denies {env}" in ran.err
    # Landlock's, outside every grant, which the supervisor let go on: seen by the trace.
    lands = [d for d in denials if d["mechanism"] == "landlock_fs"]
    assert [(d["path"], d["right"], d["rule"]) for d in lands] == [
        (str(outside), "read_file", "filesystem.read")
    ], denials
    assert f"cvg-run: denied: open {outside} for read (no filesystem.read grant" in ran.err
