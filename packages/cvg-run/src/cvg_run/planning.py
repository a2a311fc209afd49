"""From a policy to a plan, through a cache so a cold cvg-run stays cheap.

Compiling needs cvg-policy (pyyaml, pydantic): tens of milliseconds of imports.
A plan depends only on the policy's bytes, where it lives, the working directory
and home it expands against (and the system's python3, for a policy that names
it), and the kernel it was made for, so it is cached under a digest of exactly
those, and a cache hit costs one small read. ${SCRATCH} stays a variable in the
plan and is bound per run. The embedded default policy also depends on which
secrets exist beneath its reads: the names in /etc are in the key, and the
working directory's names are checked against the entry (see _still_fits), so a
tool that adds files there does not cost a compile per run.

A cache entry is used only if cvg wrote it: every compiled policy denies cvg's own
directories (cvg_kernel.seal.own_dirs), and each entry carries an HMAC-SHA256 under the
user's key, read only when there is an entry to check. An entry without the right MAC
is a miss, compiled again, never an error.
"""

from __future__ import annotations

import marshal
import os
import sys

# The built-in sha256 loads without OpenSSL, which hashlib loads at import.
try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # Python 3.11
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment, unused-ignore]

from cvg_kernel import landlock, seal
from cvg_kernel.plan import PlanError, compile_filter
from cvg_kernel.record import Record
from cvg_kernel.seccomp import SeccompError

from . import __version__
from .record import write_atomic

# typing only for the type checker: importing it costs every cold start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_POLICY_NAME = "<default policy>"
STDIN_POLICY_NAME = "<stdin>"


class PolicyRefused(Exception):
    """The policy is invalid, or cannot be compiled here. One line for the user."""


class Planned(Record, frozen=False):
    plan: dict[str, Any]
    plan_digest: str
    policy_digest: str
    policy_path: str | None
    cached: bool
    # network.hosts as [{host, ports}]: the plan has no field for it, and cvg-run
    # starts the proxy from this (hosts.py).
    hosts: list[dict[str, Any]] | None = None
    # The plan's seccomp program, assembled (cvg_kernel.seccomp.Filter.data).
    filter_data: dict[str, Any] | None = None


def cache_dir() -> str:
    return os.path.join(seal.own_dirs()[1], "plans")


def _sha256_hex(data: bytes) -> str:
    return str(_sha256(data).hexdigest())


def default_policy_bytes() -> bytes:
    # A plain read beside this module: importlib.resources costs milliseconds of
    # imports on every cold start, and the wheel always ships the file here.
    with open(os.path.join(os.path.dirname(__file__), "default_policy.yaml"), "rb") as f:
        return f.read()


def _kernel_key() -> str:
    abi, note = landlock.effective_abi()
    return f"{os.uname().release}|{os.uname().machine}|abi={abi}|{note}"


def _compiler_key() -> str:
    """The compiler's own code, by file size and mtime: a plan compiled by another
    version of cvg-policy or cvg-kernel (an upgrade, an edited checkout) is a miss,
    not a stale plan. Found on sys.path without importing cvg_policy (cold start)."""
    dirs = [os.path.dirname(landlock.__file__)]
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "cvg_policy")
        if os.path.isfile(os.path.join(candidate, "compile.py")):
            dirs.append(candidate)
            break
    parts = []
    for d in dirs:
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.name.endswith(".py"):
                        st = e.stat()
                        parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{d}:?")
    return _sha256_hex("\0".join(sorted(parts)).encode())


def _default_secrets_key(cwd: str) -> str:
    """What the default policy's carve-outs depend on besides the working directory's
    own names (see _still_fits): the secrets beneath its reads can only appear at the
    top of the working directory or in /etc (cvg_policy.defaults), so the names in /etc
    are the key. Names, not mtimes: an editor's every save can change a directory's
    mtime, and must not cost a compile per run."""
    parts = [f"{cwd}:{_inode(cwd)}"]
    for d in ("/etc", "/etc/ssh", "/etc/ssl"):
        names = _names(d)
        parts.append(f"{d}:{_inode(d)}:" + ("/".join(names) if names is not None else "-"))
    return "\0".join(parts)


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def _names(d: str) -> tuple[str, ...] | None:
    try:
        return tuple(sorted(os.listdir(d)))
    except OSError:
        return None


