"""Protected paths that do not exist when the tool starts, created beneath a write grant.

Landlock binds its rules to inodes that exist at the start: ``write: [${CWD}, ${HOME}]``
covers a ``.git/hooks/post-checkout`` or a ``~/.config/autostart/x.desktop`` the tool
makes in directories that did not exist either. Each attack runs bare first, where the
tool creates the names (the oracle: they exist afterwards, as the tool wrote them), then
under cvg-run, as root and as the unprivileged user: the tool's own report shows
whether a layer refused it (only cvg's own config directory is refused, by the
supervisor), and after the run the name is gone from its place, found beside it as
``NAME.cvg-moved-RUNID`` with the tool's bytes, listed in the record, and cvg-run exits
122.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from runhelp import (
    PY,
    Box,
    bare_stdout,
    make_policy,
    only_record,
    procs_with,
    run_main,
    token,
    wait_for,
)

from cvg_testing import needs_abi

pytestmark = needs_abi(1)

Identity = pwd.struct_passwd | None

EXIT_PROTECTED_CREATED = 122
MARK = "planted-by-the-tool"

# Each step prints its outcome: OK or the errno's name. Every step is tried.
TOOL = r"""
import errno, json, os, sys
cwd, home, mark, what = sys.argv[1:5]
out = {}
def step(name, fn):
    try:
        fn()
        out[name] = "OK"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
def write(p, text=mark):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
if what == "names":
    step("hook", lambda: write(cwd + "/.git/hooks/post-checkout", "#!/bin/sh\n" + mark))
    step("autostart", lambda: write(home + "/.config/autostart/x.desktop"))
    step("bashrc", lambda: write(home + "/.bashrc"))
    step("vscode", lambda: write(cwd + "/.vscode/tasks.json"))
    step("cvg config", lambda: write(home + "/.config/cvg/policies/p.yaml"))
    step("plain file", lambda: write(cwd + "/notes.txt"))
elif what == "links":
    target = sys.argv[5]
    step("autostart link", lambda: (os.makedirs(home + "/.config"),
                                    os.symlink(target, home + "/.config/autostart")))
    step("gitfile", lambda: write(cwd + "/.git", "gitdir: " + target + "\n"))
elif what == "locked":
    step("hook", lambda: write(cwd + "/.git/hooks/post-commit"))
    step("lock .git", lambda: os.chmod(cwd + "/.git", 0))
elif what == "plain":
    step("plain file", lambda: write(cwd + "/notes.txt"))
print(json.dumps(out), flush=True)
"""

# Leaves a daemon (its own session, reparented) that waits for the tool's first process
# to end, then writes ~/.bashrc; the first process exits once the daemon is ready.
DAEMON = r"""
import os, sys, time
home, ready, mark = sys.argv[1:4]
main = os.getpid()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # a daemon's: whoever waits on the tool's output is not held
            os.dup2(null, fd)
        open(ready, "w").close()
        while os.path.exists(f"/proc/{main}"):
            time.sleep(0.01)
        time.sleep(0.5)
        with open(home + "/.bashrc", "w") as f:
            f.write(mark)
        os._exit(0)
    os._exit(0)
while not os.path.exists(ready):
    time.sleep(0.01)
