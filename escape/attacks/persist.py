"""Persistence and cvg's own state: what a tool leaves behind for something the user
runs later, unconfined (`git status`, a shell, the session's autostart, a command on
PATH, the next cvg-run, `cvg-explain --apply`).

Each attack has two phases. The tool (this module) only plants; the runner then runs
the later victim as the same user with no sandbox (`later` in the registry, see
escape/later.py) and judges by an outside oracle: the payload's file in the attack's
`outside/` directory, or the policy file gaining a grant. The policy (`persist`) gives
the tool write on the working directory and on the home, which holds cvg's cache and
state directories as it does by default.
"""

import glob
import hmac
import json
import marshal
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _lib import attack, main


def _payload(a) -> str:
    """A shell command that leaves the oracle's file: it runs only if the victim ran it."""
    return f"echo {a['tok']} > {shlex.quote(a['persisted'])}"


def _home(a, *parts) -> str:
    return os.path.join(a["home"], *parts)


def _plant(path: str, text: str, mode: int = 0o644) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


@attack("persist", "later", policy="persist", extra={"later": "git-status"})
def git_fsmonitor_runs_on_next_git_status(a):
    """Append core.fsmonitor to the repository's .git/config: the user's next bare
    `git status` runs it. Needs .git/config kept out of the write grant on ${CWD}."""
    with open(os.path.join(a["work"], ".git", "config"), "a") as f:
        f.write(f'[core]\n\tfsmonitor = "{_payload(a)}; false"\n')


@attack("persist", "later", policy="persist", extra={"later": "git-commit"})
def git_hook_runs_on_next_commit(a):
    """Plant .git/hooks/pre-commit: the user's next `git commit` runs it. Needs
    .git/hooks kept out of the write grant on ${CWD}."""
    _plant(os.path.join(a["work"], ".git", "hooks", "pre-commit"),
           f"#!/bin/sh\n{_payload(a)}\n", 0o755)  # fmt: skip


@attack("persist", "later", policy="persist", extra={"later": "bash-interactive"})
def bashrc_runs_in_next_interactive_shell(a):
    """Append to ~/.bashrc: the user's next interactive bash runs it. Needs the shell
    startup files kept out of the write grant on ${HOME}."""
    with open(_home(a, ".bashrc"), "a") as f:
        f.write(f"\n{_payload(a)}\n")


@attack("persist", "later", policy="persist", extra={"later": "bash-login"})
def profile_runs_in_next_login_shell(a):
    """Write ~/.profile: the user's next login shell runs it. Needs the shell startup
    files kept out of the write grant on ${HOME}."""
    with open(_home(a, ".profile"), "a") as f:
        f.write(f"\n{_payload(a)}\n")


@attack("persist", "later", policy="persist", extra={"later": "autostart"})
def autostart_entry_runs_at_next_login(a):
    """Plant ~/.config/autostart/*.desktop: the desktop session starts it at the next
    login. Needs ~/.config/autostart kept out of the write grant on ${HOME}."""
    _plant(_home(a, ".config", "autostart", "update-notifier.desktop"),
           "[Desktop Entry]\nType=Application\nName=Update Notifier\n"
           f"Exec=sh -c {shlex.quote(_payload(a))}\n")  # fmt: skip


@attack("persist", "later", policy="persist", extra={"later": "systemd-user"})
def systemd_user_unit_runs_at_next_login(a):
    """Plant and enable ~/.config/systemd/user/*.service: the user's systemd starts it
    at the next login. Needs ~/.config/systemd/user kept out of the write grant on
    ${HOME}."""
    units = _home(a, ".config", "systemd", "user")
    _plant(os.path.join(units, "sync.service"),
           f"[Unit]\nDescription=sync\n[Service]\nExecStart=/bin/sh -c {shlex.quote(_payload(a))}\n"
           "[Install]\nWantedBy=default.target\n")  # fmt: skip
    os.makedirs(os.path.join(units, "default.target.wants"), exist_ok=True)
    os.symlink("../sync.service", os.path.join(units, "default.target.wants", "sync.service"))


@attack("persist", "later", policy="persist", extra={"later": "path"})
def local_bin_shadows_a_command(a):
    """Plant ~/.local/bin/git, first on the user's PATH: the user's next `git` runs it.
    Needs ~/.local/bin kept out of the write grant on ${HOME}."""
    _plant(_home(a, ".local", "bin", "git"),
           f"#!/bin/sh\n{_payload(a)}\nexec /usr/bin/git \"$@\"\n", 0o755)  # fmt: skip


def _key(a) -> bytes:
    with open(os.path.join(a["state"], "state", "cvg", "key", "seal"), "rb") as f:
        return f.read()


@attack("state", "later", policy="persist", extra={"later": "cvg-run"})
def plan_cache_entry_widens_next_run(a):
    """Rewrite cvg-run's cached plans (sealed again with the user's key) with a rule
    granting the attack's outside directory: the next default-policy run writes there.
    Stopped by the deny every compiled policy puts on cvg's own directories (the key
    cannot be read, the cache cannot be written, whatever ${HOME} grants)."""
    key = _key(a)
    entries = glob.glob(os.path.join(a["state"], "cache", "cvg", "plans", "*.plan"))
    for path in entries:
        with open(path, "rb") as f:
            entry = marshal.loads(f.read()[32:])
        entry["plan"]["landlock"]["fs_rules"].append(
            {"path": a["outside"], "access": ["read_file", "read_dir", "write_file", "make_reg"]}
        )
        payload = marshal.dumps(entry)
        with open(path, "wb") as f:
            f.write(hmac.digest(key, payload, "sha256") + payload)
    print(f"rewrote {len(entries)} plan(s)", flush=True)


@attack("state", "later", policy="persist", extra={"later": "cvg-explain"})
def run_record_forged_for_explain_apply(a):
    """Replace the last run record with one that reports a fabricated denial (a read of
    the attack's outside directory), sealed again with the user's key: the user's
    `cvg-explain --apply` writes the grant into the policy. Stopped by the deny every
    compiled policy puts on cvg's own directories."""
    key = _key(a)
    with open(a["record"], "rb") as f:
        record = json.loads(f.read())
    record.pop("seal", None)
    record["traced"] = True
    record["exit"] = {"status": 0, "meaning": "exited"}
    record["denials"] = [{"id": "d1", "syscall": "openat", "mechanism": "landlock_fs",
                          "path": os.path.join(a["outside"], "notes.txt"),
                          "right": "read_file", "errno": "EACCES"}]  # fmt: skip
    line = json.dumps(record, separators=(",", ":")).encode()
    tag = hmac.digest(key, line + b"\n", "sha256").hex()
    with open(a["record"], "wb") as f:
        f.write(line[:-1] + f',"seal":"hmac-sha256:{tag}"}}\n'.encode())


@attack("state", "later", policy="persist", limit="metadata", extra={"later": "cvg-run-record"})
def runs_directory_made_read_only_hides_next_record(a):
    """chmod cvg's run records directory read-only, so that the next cvg-run cannot
    write its record. File metadata is outside Landlock, so the chmod is not stopped;
    the next cvg-run gives the directory back mode 0700 before it runs, so the attack
    is not proven, confined or not (the chmod's effect is proven as the unprivileged
    user by test_a_records_directory_a_tool_made_read_only_is_reset in cvg-run's
    tests). Kept so that a cvg-run that stops resetting the mode shows here."""
    os.chmod(os.path.join(a["state"], "state", "cvg", "runs"), 0o500)


if __name__ == "__main__":
    main(globals())
