"""The per-boot cache of probe results.

What a kernel can enforce changes only with the kernel, the boot (a sysctl, a
module, an LSM toggled at boot), the user (root differs) and the ABI cap, so
results are kept under ``$XDG_CACHE_HOME/cvg/`` (default ``~/.cache/cvg/``),
keyed on ``/proc/sys/kernel/random/boot_id``, ``uname -r``, the effective uid,
``CVG_LANDLOCK_ABI_MAX`` and cvg-probe's version. One file per user and cap,
replaced atomically. A file that is unreadable, corrupt, or written under
another key is ignored, never trusted and never fatal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cvg_kernel.landlock import ABI_ENV
from cvg_schema import Facts, SchemaError, dumps, load_dict, write_atomic

from ._version import __version__

__all__ = ["cache_dir", "cache_key", "cache_path", "read", "write"]

CACHE_KIND = "cvg-probe.cache"
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cvg``, or ``~/.cache/cvg`` when that is unset or relative."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return root / "cvg"


def cache_key() -> dict[str, Any] | None:
    """What the cached facts depend on; None when the boot cannot be identified
    (then nothing is cached: results from another boot could be stale)."""
    try:
        with open(BOOT_ID, encoding="ascii") as f:
            boot_id = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not boot_id:
        return None
    return {
        "boot_id": boot_id,
        "kernel": os.uname().release,
        "euid": os.geteuid(),
        "abi_cap": os.environ.get(ABI_ENV) or None,
        "version": __version__,
    }


def cache_path(key: dict[str, Any]) -> Path:
    """The file for this key: one per user and ABI cap, so they never thrash."""
    cap = key["abi_cap"]
    suffix = "" if cap is None else "-abi" + "".join(c for c in str(cap) if c.isalnum())[:8]
    return cache_dir() / f"probe-{key['euid']}{suffix}.json"


def read(key: dict[str, Any]) -> Facts | None:
    """The cached facts for ``key`` (marked ``cached``), or None if there are none
    usable: missing, unreadable, corrupt, or written under another key."""
    try:
        raw = cache_path(key).read_bytes()
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("kind") != CACHE_KIND:
            return None
        if data.get("key") != key:
            return None
        facts = load_dict(data.get("facts"))
    except (OSError, ValueError, SchemaError):
        return None
    if not isinstance(facts, Facts):
        return None
    return facts.model_copy(update={"cached": True})


def write(key: dict[str, Any], facts: Facts) -> None:
    """Store ``facts`` under ``key`` atomically. Raises OSError if it cannot."""
    path = cache_path(key)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fresh = facts.model_copy(update={"cached": False})
    body = {"kind": CACHE_KIND, "key": key, "facts": json.loads(dumps(fresh))}
    write_atomic(path, json.dumps(body, indent=1).encode() + b"\n", mode=0o600)
