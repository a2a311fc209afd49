"""What ``git init`` and ``git clone`` make of a new repository's protected paths: a
``.git/config`` and a ``.git/hooks`` that run nothing.

A tool that makes a repository in its working directory creates ``.git/config`` and
``.git/hooks``; moving those aside would break every such run for no gain when git
runs nothing from them. Each is judged from what it holds, read through descriptors
without following a link, and anything this module does not recognise line by line is
not inert:

- ``.git/hooks``: a directory of regular files named ``*.sample`` only (git runs a hook
  by its exact name, never a sample);
- ``.git/config``: a regular file whose sections are ``core``, ``remote "NAME"``,
  ``branch "NAME"`` and ``extensions``, each key one git writes there itself
  (``core.fsmonitor``, ``core.hooksPath``, ``core.pager``, ``remote.*.uploadpack``,
  an ``include``, an alias are not among them), and values without quotes,
  continuations or an ``ext::`` transport.
"""

from __future__ import annotations

import os
import re
import stat

_SAFE_KEYS = {
    "core": {"repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
             "precomposeunicode", "symlinks"},
    "remote": {"url", "fetch"},
    "branch": {"remote", "merge"},
    "extensions": {"objectformat"},
}  # fmt: skip
_SECTION = re.compile(r'\[([A-Za-z]+)(?: "([^"\\]+)")?\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*=\s*([^\"\\;#]*)")
_MAX_CONFIG = 64 << 10
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def inert(dir_fd: int, entry: str, protects: str) -> bool:
    """Whether ``entry`` in ``dir_fd``, found where the protected path ``protects`` was
    absent, is git's own ``.git/config`` or ``.git/hooks`` that runs nothing."""
    try:
        if protects.endswith("/.git/hooks") and entry == "hooks":
            return _samples_only(dir_fd, entry)
        if protects.endswith("/.git/config") and entry == "config":
            return _plain_config(dir_fd, entry)
    except OSError:
        pass
    return False


def _samples_only(dir_fd: int, entry: str) -> bool:
    fd = os.open(entry, _READ | os.O_DIRECTORY, dir_fd=dir_fd)
    try:
        for name in os.listdir(fd):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not (stat.S_ISREG(st.st_mode) and name.endswith(".sample")):
                return False
        return True
    finally:
        os.close(fd)


def _plain_config(dir_fd: int, entry: str) -> bool:
    fd = os.open(entry, _READ, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_CONFIG:
            return False
        data = os.read(fd, _MAX_CONFIG + 1)
    finally:
        os.close(fd)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return False
    keys: set[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        section = _SECTION.fullmatch(line)
        if section is not None:
            name, sub = section.group(1).lower(), section.group(2)
            keys = _SAFE_KEYS.get(name)
            if keys is None or (sub is None) != (name in ("core", "extensions")):
                return False
            continue
        pair = _KEY.fullmatch(line)
        if keys is None or pair is None or pair.group(1).lower() not in keys:
            return False
        if pair.group(2).strip().lower().startswith(("ext::", "-")):
            return False
    return True
