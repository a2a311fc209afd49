"""Run a function in a forked child, optionally as the unprivileged user.

Enforcement is tested on the real kernel: confinement is applied inside a forked
child (it can never be undone, so never in the test process itself), the child
attempts things, and what it found comes back through a pipe as JSON.

The interpreter running the tests may live where the unprivileged user cannot start
it (under /root, mode 0700), so the child drops privileges after the fork, with
everything it needs already imported.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from cvg_testing.users import drop_to

__all__ = ["Child", "Spawned", "attempt", "attempt_name", "errname", "in_child", "spawn"]


@dataclass
class _Status:
    status: int  # waitpid status

    @property
    def exitcode(self) -> int | None:
        return os.waitstatus_to_exitcode(self.status) if os.WIFEXITED(self.status) else None

    @property
    def signal(self) -> int | None:
        return os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None


@dataclass
class Child(_Status):
    """How an :func:`in_child` child ended."""

    value: Any  # what the function returned (JSON round-tripped)
    error: str | None  # traceback text if the function raised


@dataclass
class Spawned(_Status):
    """How a :func:`spawn` child ended, and what it wrote."""

    stdout: bytes
    stderr: bytes


def in_child(fn: Callable[[], Any], *, user: pwd.struct_passwd | None = None) -> Child:
    """Fork; in the child drop to ``user`` (if given), call ``fn`` and report its
    JSON-able value (or the traceback it raised, with exit status 70)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 0
        try:
            os.close(r)
            if user is not None:
                drop_to(user)
            payload = {"value": fn()}
        except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
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


def attempt(fn: Callable[[], object]) -> int:
    """0 if ``fn`` succeeded, else the errno of the OSError it raised (-1: none)."""
    try:
        fn()
    except OSError as e:
        return e.errno or -1
    return 0


def errname(code: int) -> str:
    """``"OK"`` for 0, else the errno's name (``"EACCES"``), else the number."""
    return "OK" if code == 0 else errno.errorcode.get(code, str(code))


def attempt_name(fn: Callable[[], object]) -> str:
    """``"OK"`` if ``fn`` succeeded, else the errno name of the OSError it raised."""
    try:
        fn()
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, str(e.errno))
    return "OK"


def stdio_from(stdin: int, stdout: int, stderr: int, *, close: Iterable[int]) -> None:
    """In a forked child: descriptors 0, 1 and 2 from these, those in ``close``
    closed, and sys.std* on the real descriptors again (pytest replaced them)."""
    os.dup2(stdin, 0)
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    for fd in close:
        os.close(fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115


def exit_child(code: int) -> NoReturn:
    """Leave a forked child with ``code``, its Python output flushed: it never returns
    into the caller's code."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def spawn(
    fn: Callable[[], int],
    *,
    user: pwd.struct_passwd | None = None,
    stdin: bytes = b"",
    before: Callable[[], None] | None = None,
) -> Spawned:
    """Fork; the child drops to ``user``, runs ``before`` then ``fn`` (which may
    exec) with stdio on pipes; ``fn``'s return value becomes the exit status."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            stdio_from(in_r, out_w, err_w, close=(in_r, in_w, out_r, out_w, err_r, err_w))
            if user is not None:
                drop_to(user)
            if before is not None:
                before()
            code = fn()
        except BaseException:  # noqa: BLE001 - a forked child never returns into the caller's code
            os.write(2, traceback.format_exc().encode())
        finally:
            exit_child(code)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    os.write(in_w, stdin)
    os.close(in_w)
    with os.fdopen(out_r, "rb") as o, os.fdopen(err_r, "rb") as e:
        # Small outputs only: read stdout fully, then stderr.
        out = o.read()
        err = e.read()
    _, status = os.waitpid(pid, 0)
    return Spawned(status, out, err)
