"""Fork helpers for cvg-probe's tests (adapted from cvg-kernel's tests/forkrun.py,
which is not importable from here).

The default python here lives under /root (mode 0700), so an unprivileged user
cannot start it; the child drops privileges after fork instead, with everything
it needs already imported.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UNPRIV_USER = "cvgtest"


@dataclass
class Child:
    status: int
    value: Any
    error: str | None

    @property
    def exitcode(self) -> int | None:
        return os.waitstatus_to_exitcode(self.status) if os.WIFEXITED(self.status) else None


def ensure_unpriv_user() -> pwd.struct_passwd:
    """Create the unprivileged test user once (requires root)."""
    try:
        return pwd.getpwnam(UNPRIV_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
             UNPRIV_USER],
            check=True,
        )  # fmt: skip
        return pwd.getpwnam(UNPRIV_USER)


def drop_to(user: pwd.struct_passwd) -> None:
    os.setgroups([])
    os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
    os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)


def in_child(fn: Callable[[], Any], *, user: pwd.struct_passwd | None = None) -> Child:
    """Fork; in the child drop to ``user`` (if given), call ``fn``, send back its
    JSON-able result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 0
        try:
            os.close(r)
            if user is not None:
                drop_to(user)
            payload = {"value": fn()}
        except BaseException:
            payload = {"error": traceback.format_exc()}
            code = 70
        try:
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(w, data) :]
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        raw = f.read()
    _, status = os.waitpid(pid, 0)
    payload = json.loads(raw) if raw else {}
    return Child(status=status, value=payload.get("value"), error=payload.get("error"))
