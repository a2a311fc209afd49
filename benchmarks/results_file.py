"""The per-machine results file every benchmark writes one key of."""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path
from typing import Any

from cvg_schema import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def default_path() -> Path:
    return RESULTS_DIR / f"{socket.gethostname()}.json"


def record(path: Path, key: str, entry: dict[str, Any], *, who: str) -> None:
    """Set ``entry`` under ``key`` in ``path``, keeping every other key as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Lock the directory itself: it serialises the benchmarks' read-modify-write
    # without leaving a lock file behind.
    lock = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except FileNotFoundError:
            data = {}
        except ValueError as e:
            raise SystemExit(f"{who}: {path} is not a JSON object ({e}); not overwriting it")
        data[key] = entry
        write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
    finally:
        os.close(lock)  # releases the lock
