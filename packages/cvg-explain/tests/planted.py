"""Run the real cvg-run and cvg-explain, as root or as the unprivileged user.

Each is a fresh process: as root, the console scripts of this environment; as
``cvgtest``, an interpreter of this version that user can run, with this
environment's site-packages added (or a world-readable copy of what it needs, when
the clone sits where that user cannot look), because the interpreter behind the
environment may live under /root (mode 0700). Tools run under ``/usr/bin/python3``, which every
user can read.

Oracles are outside the code under test: a tool's exit status and output, a
listener's received bytes, a file's content, a process's death seen by waitpid.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import cvg_testing
from cvg_run.planning import default_policy_bytes

PY = "/usr/bin/python3"
BIN = Path(sys.executable).parent
SITE = next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
_LAUNCH = "import site, sys; site.addsitedir({site!r}); from {module} import run; run()"
_MODULES = {"cvg-run": "cvg_run.cli", "cvg-explain": "cvg_explain.cli"}


@dataclass(frozen=True)
class Who:
    """Who runs everything: root (user None) or the unprivileged user."""

    name: str
    user: pwd.struct_passwd | None

    def popen_args(self) -> dict[str, Any]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}


@dataclass
class Box(cvg_testing.Tree):
    """A world-writable directory per test: home, state, cache, tmp, cwd, data."""

    @classmethod
    def make(cls) -> Box:
        return cls(cvg_testing.tree_root("cvg-explain-test-", "data"))

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    data = cvg_testing.Under("data")

    @property
    def env(self) -> dict[str, str]:
        return {**self.xdg_env(), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def write(self, path: Path, text: str, mode: int = 0o666) -> Path:
        path.write_text(text)
        path.chmod(mode)
        return path


ROOT = Who("root", None)


def default_policy() -> dict[str, Any]:
    data = yaml.safe_load(default_policy_bytes())
    assert isinstance(data, dict)
    data["resources"]["wall_clock_seconds"] = 60
    return data


def write_policy(box: Box, data: dict[str, Any], name: str = "p.yaml") -> Path:
    """The policy as YAML with a comment on top, which every fix must keep."""
    text = "# planted: one grant is missing\n" + yaml.safe_dump(data, sort_keys=False)
    return box.write(box.cwd / name, text)


def run(
    who: Who,
    argv: Sequence[str],
    box: Box,
    *,
    timeout: float = 90,
    stdin: bytes = b"",
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        cwd=box.cwd,
        env=box.env,
        input=stdin.decode(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **who.popen_args(),
    )


def tool_argv(tool: Path, *args: str) -> list[str]:
    return [PY, str(tool), *args]


def cli_argv(who: Who, prog: str, *args: str) -> list[str]:
    if who.user is None:
        return [str(BIN / prog), *args]
    site = cvg_testing.import_path_for(who.user) or SITE
    python = cvg_testing.unpriv_python(who.user)
    return [python, "-c", _LAUNCH.format(site=site, module=_MODULES[prog]), *args]


def cvg_run(
    who: Who, box: Box, *args: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return run(who, cli_argv(who, "cvg-run", *args), box, timeout=timeout)


def cvg_explain(who: Who, box: Box, *args: str) -> subprocess.CompletedProcess[str]:
    return run(who, cli_argv(who, "cvg-explain", *args), box)


def load_record(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def patched(policy_text: str, diff: str, where: Path, name: str = "p.yaml") -> str:
    """``policy_text`` with ``diff`` applied by patch(1) in a directory of its own."""
    where.mkdir(exist_ok=True)
    target = where / name
    target.write_text(policy_text)
    subprocess.run(
        ["patch", "-p0", "--quiet", "--no-backup-if-mismatch"],
        input=diff.encode(),
        cwd=where,
        check=True,
    )
    return target.read_text()


def owned_by(who: Who, *paths: Path) -> None:
    if who.user is not None:
        for p in paths:
            os.chown(p, who.user.pw_uid, who.user.pw_gid)
