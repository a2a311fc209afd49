"""The run record (`cvg.run`), built as plain JSON.

cvg-run's cold path avoids importing pydantic, so the record is assembled
here as a dict in the shape of cvg_schema.RunRecord (a test validates it
against that model) and written atomically.

A record is what cvg-explain --apply turns into grants, so the tool must not be able
to substitute it: its directory is opened before the tool starts and the file is
made there with O_TMPFILE (no name the tool could replace during the run), linked
and renamed into place on that descriptor once the tool has ended, and the inode at
the name is checked to be the one written. It is sealed with the user's key
(cvg_kernel.seal): a last member ``seal``, the HMAC of the record without it.
"""

from __future__ import annotations

import errno
import os
import stat
import time

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Callable, Mapping, Sequence

from cvg_kernel import seal

from .supervisor import Outcome

# typing only for the type checker: importing it costs every cold start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = "1.0"

EXIT_REFUSED = 123
"""cvg-run's status when the record could not be put in place as its own (the path is
not a regular file, or the file was replaced or moved during the run): never the
tool's status, which a missing record would otherwise hide."""


class Refused(Exception):
    """The record was not put in place as cvg-run's own: one line, EXIT_REFUSED."""


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + os.urandom(4).hex()


# Paths are plain strings here: pathlib is a cost on every cold start.
def state_dir() -> str:
    return os.path.join(seal.own_dirs()[2], "runs")


def repair_modes(record_path: str) -> list[str]:
    """Give cvg's state directory and its run records' directory back mode 0700 when
    one is this user's and its owner lacks a right or others may write it. A tool
    cannot write them (every policy denies cvg's state) but may chmod them (Landlock
    does not cover a file's mode), and a records directory left 0500 would hide every
    later run's record. Only on the default record path; one line per repair."""
    runs = state_dir()
    if os.path.dirname(os.path.abspath(record_path)) != runs:
        return []
    said = []
    for directory in (os.path.dirname(runs), runs):
        try:
            # O_PATH needs no permission on the directory itself, and a descriptor
            # cannot be swapped for a link between the look and the change.
            fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # missing (made later, 0700) or not a directory (refused later)
        try:
            st = os.fstat(fd)
            mode = st.st_mode & 0o7777
            # Only what blocks cvg (owner lacks a right) or lets others write: a 0755
            # directory made by an older cvg is no sign of a tool.
            if st.st_uid != os.geteuid() or (mode & 0o700 == 0o700 and not mode & 0o022):
                continue
            try:
                os.chmod(f"/proc/self/fd/{fd}", 0o700)
            except OSError as e:
                said.append(f"{directory}: mode {mode:o}, cannot reset it: {e.strerror}")
                continue
            said.append(f"{directory}: mode {mode:o} reset to 700 (a tool may have changed it)")
        finally:
            os.close(fd)
    return said


