"""cvg's own directories, and the per-user key that seals what cvg reads back from them.

cvg keeps state a confined tool must not write: the plan cache (a hit skips compiling
the policy) and the run records (``cvg-explain --apply`` turns their denials into
grants). Two things keep a tool from substituting them:

- every compiled policy denies :func:`own_dirs` (read and write), so no grant, however
  broad, reaches them;
- what cvg reads back carries an HMAC-SHA256 under a per-user key that only this user's
  cvg can read: 32 random bytes in ``<state>/cvg/key/seal``, a file of mode 0600 in a
  directory of mode 0700, both owned by the effective user. A key that fails those
  checks is not used (:class:`SealError`): nothing is sealed or trusted with it.

Standard library only, and cheap to import: ``hmac`` loads OpenSSL through hashlib
(milliseconds of every cold cvg-run), so the MAC is RFC 2104 over the built-in
sha256, and the key is read only when something is sealed or checked.
"""

from __future__ import annotations

import os
import stat

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Mapping
from _operator import _compare_digest

# The built-in sha256 loads without OpenSSL, which hashlib loads at import.
try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # Python 3.11
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment, unused-ignore]

KEY_BYTES = 32
MAC_BYTES = 32
_BLOCK = 64
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))

RECORD_SEAL_PREFIX = b',"seal":"hmac-sha256:'
_RECORD_TAIL = len(RECORD_SEAL_PREFIX) + 2 * MAC_BYTES + len(b'"}')

_XDG = (
    ("XDG_CONFIG_HOME", (".config",)),
    ("XDG_CACHE_HOME", (".cache",)),
    ("XDG_STATE_HOME", (".local", "state")),
)


class SealError(Exception):
    """The key cannot be used: one line saying which file and why."""


def own_dirs(
    environ: Mapping[str, str] | None = None, home: str | None = None
) -> tuple[str, str, str]:
    """cvg's config, cache and state directories: ``$XDG_CONFIG_HOME/cvg``,
    ``$XDG_CACHE_HOME/cvg`` and ``$XDG_STATE_HOME/cvg`` (a variable unset, empty or
    relative is its default beneath the home: ~/.config, ~/.cache, ~/.local/state)."""
    env = os.environ if environ is None else environ
    if home is None:
        home = env.get("HOME") or os.path.expanduser("~")
    out = []
    for name, default in _XDG:
        base = env.get(name, "")
        if not os.path.isabs(base):
            base = os.path.join(home, *default)
        out.append(os.path.join(base, "cvg"))
    return out[0], out[1], out[2]


def key_path(environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(own_dirs(environ)[2], "key", "seal")


_loaded: dict[str, bytes] = {}


def load_key(*, create: bool, environ: Mapping[str, str] | None = None) -> bytes:
    """This user's key (once per process and path). ``create``: make it when there is
    none (and its directory, mode 0700). SealError when there is none to read, or its
    file or directory is not this user's alone."""
    path = key_path(environ)
    key = _loaded.get(path)
    if key is None:
        key = _read_key(path, create)
        _loaded[path] = key
    return key


def _read_key(path: str, create: bool) -> bytes:
    directory, name = os.path.split(path)
    if create:
        os.makedirs(os.path.dirname(directory), exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise SealError(f"{directory}: cannot open the key's directory: {e.strerror}") from None
    try:
        st = os.fstat(dfd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise SealError(
                f"{directory}: the key's directory must be owned by uid {os.geteuid()} and "
                f"writable by nobody else (owner {st.st_uid}, mode {st.st_mode & 0o7777:o})"
            )
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            if not create:
                raise SealError(f"{path}: no key") from None
            return _make_key(dfd, name, path)
        except OSError as e:
            raise SealError(f"{path}: cannot open the key: {e.strerror}") from None
        try:
            return _checked(fd, path)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def _checked(fd: int, path: str) -> bytes:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SealError(
            f"{path}: the key must be a regular file owned by uid {os.geteuid()} that nobody "
            f"else can read or write (owner {st.st_uid}, mode {st.st_mode & 0o7777:o})"
        )
    key = os.read(fd, KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise SealError(f"{path}: the key is {len(key)} bytes, not {KEY_BYTES}")
    return key


def _make_key(dfd: int, name: str, path: str) -> bytes:
    """A new key, written whole under a temporary name and linked into place: a cvg that
    made one at the same moment wins, and both use its key."""
    tmp = f".{name}.{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=dfd)  # fmt: skip
    try:
        key = os.urandom(KEY_BYTES)
        os.write(fd, key)
        os.fsync(fd)
        try:
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            theirs = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            try:
                return _checked(theirs, path)
            finally:
                os.close(theirs)
        return key
    finally:
        os.close(fd)
        os.unlink(tmp, dir_fd=dfd)


def mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of ``data`` under ``key`` (RFC 2104; equal to ``hmac.digest(key,
    data, "sha256")``)."""
    if len(key) > _BLOCK:
        key = _sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = _sha256(key.translate(_IPAD))
    inner.update(data)
    outer = _sha256(key.translate(_OPAD))
    outer.update(inner.digest())
    return bytes(outer.digest())


def same(a: bytes, b: bytes) -> bool:
    """Whether two MACs are equal, in time independent of where they differ."""
    return bool(_compare_digest(a, b))


def seal_record(key: bytes, line: bytes) -> bytes:
    """A record (one compact JSON object and a newline) with a last member ``seal``:
    the MAC of the record's bytes as they were without it."""
    if not line.endswith(b"}\n"):
        raise ValueError("a record is one JSON object on one line")
    tag = mac(key, line).hex().encode()
    return line[:-2] + RECORD_SEAL_PREFIX + tag + b'"}\n'


def unseal_record(key: bytes, data: bytes) -> bool:
    """Whether ``data`` is a record :func:`seal_record` sealed under ``key``, byte for
    byte: a record written again (pretty-printed, reordered) no longer is."""
    body = data[:-1] if data.endswith(b"\n") else data
    start = len(body) - _RECORD_TAIL
    if start < 1 or body[start : start + len(RECORD_SEAL_PREFIX)] != RECORD_SEAL_PREFIX:
        return False
    if not body.endswith(b'"}'):
        return False
    try:
        tag = bytes.fromhex(body[start + len(RECORD_SEAL_PREFIX) : -2].decode("ascii"))
    except ValueError:
        return False
    return same(mac(key, body[:start] + b"}\n"), tag)
