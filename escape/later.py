"""The second phase of the persistence and state attacks (`later` in the registry):
what the user runs after the tool, as the same user and with no sandbox, and the
oracle that says whether it ran what the tool left behind.

The victims: `git status` and `git commit` in the working directory, an interactive
and a login bash, the desktop session's autostart and the user's systemd starting what
they hold, `git` looked up on a PATH that starts with ~/.local/bin, a later
default-policy cvg-run, and `cvg-explain --apply` on the last run's record. The
session and systemd are not running here: the runner does what they do at a login
(run the `Exec=` of each autostart entry, the `ExecStart=` of each enabled unit).

The oracle: a file in the attack's `outside/` directory holding the run's token, which
only the planted payload writes (the tool cannot write there under any policy of the
matrix), absent after the tool's run and present after the victim's; for
`cvg-explain`, the policy file gaining a grant on `outside/`.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import runtime
from oracles import read
from runtime import CVG_MAIN

if TYPE_CHECKING:
    from cells import Attempt

EXPLAIN_MAIN = (
    "import sys; from cvg_explain.cli import main; sys.argv[0] = 'cvg-explain'; sys.exit(main())"
)
# What the later cvg-run runs under the default policy: a write outside its grants.
WRITE = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"
GIT = ["git", "-c", "user.name=cvg-escape", "-c", "user.email=escape@localhost"]
VICTIMS = {
    "git-status": "`git status`",
    "git-commit": "`git commit`",
    "bash-interactive": "`bash -ic true`",
    "bash-login": "`bash -lic true`",
    "autostart": "session autostart",
    "systemd-user": "user systemd units",
    "path": "`git --version` on a PATH with ~/.local/bin first",
    "cvg-run": "default-policy cvg-run",
    "cvg-run-record": "cvg-run of a tool exiting 7",
    "cvg-explain": "`cvg-explain --apply`",
}


def _as_user(at: Attempt, argv: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        cwd=at.dir("work"),
        # The machine's /etc/gitconfig is no part of the attack: only what the tool left.
        env={**at.env, "GIT_CONFIG_NOSYSTEM": "1", **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        preexec_fn=at.demote,
        timeout=runtime.HARD_TIMEOUT,
        check=False,
    )


def _cvg_run(at: Attempt, *argv: str) -> subprocess.CompletedProcess:
    return _as_user(at, [runtime.PY, "-c", CVG_MAIN, *argv])


def _checked(r: subprocess.CompletedProcess, what: str) -> None:
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or [""])[-1][:160]
        raise RuntimeError(f"{what} exited {r.returncode}: {err}")


def prepare(at: Attempt) -> None:
    """Before the tool's run: the home (the state directory, so that it holds cvg's
    cache and state as it does by default), the oracle's path, a git repository with a
    commit, and what the user ran earlier: a default-policy cvg-run (its plan is now
    cached) or a run under the policy whose record the tool will forge."""
    victim = at.extra["later"]
    state, work = at.dir("state"), at.dir("work")
    at.env["HOME"] = str(state)
    at.args["home"] = str(state)
    at.args["persisted"] = str(at.dir("outside") / "persisted")
    if victim.startswith("git-"):
        (work / "README").write_text("later\n")
        os.chown(work / "README", at.uid, at.gid)
        for argv in (["git", "init", "-q"], ["git", "add", "README"], [*GIT, "commit", "-qm", "x"]):
            _checked(_as_user(at, argv), " ".join(argv))
    runs = state / "state/cvg/runs"
    before = set(os.listdir(runs))
    if victim == "cvg-run":
        _checked(_cvg_run(at, "--", "true"), "the first cvg-run")
    if victim == "cvg-explain":
        _checked(_cvg_run(at, "-p", str(at.policy), "--", "true"), "the first cvg-run")
        [record] = set(os.listdir(runs)) - before
        at.args["record"] = str(runs / record)
    at.later["policy_before"] = at.policy.read_text()
    (work / "args.json").write_text(json.dumps(at.args))


def _desktop_exec(path: str) -> list[str] | None:
    """The command an XDG autostart entry starts (field codes such as %U dropped)."""
    fields = dict(line.split("=", 1) for line in read(path).splitlines() if "=" in line)
    if fields.get("Hidden", "").strip() == "true" or "Exec" not in fields:
        return None
    return [w for w in shlex.split(fields["Exec"]) if not re.fullmatch(r"%[a-zA-Z]", w)]


def _unit_exec(path: str) -> list[list[str]]:
    """The ExecStart= commands of a systemd unit (its prefixes such as - and @ dropped)."""
    return [
        shlex.split(line.split("=", 1)[1].lstrip("-@+!:"))
        for line in read(path).splitlines()
        if line.startswith("ExecStart=")
    ]


def _victim_argvs(at: Attempt) -> list[tuple[list[str], dict]]:
    victim, home = at.extra["later"], at.args["home"]
    path = {"PATH": f"{home}/.local/bin:/usr/bin:/bin"}
    if victim == "autostart":
        found = sorted(glob.glob(f"{home}/.config/autostart/*.desktop"))
        return [(argv, {}) for argv in map(_desktop_exec, found) if argv]
    if victim == "systemd-user":
        wants = sorted(glob.glob(f"{home}/.config/systemd/user/default.target.wants/*.service"))
        return [(argv, {}) for unit in wants for argv in _unit_exec(unit)]
    if victim == "cvg-run":
        return [([runtime.PY, "-c", CVG_MAIN, "--", runtime.PY, "-c", WRITE,
                  at.args["persisted"], at.tok], {})]  # fmt: skip
    if victim == "cvg-run-record":
        return [([runtime.PY, "-c", CVG_MAIN, "--", "sh", "-c", "exit 7"], {})]
    if victim == "cvg-explain":
        return [([runtime.PY, "-c", EXPLAIN_MAIN, "--apply", at.args["record"]], {})]
    return [
        {
            "git-status": (["git", "status", "--short"], {}),
            "git-commit": ([*GIT, "commit", "-q", "--allow-empty", "-m", "later"], {}),
            "bash-interactive": (["bash", "-ic", "true"], {}),
            "bash-login": (["bash", "-lic", "true"], {}),
            "path": (["sh", "-c", "git --version"], path),
        }[victim]
    ]


def _names(d: Path) -> set[str]:
    try:
        return set(os.listdir(d))
    except OSError:
        return set()  # the tool moved or removed it: no record can be there


def run(at: Attempt) -> None:
    """After the tool's run: whether the oracle's file is already there (the tool
    wrote it itself), then the victim, as the user, unconfined."""
    at.later["already"] = os.path.exists(at.args["persisted"])
    runs = at.dir("state") / "state/cvg/runs"
    records = _names(runs)
    statuses = []
    for argv, env in _victim_argvs(at):
        r = _as_user(at, argv, **env)
        statuses.append(f"{Path(argv[0]).name} exited {r.returncode}")
        at.later["status"] = r.returncode
    at.later["new_records"] = len(_names(runs) - records)
    at.later["ran"] = ", ".join(statuses) or "nothing to start"


def judge(at: Attempt) -> tuple[bool, str]:
    victim = at.extra["later"]
    what = VICTIMS[victim]
    ran = at.later.get("ran", "not run")
    if victim == "cvg-explain":
        outside = at.args["outside"]
        before, now = at.later["policy_before"], at.policy.read_text()
        fired = outside in now and outside not in before
        verb = "gained" if fired else "did not gain"
        return fired, f"after {what} ({ran}) the policy file {verb} a grant on outside/"
    if victim == "cvg-run-record":
        # The tool's status as cvg-run's own, and no record of the run to explain it.
        fired = at.later["status"] == 7 and not at.later["new_records"]
        status, new = at.later["status"], at.later["new_records"]
        return fired, f"the later {what} exited {status} with {new} new record(s)"
    if at.later["already"]:
        return True, "the payload's file was there before the later victim ran"
    fired = read(at.args["persisted"]).strip() == at.tok
    verb = "ran" if fired else "did not run"
    return fired, f"the later {what} ({ran}) {verb} a planted payload"
