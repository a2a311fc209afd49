"""What cvg-wrap remembers of one client config, in
``$XDG_STATE_HOME/cvg/wrap/<config-id>/``:

- ``.wrap.json``: per server it rewrote, the original command line, the one it wrote
  instead, learning or enforced since when, and the policy;
- ``.original``: the config as it was before the first ``learn`` (a backup; ``restore``
  works from ``.wrap.json`` and keeps what else changed in the file since);
- ``<server>/``: the server's observations, one file per session (``cvg-observe
  --out-dir``).

The config id is the file's name and a digest of its real path, so two projects'
``.mcp.json`` never share a state.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from cvg_schema import write_atomic

STATE_FILE = ".wrap.json"
BACKUP_FILE = ".original"
LEARNING = "learning"
ENFORCED = "enforced"


def state_home() -> str:
    return os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )


def safe_name(name: str) -> str:
    """A file name for a server name: itself when it is plain, else plain characters
    and a digest (so two odd names never share a directory)."""
    plain = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or "_"
    if plain == name:
        return name
    return f"{plain}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def config_id(real: str) -> str:
    return f"{safe_name(os.path.basename(real))}-{hashlib.sha256(real.encode()).hexdigest()[:12]}"


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Server:
    original: list[str]  # the command line the client had
    had_args: bool  # whether the entry had an "args" key
    wrapped: list[str]  # the command line cvg-wrap wrote instead
    mode: str  # LEARNING or ENFORCED
    since: str  # when it entered that mode (UTC, RFC 3339)
    policy: str | None = None
    rules: int | None = None
    traced: bool = False
    # The entry's text before cvg-wrap's first change, and as cvg-wrap last wrote it:
    # restore puts the first back byte for byte while the entry is still the second.
    original_text: str | None = None
    wrapped_text: str | None = None


@dataclass
class State:
    directory: str
    config: str
    servers: dict[str, Server] = field(default_factory=dict)

    def observations_dir(self, name: str) -> str:
        return os.path.join(self.directory, safe_name(name))

    def observations(self, name: str) -> list[str]:
        """The server's finished observations (cvg-observe's temporary files start
        with a dot)."""
        d = self.observations_dir(name)
        try:
            names = os.listdir(d)
        except OSError:
            return []
        return sorted(os.path.join(d, n) for n in names if n.endswith(".json") and n[0] != ".")

    def save(self) -> None:
        data = {"config": self.config, "servers": {k: asdict(v) for k, v in self.servers.items()}}
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        write_atomic(os.path.join(self.directory, STATE_FILE),
                     (json.dumps(data, indent=2) + "\n").encode(), mode=0o600)  # fmt: skip

    def keep_backup(self, text: str) -> str:
        """Write the config's text as the backup, unless one is already kept."""
        path = os.path.join(self.directory, BACKUP_FILE)
        if not os.path.exists(path):
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            write_atomic(path, text.encode("utf-8"), mode=0o600)
        return path


class StateError(Exception):
    """The state file is damaged: one line."""


def load(real_config: str) -> State:
    directory = os.path.join(state_home(), "cvg", "wrap", config_id(real_config))
    path = os.path.join(directory, STATE_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
        servers = {k: Server(**v) for k, v in data["servers"].items()}
    except FileNotFoundError:
        return State(directory, real_config)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise StateError(f"{path}: damaged ({type(e).__name__}: {e}); move it away") from None
    return State(directory, real_config, servers)
