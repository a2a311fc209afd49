"""What a run as the unprivileged user needs when the clone (and its venv, and maybe
the interpreter) sits under a directory that user cannot enter, as root's 0700 home
or a CI runner's 0750 one: a world-readable copy of the imported modules, and an
interpreter of this Python version the user can execute."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import pytest


@contextmanager
def shared_dir(prefix: str, mode: int = 0o755) -> Iterator[Path]:
    """A fresh temporary directory of ``mode``, which every test identity can use
    (pytest's tmp_path is 0700 root), removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(mode)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def world_readable_dir(prefix: str = "cvg-test-") -> Path:
    """A fresh directory under the system temp dir, mode 0755, removed at exit."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=_system_tmp()))
    d.chmod(0o755)
    atexit.register(_remove, d, os.getpid())
    return d


def _remove(d: Path, owner: int) -> None:
    # Forked test children run atexit handlers too; only the creator may remove it.
    if os.getpid() == owner:
        shutil.rmtree(d, ignore_errors=True)


def _system_tmp() -> str:
    # TMPDIR may point into a private directory (pytest's basetemp, a home).
    for cand in ("/tmp", "/var/tmp"):
        if os.path.isdir(cand) and os.stat(cand).st_mode & 0o1777 == 0o1777:
            return cand
    return tempfile.gettempdir()


def _requires(dist: metadata.Distribution) -> list[str]:
    names = []
    for req in dist.requires or []:
        if "extra ==" in req.replace('"', "").replace("'", ""):
            continue
        names.append(re.split(r"[\s<>=!~;\[(@]", req.strip(), maxsplit=1)[0])
    return names


def _closure(roots: Iterable[str]) -> list[metadata.Distribution]:
    """The installed distributions `roots` need, transitively (those not installed
    here, as on another platform, are not needed here)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[name] = dist
        todo += _requires(dist)
    return list(seen.values())


def _sources(dist: metadata.Distribution) -> set[Path]:
    """What to copy for one distribution: its top-level modules and its metadata.
    An editable install lists only a .pth (and maybe force-included data, as
    cvg_schema/schemas): its package is found by import, and the two are merged."""
    tops: set[Path] = set()
    for f in dist.files or []:
        parts = Path(f).parts
        if parts and parts[0] != ".." and not parts[0].endswith(".pth"):
            tops.add(Path(str(dist.locate_file(parts[0]))))
    module = dist.metadata["Name"].replace("-", "_")
    if module.startswith("cvg_"):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            origin = Path(spec.origin)
            tops.add(origin.parent if origin.name == "__init__.py" else origin)
    return tops


def workspace_dists() -> list[str]:
    """The workspace's distributions installed here, less this one."""
    return sorted(
        d.metadata["Name"] for d in metadata.distributions()
        if d.metadata["Name"].startswith("cvg-") and d.metadata["Name"] != "cvg-testing"
    )  # fmt: skip


@functools.cache
def stage(*dists: str) -> str:
    """Copy `dists` (default: every installed cvg distribution) and everything they
    require, modules and metadata, into a world-readable directory, once per process.
    Returns the directory, for PYTHONPATH."""
    dest = world_readable_dir("cvg-stage-") / "py"
    dest.mkdir()
    for dist in _closure(dists or workspace_dists()):
        for src in sorted(_sources(dist)):
            target = dest / src.name
            if src.is_dir():
                shutil.copytree(src, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
            elif src.exists() and not target.exists():
                shutil.copy2(src, target)
    subprocess.run(["chmod", "-R", "a+rX", str(dest)], check=True)
    return str(dest)


def reachable(user: pwd.struct_passwd, paths: Iterable[str]) -> bool:
    """Whether `user` can read every one of `paths` (asked as that user)."""
    python = unpriv_python(user)
    r = subprocess.run(
        [python, "-I", "-c",
         "import os, sys; sys.exit(not all(os.access(p, os.R_OK | os.X_OK * os.path.isdir(p))"
         " for p in sys.argv[1:]))",
         *paths],
        user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd="/",
        capture_output=True, timeout=30, check=False,
    )  # fmt: skip
    return r.returncode == 0


def import_path_for(user: pwd.struct_passwd) -> str | None:
    """None when `user` can import the workspace from where it is; else a staged copy
    of it (see stage) to put first on the path. Decided once per process: after a
    conftest puts the copy first, the copy itself would look reachable."""
    return _import_path_for(user.pw_uid)


@functools.cache
def _import_path_for(uid: int) -> str | None:
    user = pwd.getpwuid(uid)
    roots = [str(s) for d in _closure(workspace_dists()) for s in _sources(d)]
    return None if reachable(user, roots) else stage()


def _runs_as(python: str, user: pwd.struct_passwd) -> bool:
    want = "{}.{}".format(*sys.version_info[:2])
    try:
        r = subprocess.run(
            [python, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd="/",
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except OSError:
        return False
    return r.returncode == 0 and r.stdout.strip() == want


@functools.cache
def _unpriv_python(uid: int) -> str | None:
    user = pwd.getpwuid(uid)
    name = "python{}.{}".format(*sys.version_info[:2])
    candidates = [
        os.path.realpath(sys.executable),
        os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
        os.path.join(sysconfig.get_config_var("BINDIR") or "", name),
        shutil.which(name, path="/usr/local/bin:/usr/bin:/bin"),
        shutil.which(name),
    ]
    for cand in dict.fromkeys(c for c in candidates if c):
        if os.path.isfile(cand) and _runs_as(cand, user):
            return cand
    return None


def unpriv_python(user: pwd.struct_passwd) -> str:
    """An interpreter of this Python version (so staged compiled modules load) that
    `user` can execute. Skips, and so fails under CI, when there is none."""
    found = _unpriv_python(user.pw_uid)
    if found is None:
        version = "{}.{}".format(*sys.version_info[:2])
        pytest.skip(f"no python{version} that {user.pw_name} can execute")
    return found
