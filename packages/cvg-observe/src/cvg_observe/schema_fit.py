"""The observation's events and head, checked and shaped without pydantic.

Importing pydantic and cvg_schema's models costs more than a short observation itself,
so the writer asks here first. Each check is narrower than the schema's
(:class:`cvg_schema.Event`, :class:`cvg_schema.Observation`): what passes here the
models accept too, and what does not is handed to them for the real verdict, so an
observation is the same either way (tests/test_observe_schema_fit.py holds this against
the models, and the head against their dump, byte for byte).
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

__all__ = ["SCHEMA_VERSION", "event_fits", "observation_head"]

SCHEMA_VERSION: Final = "1.0"  # cvg_schema.SCHEMA_VERSION, which a test holds it to

EVENT_OPS: Final = frozenset(
    {"read", "write", "create", "remove", "rename", "link", "execute", "connect", "bind",
     "send", "socket", "signal", "stat", "chdir", "wait", "other"}
)  # fmt: skip
FAMILY_NAMES: Final = frozenset({"unix", "inet", "inet6", "netlink", "packet"})
SOCK_TYPES: Final = frozenset({"stream", "dgram", "raw", "seqpacket"})
_SYSCALL: Final = re.compile(r"[a-z_][a-z0-9_]{0,63}")
_RESULT: Final = re.compile(r"ok|E[A-Z0-9]{1,31}")
_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_PATHS: Final = ("path", "path2", "address")
_INTS: Final = {"pid": (1, 4_194_304), "port": (0, 65535), "target_pid": (-(2**31), 2**31 - 1)}
_EVENT_KEYS: Final = frozenset(
    {"id", "op", "syscall", "result", *_PATHS, *_INTS, "family", "sock_type", "time",
     "directory", "denied_while_learning", "denied_by"}
)  # fmt: skip


def _text(value: object, most: int, least: int = 0) -> bool:
    """A str the models take: at most ``most`` characters, and unicode (a lone
    surrogate, from a path that is not UTF-8, is refused there)."""
    if type(value) is not str or not least <= len(value) <= most:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _int(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


class _Seen:
    """Names already matched (a trace repeats a few dozen of them)."""

    syscalls: set[str] = set()
    results: set[str] = set()


def event_fits(d: dict[str, Any]) -> bool:
    """True when :class:`cvg_schema.Event` accepts the event ``d`` as it is."""
    if not _EVENT_KEYS.issuperset(d):
        return False
    syscall, result, event_id, op = d.get("syscall"), d.get("result"), d.get("id"), d.get("op")
    if not (type(syscall) is type(result) is type(event_id) is type(op) is str):
        return False
    if syscall not in _Seen.syscalls:
        if not _SYSCALL.fullmatch(syscall):
            return False
        _Seen.syscalls.add(syscall)
    if result not in _Seen.results:
        if not _RESULT.fullmatch(result):
            return False
        _Seen.results.add(result)
    if op not in EVENT_OPS or not _identifier(event_id):
        return False
    for key in _PATHS:
        if key in d and not _text(d[key], 4096):
            return False
    for key, (low, high) in _INTS.items():
        if key in d and not _int(d[key], low, high):
            return False
    if "family" in d:
        family = d["family"]
        if not (_int(family, 0, 0xFFFFFFFF) or (type(family) is str and family in FAMILY_NAMES)):
            return False
    if "sock_type" in d and not (type(d["sock_type"]) is str and d["sock_type"] in SOCK_TYPES):
        return False
    if "time" in d:
        t = d["time"]
        if type(t) is not float or not math.isfinite(t) or t < 0:
            return False
    for key in ("directory", "denied_while_learning"):
        if key in d and d[key] is not True:
            return False
    if "denied_by" in d:
        by = d["denied_by"]
        return type(by) is str and by in ("landlock", "seccomp") and "denied_while_learning" in d
    return True


def observation_head(
    fields: dict[str, Any], executables: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The observation without its events, as ``Observation(**fields)`` with these
    executables dumps it (``model_dump(mode="json", by_alias=True)``); None when the
    model might refuse or reshape something, for it to decide.

    ``fields`` holds argv, cwd, home, scratch, strace_version, exit_status, syscalls,
    peak_rss_kb, tree_rss_kb, environment and notes; each executable path, interpreter,
    shebang and event_id."""
    f = fields
    argv, scratch, notes, syscalls, env = (
        f["argv"], f["scratch"], f["notes"], f["syscalls"], f["environment"]
    )  # fmt: skip
    ok = (
        type(argv) is list
        and argv
        and all(_text(a, 1 << 62) for a in argv)
        and _text(f["cwd"], 4096)
        and (f["home"] is None or _text(f["home"], 4096))
        and type(scratch) is list
        and all(_text(s, 4096, 1) for s in scratch)
        and (f["strace_version"] is None or _text(f["strace_version"], 100))
        and (f["exit_status"] is None or _int(f["exit_status"], 0, 255))
        and (syscalls is None or _counts(syscalls))
        and all(f[k] is None or _int(f[k], 1, 1 << 62) for k in ("peak_rss_kb", "tree_rss_kb"))
        and (env is None or _environment(env))
        and type(notes) is list
        and all(_text(n, 2000) for n in notes)
        and all(_executable(e) for e in executables)
    )
    if not ok:
        return None
    head: dict[str, Any] = {
        "kind": "cvg.observation",
        "schema_version": SCHEMA_VERSION,
        "argv": list(argv),
        "cwd": f["cwd"],
        "home": f["home"],
        "scratch": list(scratch),
        "strace_version": f["strace_version"],
        "executables": [dict(e, shebang=list(e["shebang"])) for e in executables],
        "exit_status": f["exit_status"],
    }
    # Left out when not measured, as the model's serializer does.
    for key in ("syscalls", "peak_rss_kb", "tree_rss_kb", "environment"):
        if f[key] is not None:
            head[key] = dict(f[key]) if isinstance(f[key], dict) else f[key]
    head.update({"partial": False, "source": None, "notes": list(notes)})
    return head


def _counts(syscalls: object) -> bool:
    return type(syscalls) is dict and all(
        type(k) is str and _SYSCALL.fullmatch(k) is not None and _int(v, 1, 1 << 62)
        for k, v in syscalls.items()
    )


def _environment(env: object) -> bool:
    return type(env) is dict and all(
        _text(k, 1 << 62) and (v is None or _text(v, 1 << 62)) for k, v in env.items()
    )


def _executable(e: dict[str, Any]) -> bool:
    chain = e.get("shebang")
    return (
        list(e) == ["path", "interpreter", "shebang", "event_id"]
        and _text(e["path"], 4096, 1)
        and (e["interpreter"] is None or _text(e["interpreter"], 4096))
        and type(chain) is list
        and all(_text(s, 4096, 1) for s in chain)
        and (e["event_id"] is None or _identifier(e["event_id"]))
    )


def _identifier(value: object) -> bool:
    return type(value) is str and _ID.fullmatch(value) is not None