def _still_fits(
    entry: dict[str, Any], cached: str, cwd: str, home: str, names: tuple[str, ...] | None
) -> dict[str, Any] | None:
    """A default-policy entry compiled when the working directory held other names:
    still the plan when nothing beneath the working directory was denied (so it is
    granted whole, or not at all, and its listing is in no rule) and no new name is
    named like a secret, the one way a new entry changes the compile. Else None: a
    directory with a denied secret has its other entries granted one by one, so any
    change there is a compile. Importing the judge costs some milliseconds, a compile
    some hundred; the entry is stored again with today's names."""
    if entry.get("cwd_denies") is not False or names is None:
        return None
    before = entry.get("cwd_names")
    if not isinstance(before, tuple):
        return None
    from cvg_policy.secrets import secret_reason

    if any(secret_reason(os.path.join(cwd, n), home) for n in set(names) - set(before)):
        return None
    entry["cwd_names"] = names
    _store(cached, entry)
    return entry


def _store(cached: str, entry: dict[str, Any]) -> None:
    payload = marshal.dumps(entry)
    try:
        key = seal.load_key(create=True)
        write_atomic(cached, seal.mac(key, payload) + payload)
    except (OSError, seal.SealError):
        pass  # a read-only cache, or no usable key, only costs speed


def plan_for(policy_path: str | None, *, cwd: str, home: str, data: bytes | None = None) -> Planned:
    """The plan for a policy file (None: the embedded default), cached. With ``data``,
    the policy's text as read from stdin (``-p -``): it has no file, and its
    ${POLICY_DIR} is the working directory."""
    if data is not None:
        policy_dir = cwd
        shown = STDIN_POLICY_NAME
        real_path = None
    elif policy_path is None:
        data = default_policy_bytes()
        policy_dir = cwd
        shown = DEFAULT_POLICY_NAME
        real_path = None
    else:
        try:
            with open(policy_path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise PolicyRefused(f"{policy_path}: cannot read policy: {e.strerror}") from None
        real_path = os.path.abspath(policy_path)
        policy_dir = os.path.dirname(real_path)
        shown = policy_path
    own = seal.own_dirs()  # denied in the plan: another set is another plan
    parts = [__version__, _sha256_hex(data), cwd, home, policy_dir, _kernel_key(), _compiler_key(),
             *own]  # fmt: skip
    # marshal's format belongs to the interpreter that wrote it.
    parts.append(f"{sys.implementation.cache_tag}|marshal={marshal.version}")
    if b"${PYTHON" in data:
        # The system's python3 is bound at compile time; an upgrade is a new plan.
        from cvg_policy.variables import system_python

        parts.extend(sorted(system_python().values()))
    names = None
    if policy_path is None:
        parts.append(_default_secrets_key(cwd))
        names = _names(cwd)
    key_material = "\0".join(parts)
    key = _sha256_hex(key_material.encode())[:32]
    cached = os.path.join(cache_dir(), f"{key}.plan")
    entry = _read_entry(cached)
    if entry is not None and not _same_matches(entry.get("watched")):
        entry = None
    if entry is not None and policy_path is None and entry.get("cwd_names") != names:
        entry = _still_fits(entry, cached, cwd, home, names)
    if entry is not None:
        return Planned(entry["plan"], entry["plan_digest"], entry["policy_digest"], real_path,
                       True, entry["hosts"], entry["filter"])  # fmt: skip
    plan, policy_digest, hosts, cwd_denies, watched = _compile(
        data, shown, cwd=cwd, home=home, policy_dir=policy_dir
    )
    digest = plan_digest(plan)
    try:
        filter_data: dict[str, Any] | None = compile_filter(plan).data()
    except (PlanError, SeccompError):
        filter_data = None  # prepare says why, as it would without a cache
    entry = {
        "plan": plan,
        "plan_digest": digest,
        "policy_digest": policy_digest,
        "hosts": hosts,
        "filter": filter_data,
        "cwd_names": names,
        "cwd_denies": cwd_denies,
        "watched": watched,
    }
    _store(cached, entry)
    return Planned(plan, digest, policy_digest, real_path, False, hosts, filter_data)


def _same_matches(watched: object) -> bool:
    """Whether the secrets and protected paths the compile looked for beneath the grants
    are still the ones that exist (cvg_policy.implied): one created since is denied by
    a new plan, not granted by the cached one. A few lstat calls per run."""
    if not isinstance(watched, dict):
        return False
    for pattern, before in watched.items():
        if not isinstance(pattern, str) or _existing(pattern) != before:
            return False
    return True


def _existing(pattern: str) -> list[str]:
    # The same reading of a pattern as cvg_policy.implied.matches, without importing it.
    parent, name = os.path.split(pattern)
    if not any(c in name for c in "*?["):
        return [pattern] if os.path.lexists(pattern) else []
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return sorted(os.path.join(parent, n) for n in names if _glob_match(n, name))


def _glob_match(name: str, pattern: str) -> bool:
    """fnmatchcase for the table's patterns, which use only ``*``: fnmatch imports re,
    functools and enum, which a cached run does not otherwise load."""
    if "?" in pattern or "[" in pattern:
        import fnmatch

        return fnmatch.fnmatchcase(name, pattern)
    first, *middle, last = pattern.split("*")
    if len(name) < len(first) + len(last) or not name.startswith(first) or not name.endswith(last):
        return False
    at, end = len(first), len(name) - len(last)
    for part in middle:
        found = name.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


def _read_entry(path: str) -> dict[str, Any] | None:
    """A cached entry, or None for a miss. One cvg did not write, or a damaged one, is a
    miss: its MAC must be the one stored before it, and its parts of the types written."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    size = seal.MAC_BYTES
    if len(blob) <= size:
        return None
    try:
        key = seal.load_key(create=False)
    except seal.SealError:
        return None
    payload = blob[size:]
    if not seal.same(seal.mac(key, payload), blob[:size]):
        return None
    try:
        entry = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(entry, dict):
        return None
    kinds = {"plan": dict, "plan_digest": str, "policy_digest": str, "hosts": list}
    if not all(isinstance(entry.get(k), t) for k, t in kinds.items()):
        return None
    if not isinstance(entry.get("filter"), (dict, type(None))):
        return None
    return entry


def plan_digest(plan: dict[str, Any]) -> str:
    import json  # only when a plan is made: the cached path reads the stored digest

    canonical = json.dumps(plan, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + _sha256_hex(canonical)


def _unserved_held_directories(plan: dict[str, Any]) -> None:
    """The default policy's carve-outs (``/etc/shadow`` as root, a ``.env`` in the
    working directory) leave their directories to Landlock alone, refused as a whole,
    rather than to the supervisor: a run with no policy keeps every path call at kernel
    speed. A written policy gets them served (docs/policy.md, ``deny``)."""
    spec = plan.get("seccomp") or {}
    rest = [s for s in spec.get("supervise") or () if s != "paths"]
    if rest:
        spec["supervise"] = rest
    else:
        spec.pop("supervise", None)


def _compile(
    data: bytes, filename: str, *, cwd: str, home: str, policy_dir: str
) -> tuple[dict[str, Any], str, list[dict[str, Any]], bool, dict[str, list[str]]]:
    """The plan, the policy's digest, its hosts, (for the default policy) whether
    anything beneath the working directory was denied, and the patterns the implied
    denies were found by, with what each matched."""
    # The slow imports live here, off the cached path.
    from cvg_policy.compile import compile_report
    from cvg_policy.errors import PolicyError
    from cvg_policy.load import load_policy
    from cvg_policy.paths import inside
    from cvg_policy.variables import context

    try:
        loaded = load_policy(data, filename=filename)
        variables = context(cwd=cwd, home=home, policy_dir=policy_dir)
        policy = loaded.policy
        cwd_denies = True
        if filename == DEFAULT_POLICY_NAME:
            from cvg_policy.defaults import tailor_default

            policy, _ = tailor_default(policy, cwd=cwd, home=home)
        compiled = compile_report(policy, variables=variables, policy_path=filename)
        plan = compiled.plan
        if filename == DEFAULT_POLICY_NAME:
            real_cwd = os.path.realpath(cwd)
            denied = [*policy.filesystem.deny, *seal.own_dirs()]  # cvg's own: see own_state
            denied += [i.path for i in plan.implied]
            cwd_denies = any(inside(os.path.realpath(d), real_cwd) for d in denied)
    except PolicyError as e:
        raise PolicyRefused(str(e)) from None
    dumped: dict[str, Any] = plan.model_dump(mode="json", by_alias=True, exclude_none=False)
    if filename == DEFAULT_POLICY_NAME:
        _unserved_held_directories(dumped)
    source = dumped.get("source") or {}
    hosts = [rule.model_dump(mode="json") for rule in loaded.policy.network.hosts]
    digest = str(source.get("policy_digest") or "sha256:" + _sha256_hex(data))
    return dumped, digest, hosts, cwd_denies, compiled.watched