"""


def _policy(box: Box) -> Path:
    return make_policy(
        box.share, filesystem={"write": ["${SCRATCH}", "/dev/null", "${CWD}", "${HOME}"]}
    )


def _tool(box: Box, what: str, *extra: str) -> list[str]:
    return [PY, "-c", TOOL, str(box.cwd), str(box.home), MARK, what, *extra]


def _confined(identity: Identity, box: Box, argv: list[str]) -> tuple[int, str, dict[str, Any]]:
    """``argv`` under cvg-run with write on the working directory and the home: its
    status, its stdout, and the record as JSON."""
    ran = run_main(["-p", str(_policy(box)), "--", *argv], box=box, user=identity)
    data, _ = only_record(box)  # validated by cvg_schema.RunRecord on the way
    return ran.rc, ran.out + ran.err, data


def _moved(item: dict[str, Any]) -> Path:
    moved = Path(item["moved_to"])
    assert moved.parent == Path(item["path"]).parent, item
    assert moved.name.startswith(Path(item["path"]).name + ".cvg-moved-"), item
    return moved


@pytest.mark.parametrize("attacker", ["bare", "confined"])
def test_protected_names_created_in_new_directories(
    identity: Identity, box: Box, attacker: str
) -> None:
    """``.git/hooks``, ``~/.config/autostart``, ``~/.bashrc`` and ``.vscode`` do not
    exist, nor do ``.git`` and ``~/.config``. Bare, the tool creates them all. Confined,
    Landlock and the supervisor let it (its own report says OK) but for cvg's own config
    directory, denied by name; after the run each is moved aside."""
    hook = box.cwd / ".git" / "hooks"
    autostart = box.home / ".config" / "autostart"
    bashrc = box.home / ".bashrc"
    vscode = box.cwd / ".vscode"
    argv = _tool(box, "names")
    if attacker == "bare":
        said = json.loads(bare_stdout(identity, box, argv))
        assert set(said.values()) == {"OK"}, said
        assert (hook / "post-checkout").read_text().endswith(MARK)
        assert (autostart / "x.desktop").read_text() == MARK
        assert bashrc.read_text() == MARK and (vscode / "tasks.json").read_text() == MARK
        return
    rc, out, data = _confined(identity, box, argv)
    said = json.loads(out.splitlines()[0])
    assert said == {"hook": "OK", "autostart": "OK", "bashrc": "OK", "vscode": "OK",
                    "cvg config": "EACCES", "plain file": "OK"}, out  # fmt: skip
    assert rc == EXIT_PROTECTED_CREATED, out
    assert data["exit"]["meaning"] == "protected_created"
    assert "the tool's status was 0" in data["exit"]["detail"]
    created = {item["path"]: item for item in data["protected_created"]}
    assert set(created) == {str(hook), str(autostart), str(bashrc), str(vscode)}, created
    for path, kind in ((hook, "directory"), (autostart, "directory"), (bashrc, "file"),
                       (vscode, "directory")):  # fmt: skip
        item = created[str(path)]
        assert item["kind"] == kind and item["protects"] == str(path), item
        assert not os.path.lexists(path), path
        assert f"protected path created during the run: {path}" in out, out
    assert (_moved(created[str(hook)]) / "post-checkout").read_text().endswith(MARK)
    assert (_moved(created[str(autostart)]) / "x.desktop").read_text() == MARK
    assert _moved(created[str(bashrc)]).read_text() == MARK
    assert (box.cwd / "notes.txt").read_text() == MARK  # the grant itself is untouched
    assert not (box.home / ".config" / "cvg").exists()


@pytest.mark.parametrize("attacker", ["bare", "confined"])
def test_a_link_or_file_planted_in_the_way(identity: Identity, box: Box, attacker: str) -> None:
    """``~/.config/autostart`` made a symbolic link to a directory holding a desktop
    entry, and ``.git`` made a file naming another git directory: each stands for a
    protected path without being one by name. Confined, each is moved aside as what it
    is (the link as a link, never followed) and what it pointed to is left alone."""
    target = box.share / "elsewhere"
    target.mkdir()
    (target / "x.desktop").write_text("the target's own\n")
    target.chmod(0o755)
    autostart = box.home / ".config" / "autostart"
    gitfile = box.cwd / ".git"
    argv = _tool(box, "links", str(target))
    if attacker == "bare":
        said = json.loads(bare_stdout(identity, box, argv))
        assert said == {"autostart link": "OK", "gitfile": "OK"}, said
        assert (autostart / "x.desktop").read_text() == "the target's own\n"
        assert gitfile.read_text() == f"gitdir: {target}\n"
        return
    rc, out, data = _confined(identity, box, argv)
    assert json.loads(out.splitlines()[0]) == {"autostart link": "OK", "gitfile": "OK"}, out
    assert rc == EXIT_PROTECTED_CREATED, out
    created = {item["path"]: item for item in data["protected_created"]}
    assert set(created) == {str(autostart), str(gitfile)}, created
    assert created[str(autostart)]["kind"] == "symlink"
    assert created[str(gitfile)]["kind"] == "file"
    assert created[str(gitfile)]["protects"] == str(gitfile / "config")
    assert not os.path.lexists(autostart) and not os.path.lexists(gitfile)
    link = _moved(created[str(autostart)])
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert _moved(created[str(gitfile)]).read_text() == f"gitdir: {target}\n"
    assert sorted(os.listdir(target)) == ["x.desktop"]
    assert (target / "x.desktop").read_text() == "the target's own\n"


@pytest.mark.parametrize("attacker", ["bare", "confined"])
def test_a_directory_made_unsearchable_on_the_way(
    identity: Identity, box: Box, attacker: str
) -> None:
    """The tool creates ``.git/hooks/post-commit`` and then takes every permission off
    ``.git`` (chmod is not Landlock's): the hooks are still found and moved aside."""
    git = box.cwd / ".git"
    argv = _tool(box, "locked")
    try:
        if attacker == "bare":
            said = json.loads(bare_stdout(identity, box, argv))
            assert said == {"hook": "OK", "lock .git": "OK"}, said
            assert os.stat(git).st_mode & 0o777 == 0
            assert os.path.lexists(git / "hooks" / "post-commit")
            return
        rc, out, data = _confined(identity, box, argv)
        assert json.loads(out.splitlines()[0]) == {"hook": "OK", "lock .git": "OK"}, out
        assert rc == EXIT_PROTECTED_CREATED, out
        [item] = data["protected_created"]
        assert item["path"] == str(git / "hooks") and "moved_to" in item, item
        git.chmod(0o700)
        assert not os.path.lexists(git / "hooks")
        assert (_moved(item) / "post-commit").read_text() == MARK
    finally:
        git.chmod(0o700)


@pytest.mark.parametrize("attacker", ["bare", "confined"])
def test_a_daemon_that_writes_after_the_tool_ends(
    identity: Identity, box: Box, attacker: str
) -> None:
    """A daemon in its own session waits for the tool's first process to end, then
    writes ~/.bashrc. Bare, it does. Confined, cvg-run ends the whole tree before it
    looks, so nothing of the tool is left to write after the look: ~/.bashrc is not
    there once cvg-run returned, however long one waits for the daemon."""
    bashrc = box.home / ".bashrc"
    marker = token()
    ready = box.cwd / f"{marker}.ready"  # inside the grant
    argv = [PY, "-c", DAEMON, str(box.home), str(ready), MARK, marker]
    if attacker == "bare":
        bare_stdout(identity, box, argv)
        wait_for(lambda: bashrc.exists() and bashrc.read_text() == MARK, what="the daemon")
        return
    rc, out, data = _confined(identity, box, argv)
    assert ready.exists(), out  # the daemon was started
    time.sleep(1.5)  # three times the daemon's wait
    assert procs_with(marker) == []
    assert not os.path.lexists(bashrc), out
    if rc == EXIT_PROTECTED_CREATED:  # the daemon won the race to the kill: moved
        [item] = data["protected_created"]
        assert _moved(item).read_text() == MARK
    else:
        assert rc == 0 and "protected_created" not in data, (rc, out)


def test_what_was_there_at_the_start_is_left_alone(identity: Identity, box: Box) -> None:
    """A worktree's ``.git`` file and an existing ``~/.bashrc`` are the user's: a run that
    creates no protected path ends with the tool's status and moves nothing."""
    gitfile = box.cwd / ".git"
    gitfile.write_text("gitdir: /nonexistent/worktree\n")
    bashrc = box.home / ".bashrc"
    bashrc.write_text("# the user's\n")
    for p in (gitfile, bashrc):
        p.chmod(0o666)
    rc, out, data = _confined(identity, box, _tool(box, "plain"))
    assert json.loads(out.splitlines()[0]) == {"plain file": "OK"}, out
    assert rc == 0, out
    assert "protected_created" not in data and data["exit"]["meaning"] == "exited"
    assert gitfile.read_text() == "gitdir: /nonexistent/worktree\n"
    assert bashrc.read_text() == "# the user's\n"
    assert [n for n in os.listdir(box.cwd) if ".cvg-moved-" in n] == []


# A new repository, as git makes it, then the two ways a tool could turn it against the
# next git command: a hook under its exact name, and a key git runs a command from.
GIT_INIT = r"""
import subprocess, sys
what = sys.argv[1]
subprocess.run(["git", "init", "-q"], check=True)
if what == "hook":
    with open(".git/hooks/post-checkout", "w") as f:
        f.write("#!/bin/sh\n")
elif what == "fsmonitor":
    with open(".git/config", "a") as f:
        f.write("[core]\n\tfsmonitor = touch fsmonitor-ran\n")
print(sorted(__import__("os").listdir(".git/hooks"))[:1])
"""


@pytest.mark.parametrize("what", ["plain", "hook", "fsmonitor"])
def test_git_init_is_left_alone_unless_it_runs_something(
    identity: Identity, box: Box, what: str
) -> None:
    """``git init`` in the working directory makes ``.git/config`` and ``.git/hooks``,
    which git runs nothing from: left in place, the run ends with the tool's status. A
    hook under its exact name, or ``core.fsmonitor`` (run by the next ``git status``,
    outside the sandbox: the oracle below), is moved aside with 122."""
    git = shutil.which("git", path="/usr/bin:/bin")
    if git is None:
        pytest.skip("git is not installed")
    argv = [PY, "-c", GIT_INIT, what]
    rc, out, data = _confined(identity, box, argv)
    config, hooks = box.cwd / ".git" / "config", box.cwd / ".git" / "hooks"
    if what == "plain":
        assert rc == 0 and "protected_created" not in data, out
        assert config.is_file() and hooks.is_dir()
        return
    assert rc == EXIT_PROTECTED_CREATED, out
    moved = {item["path"] for item in data["protected_created"]}
    assert moved == {str(hooks) if what == "hook" else str(config)}, data["protected_created"]
    if what == "fsmonitor":
        kept = _moved(data["protected_created"][0])
        assert "fsmonitor" in kept.read_text()
        # The oracle: put back, the next git status outside the sandbox runs it.
        kept.rename(config)
        subprocess.run([git, "-c", "safe.directory=*", "status"], cwd=box.cwd,
                       capture_output=True, check=False)  # fmt: skip
        assert (box.cwd / "fsmonitor-ran").exists()


CLONED = """[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
[remote "origin"]
\turl = https://example.invalid/r.git
\tfetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
\tremote = origin
\tmerge = refs/heads/main
"""


@pytest.mark.parametrize(
    ("extra", "inert"),
    [
        ("", True),
        ("[include]\n\tpath = /tmp/x\n", False),
        ("[alias]\n\tst = !sh -c x\n", False),
        ("[core]\n\thooksPath = /tmp/h\n", False),
        ("[core]\n\tpager = less\n", False),
        ('[core]\n\tbare = "false"\n', False),
        ("[core]\n\tbare = false \\\n", False),
        ('[remote "x"]\n\turl = ext::sh -c x\n', False),
        ('[remote "x"]\n\tuploadpack = sh -c x\n', False),
        ("[remote.x]\n\turl = /tmp/r\n", False),
        ("[core]\n\tbare = false ; a comment\n", False),
    ],
)
def test_what_a_new_config_may_hold(tmp_path: Path, extra: str, inert: bool) -> None:
    """A config as ``git clone`` writes it runs nothing; a key git runs a command from,
    an include, or a line this judge does not read exactly, is not inert."""
    from cvg_run.inert import inert as judge

    (tmp_path / "config").write_text(CLONED + extra)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "config").symlink_to(tmp_path / "config")
    fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    linked = os.open(tmp_path / "linked", os.O_PATH | os.O_DIRECTORY)
    try:
        assert judge(fd, "config", f"{tmp_path}/.git/config") is inert
        # A link is never read through, whatever it leads to.
        assert judge(linked, "config", f"{tmp_path}/linked/.git/config") is False
    finally:
        os.close(fd)
        os.close(linked)