def _when(t: float) -> str:
    # RFC 3339 in UTC without importing datetime (cold-start cost).
    whole = int(t)
    micros = round((t - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros:06d}+00:00"


def build(
    *,
    run_id: str,
    plan: Mapping[str, Any],
    plan_digest: str,
    policy_digest: str,
    policy_path: str | None,
    argv: Sequence[str],
    cwd: str,
    outcome: Outcome,
    allow_degraded: bool,
    scratch: str | None,
    scratch_kept: bool,
    traced: bool = False,
    denials: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    exit_info: dict[str, Any] = {"status": outcome.status, "meaning": outcome.meaning}
    # cvg.run allows exit.signal only with meaning "signaled": a run ended at a
    # limit (status 137) names the limit in its detail instead.
    if outcome.signal is not None and outcome.meaning == "signaled":
        exit_info["signal"] = outcome.signal
    if outcome.detail:
        exit_info["detail"] = outcome.detail[:1000]
    record: dict[str, Any] = {
        "kind": "cvg.run",
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "policy_digest": policy_digest,
        "policy_path": policy_path,
        "plan": dict(plan),
        "plan_digest": plan_digest,
        "argv": list(argv),
        "cwd": cwd,
        "exit": exit_info,
        "timings": {
            "wall_seconds": round(outcome.wall_seconds, 6),
            "cpu_seconds": round(outcome.cpu_seconds, 6),
        },
        "peak_rss_kb": outcome.peak_rss_kb,
        "allow_degraded": allow_degraded,
        "degraded": list(plan.get("degraded", [])),
        "traced": traced,
        "denials": [dict(d) for d in denials],
        "started": _when(outcome.started),
        "ended": _when(max(outcome.ended, outcome.started)),
    }
    if scratch is not None:
        record["scratch"] = {"path": scratch, "kept": scratch_kept}
    if outcome.limits_by is not None:
        record["limits_by"] = outcome.limits_by
    return record


def write_atomic(
    path: str | os.PathLike[str], data: bytes, mode: int = 0o600, *, sync: bool = True
) -> None:
    """Write via a temporary file in the same directory, fsync, rename: a reader
    sees the old file or the whole new one, never half of it. ``sync=False`` skips
    the fsync, for a cache that is rebuilt if a crash loses it."""
    target = os.fspath(path)
    parent, name = os.path.split(os.path.abspath(target))
    os.makedirs(parent, mode=0o700, exist_ok=True)
    tmp = os.path.join(parent, f".{name}.{os.urandom(6).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class Reserved:
    """A record's file and directory, opened before the tool starts: once the tool runs
    it may lower this process's RLIMIT_NOFILE to 0/0, and then no descriptor can be
    made to write the record (a link and a rename need none). The key is read now for
    the same reason. :meth:`write` or :meth:`discard` it."""

    def __init__(self, path: str | os.PathLike[str], mode: int = 0o600) -> None:
        self.target = os.path.abspath(os.fspath(path))
        self.parent, self.name = os.path.split(self.target)
        os.makedirs(self.parent, mode=0o700, exist_ok=True)
        self.fd = -1
        self.tmp: str | None = None
        self.dir_fd = os.open(self.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.dir_id = _identity(os.fstat(self.dir_fd))
            self._refuse_other_kinds()
            try:
                self.fd = os.open(".", os.O_WRONLY | os.O_TMPFILE | os.O_CLOEXEC, mode,
                                  dir_fd=self.dir_fd)  # fmt: skip
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    raise
                # No O_TMPFILE here: a hidden random name, checked before the rename.
                self.tmp = f".{self.name}.{os.urandom(6).hex()}"
                self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                  | os.O_CLOEXEC, mode, dir_fd=self.dir_fd)  # fmt: skip
            self.file_id = _identity(os.fstat(self.fd))
        except BaseException:
            self.discard()
            raise
        self.key: bytes | None = None
        self.unsealed: str | None = None  # why the record cannot be sealed
        try:
            self.key = seal.load_key(create=True)
        except (OSError, seal.SealError) as e:
            self.unsealed = str(e)

    def _at(self, name: str) -> tuple[int, int] | None:
        try:
            return _identity(os.stat(name, dir_fd=self.dir_fd, follow_symlinks=False))
        except FileNotFoundError:
            return None

    def _refuse_other_kinds(self) -> None:
        try:
            st = os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{self.target}: {_kind(st.st_mode)}, not a regular file")

    def write(self, data: bytes) -> None:
        """Seal, write, fsync, link or rename into place on the directory's descriptor,
        and check that the file now at the name is this one. Refused when it is not,
        when the name is not a regular file, or when the directory was moved."""
        try:
            if self.key is not None:
                data = seal.seal_record(self.key, data)
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
            os.fsync(self.fd)
            if self.tmp is None:
                self.tmp = f".{self.name}.{os.urandom(6).hex()}"
                # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N: AT_EMPTY_PATH would need
                # CAP_DAC_READ_SEARCH.
                os.link(f"/proc/self/fd/{self.fd}", self.tmp, dst_dir_fd=self.dir_fd)
            elif self._at(self.tmp) != self.file_id:
                self.tmp = None  # another file now: not ours to remove
                raise Refused(f"{self.target}: its temporary file was replaced during the run")
            self._refuse_other_kinds()
            os.rename(self.tmp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
            self.tmp = None
            if self._at(self.name) != self.file_id:
                raise Refused(f"{self.target}: replaced as it was put in place")
            try:
                moved = _identity(os.stat(self.parent)) != self.dir_id
            except OSError:
                moved = True
            if moved:
                raise Refused(f"{self.parent}: the record's directory was moved during the run")
        finally:
            self.discard()

    def discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.tmp is not None:
            try:
                os.unlink(self.tmp, dir_fd=self.dir_fd)
            except OSError:
                pass
            self.tmp = None
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1


def write_unreserved(path: str, data: bytes) -> str | None:
    """Write a record that could not be reserved before the run (sealed if the key can
    be read now): Refused when ``path`` is there and not a regular file. Why the record
    is not sealed, or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{os.path.abspath(path)}: {_kind(st.st_mode)}, not a regular file")
    unsealed = None
    try:
        data = seal.seal_record(seal.load_key(create=True), data)
    except (OSError, seal.SealError) as e:
        unsealed = str(e)
    write_atomic(path, data)
    return unsealed


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a special file"


def dumps(record: Mapping[str, Any]) -> bytes:
    """One line of compact JSON, ``json.dumps(record, separators=(",", ":"))`` to the
    byte: by the C encoder json.dumps itself uses, made here. Importing json brings in
    re, a few milliseconds of every cold start; encoding the record in Python, with
    its plan, cost as much again."""
    if _make_encoder is None:  # not CPython: json does it all
        import json

        return (json.dumps(record, separators=(",", ":")) + "\n").encode()
    encode = _make_encoder({}, _not_serializable, _quote, None, ":", ",", False, False, True)
    return ("".join(encode(record, 0)) + "\n").encode()


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_make_encoder: Callable[..., Callable[[object, int], Sequence[str]]] | None
try:
    from _json import encode_basestring_ascii as _quote
    from _json import make_encoder as _make_encoder
except ImportError:
    _make_encoder = None


# How many records the state directory keeps (see the README's "Run records").
KEEP_ENV = "CVG_RUNS_KEEP"
MAX_MB_ENV = "CVG_RUNS_MAX_MB"
DEFAULT_KEEP = 100
DEFAULT_MAX_MB = 200
# The record's head, where its policy_digest is (kind, schema_version, run_id, then it).
_HEAD = 1024
_DIGEST_KEY = b'"policy_digest":'


class Bounds:
    """How many of the state directory's records to keep: the newest ``keep`` per
    policy and at most ``max_bytes`` in all (0: no bound)."""

    def __init__(self, keep: int = DEFAULT_KEEP, max_bytes: int = DEFAULT_MAX_MB << 20) -> None:
        self.keep = keep
        self.max_bytes = max_bytes


def bounds(environ: Mapping[str, str] | None = None) -> Bounds:
    """The bounds from CVG_RUNS_KEEP and CVG_RUNS_MAX_MB; ValueError names a bad one."""
    env = os.environ if environ is None else environ
    values = []
    for name, default in ((KEEP_ENV, DEFAULT_KEEP), (MAX_MB_ENV, DEFAULT_MAX_MB)):
        text = env.get(name, "").strip()
        if not text:
            values.append(default)
        elif text.isdigit():
            values.append(int(text))
        else:
            raise ValueError(f"{name}={text!r}: expected a whole number (0: no bound)")
    return Bounds(values[0], values[1] << 20)


def _policy_of(path: str) -> str:
    """The policy_digest in a record's head ('' when it has none there)."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return ""
    start = head.find(_DIGEST_KEY)
    if start < 0:
        return ""
    # Compact records have the value right after the colon; indented ones (older
    # records) a space first.
    start = head.find(b'"', start + len(_DIGEST_KEY)) + 1
    if start <= 0:
        return ""
    end = head.find(b'"', start)
    return head[start:end].decode("ascii", "replace") if end > 0 else ""


_INDEX = ".policies"
"""Beside the records: each record's file name and policy digest, one per line, a line
appended per new record and the whole rewritten once it mostly names deleted ones. Only
a cache (hidden, so never taken for a record): a name it lacks has its head read, and a
lost or damaged index is rebuilt. Reading a few hundred heads, or rewriting the index,
on every run cost milliseconds of each cold run."""


def _policies(directory: str, paths: list[str]) -> dict[str, str]:
    """The policy digest of each record in ``paths``, from the index where it has them."""
    index_path = os.path.join(directory, _INDEX)
    known: dict[str, str] = {}
    try:
        with open(index_path, "rb") as f:
            for line in f.read().decode("utf-8", "replace").splitlines():
                name, sep, digest = line.partition("\t")
                if sep and "/" not in name:
                    known[name] = digest
    except OSError:
        pass
    found: dict[str, str] = {}
    fresh: list[str] = []
    for path in paths:
        name = os.path.basename(path)
        cached = known.get(name)
        if cached is None:
            cached = _policy_of(path)
            fresh.append(name)
        found[path] = cached
    try:
        if len(known) > 2 * len(paths) + 64:
            # Mostly records deleted since: written afresh, whole or not at all.
            text = "".join(f"{os.path.basename(p)}\t{d}\n" for p, d in found.items())
            write_atomic(index_path, text.encode(), sync=False)
        elif fresh:
            # Appended (one write per run, O_APPEND): names it still holds of deleted
            # records are never looked up again.
            lines = "".join(f"{name}\t{found[os.path.join(directory, name)]}\n" for name in fresh)
            fd = os.open(index_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, lines.encode())
            finally:
                os.close(fd)
    except OSError:
        pass  # a read-only directory: the index is only a cache
    return found


def prune(directory: str, written: str, limits: Bounds) -> list[str]:
    """Delete the state directory's oldest records beyond ``limits``, never
    ``written`` (the record just made) nor a record still being written (its hidden
    temporary name): the paths deleted. Each deletion is one unlink, so a reader
    sees a whole record or none; another cvg-run pruning at the same time only
    finds some already gone."""
    kept = os.path.abspath(written)
    entries: list[tuple[int, str, int]] = []  # (mtime_ns, path, size), the newest last
    try:
        with os.scandir(directory) as it:
            for e in it:
                if e.name.startswith(".") or not e.name.endswith(".json"):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries.append((st.st_mtime_ns, e.path, st.st_size))
    except OSError:
        return []
    entries.sort()
    doomed: set[str] = set()
    # Per policy: only read the heads when there are more records than one policy
    # may keep (a few hundred small reads, after the tool has ended).
    if limits.keep and len(entries) > limits.keep:
        policies = _policies(directory, [path for _m, path, _s in entries])
        per: dict[str, int] = {}
        for _mtime, path, _size in reversed(entries):
            digest = policies[path]
            per[digest] = per.get(digest, 0) + 1
            if per[digest] > limits.keep:
                doomed.add(path)
    if limits.max_bytes:
        total = sum(size for _m, path, size in entries if path not in doomed)
        for _mtime, path, size in entries:
            if total <= limits.max_bytes:
                break
            if path not in doomed and os.path.abspath(path) != kept:
                doomed.add(path)
                total -= size
    removed = []
    for _mtime, path, _size in entries:
        if path not in doomed or os.path.abspath(path) == kept:
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError:
            continue  # not ours to remove (another user's, a read-only directory)
        removed.append(path)
    return removed
