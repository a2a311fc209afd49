"""The learning plan's compile, kept between runs: one small file read instead of
pydantic, the policy compiler and their imports on every observation.

A compile is a function of what it is given (the policy: the secrets that exist, the
write roots; the variables: working directory, home), of the code that compiles (the
files of cvg-policy, cvg-schema, cvg-kernel and cvg-observe, by size and mtime), of the
kernel (its Landlock ABI, as capped, and architecture), and of what it saw of the
filesystem on the way (each directory it listed to keep a secret out of a grant, each
path it resolved). The first four make the key; the last is recorded with the plan, and
every lookup is made again before a cached plan is used: a new entry in /etc, a
retargeted link or a secret gone is a miss, and the plan is compiled anew.

Failing closed: a cache file that is not a regular file of this user's, writable by
nobody else, whose SHA-256 is not the one stored at its head, whose key differs, or
that does not parse, is a miss. And a cache that the learning sandbox could write (one
beneath a write root: the working directory, /tmp) is neither read nor written, so a
tool being observed cannot plant the plan of its next run.
"""

from __future__ import annotations

import importlib.util
import os
import stat
from collections.abc import Callable, Iterable
from typing import Any, Final

import orjson

from cvg_kernel import landlock, libc
from cvg_policy.expand import FsView, Kind, OsView, inside

# The built-in sha256 loads without OpenSSL, which hashlib loads at import.
try:
    from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # Python 3.11
    try:
        from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment, unused-ignore]

__all__ = ["FORMAT", "cache_dir", "compiled"]

FORMAT: Final = 1
# Whose code decides the plan: a change to any of their files is a miss.
_COMPILERS: Final = ("cvg_policy", "cvg_schema", "cvg_kernel", "cvg_observe")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cvg", "observe")


def compiled(
    inputs: dict[str, Any],
    compile: Callable[[FsView], dict[str, Any]],
    *,
    writable: Iterable[str],
) -> dict[str, Any]:
    """``compile(view)`` for ``inputs`` (everything it is given, as JSON), from the cache
    when a valid entry is there; else compiled through a recording view and stored.
    Nothing is cached when the cache lies beneath a path in ``writable``."""
    directory = os.path.realpath(cache_dir())
    if any(inside(directory, os.path.realpath(w)) for w in writable):
        return compile(OsView())
    try:
        key = _key(inputs)
    except (OSError, landlock.LandlockError):
        return compile(OsView())  # the compile says why, as it would uncached
    path = os.path.join(directory, f"{key[:32]}.json")
    hit = _read(path, key)
    if hit is not None:
        return hit
    try:
        # Made before compiling: every compile denies cvg's own directories, listing the
        # one holding them, and a listing that changes is a miss.
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        pass  # not cached, below
    view = _Recording(OsView())
    result = compile(view)
    payload = orjson.dumps({"key": key, "lookups": view.seen, "result": result})
    from cvg_schema.io import write_atomic  # loaded already: the compile needed it

    try:
        write_atomic(path, sha256(payload).hexdigest().encode() + b"\n" + payload, 0o600)
    except OSError:
        pass  # a cache that cannot be written only costs speed
    return result


def _key(inputs: dict[str, Any]) -> str:
    abi, note = landlock.effective_abi()
    kernel = {"abi": abi, "note": note, "arch": libc.machine(), "release": os.uname().release}
    material = {"format": FORMAT, "inputs": inputs, "kernel": kernel, "code": _code()}
    return str(sha256(orjson.dumps(material, option=orjson.OPT_SORT_KEYS)).hexdigest())


def _code() -> list[str]:
    """Every source file of the compilers, by path, size and mtime."""
    parts = []
    for name in _COMPILERS:
        spec = importlib.util.find_spec(name)
        for d in (spec.submodule_search_locations or []) if spec else []:
            with os.scandir(d) as it:
                for e in it:
                    if e.name.endswith(".py"):
                        st = e.stat()
                        parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
    return sorted(parts)


class _Recording:
    """An FsView that keeps every question and answer: ``[what, path, answer, errno]``."""

    def __init__(self, view: FsView) -> None:
        self.view = view
        self.seen: list[list[Any]] = []

    def kind(self, path: str) -> Kind:
        answer: Kind = self._ask("kind", path)
        return answer

    def listdir(self, path: str) -> list[str]:
        answer: list[str] = self._ask("listdir", path)
        return answer

    def realpath(self, path: str) -> str:
        answer: str = self._ask("realpath", path)
        return answer

    def inode(self, path: str) -> tuple[int, int, int] | None:
        found = self._ask("inode", path)
        return None if found is None else (found[0], found[1], found[2])

    def _ask(self, what: str, path: str) -> Any:
        try:
            answer = getattr(self.view, what)(path)
        except OSError as e:
            self.seen.append([what, path, None, e.errno or 0])
            raise
        self.seen.append([what, path, _comparable(what, answer), 0])
        return answer


def _comparable(what: str, answer: Any) -> Any:
    # A listing's order is the directory's, which the compile does not depend on.
    if what == "listdir":
        return sorted(answer)
    if what == "inode":  # a tuple, stored as JSON's list
        return None if answer is None else list(answer)
    # /etc/mtab -> /proc/self/mounts resolves through this process's own pid, another
    # in every run: kept as /proc/self (only the secrets are compared with it).
    own = f"/proc/{os.getpid()}"
    if what == "realpath" and (answer == own or answer.startswith(own + "/")):
        return "/proc/self" + answer[len(own) :]
    return answer


def _unchanged(lookups: object) -> bool:
    """True when every lookup the compile made gets the same answer now."""
    if not isinstance(lookups, list):
        return False
    view = OsView()
    for item in lookups:
        if not (isinstance(item, list) and len(item) == 4):
            return False
        what, path, answer, errno = item
        if what not in ("kind", "listdir", "realpath", "inode") or not isinstance(path, str):
            return False
        try:
            now = _comparable(what, getattr(view, what)(path))
        except OSError as e:
            if (e.errno or 0) != errno or errno == 0:
                return False
            continue
        if errno != 0 or now != answer:
            return False
    return True


def _read(path: str, key: str) -> dict[str, Any] | None:
    """The cached result for ``key``, or None for a miss (see the module docstring)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            blob = f.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    digest, _, payload = blob.partition(b"\n")
    if digest != sha256(payload).hexdigest().encode():
        return None
    try:
        entry = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    result = entry.get("result")
    if not isinstance(result, dict) or not _unchanged(entry.get("lookups")):
        return None
    return result
