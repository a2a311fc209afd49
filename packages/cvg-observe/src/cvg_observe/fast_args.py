"""The usual cvg-observe command lines, read without click.

Only what the click command (:mod:`.command`) would read the same way and accept:
``-o FILE``, ``--out FILE`` or ``--out=FILE``, ``--out-dir DIR`` (or ``=DIR``),
``--unconfined``, ``--strace PATH`` (or ``=PATH``), ``--timeout SECONDS`` and ``--idle
SECONDS`` (digits, a decimal point), each at most once, with a value
that does not start with ``-`` (``--out -`` aside), then ``--`` and the command, or the
command itself. The paths are checked as click's ``Path`` of each option checks them.
Anything else, a help or version flag, a shell completion request, is None: click's to
read, and to refuse.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Final

from .lifetime import DEFAULT_IDLE, DEFAULT_TIMEOUT

__all__ = ["Args", "fast_args"]

Args = tuple[str | None, str | None, bool, str | None, float, float, tuple[str, ...]]
"""out, out_dir, unconfined, strace, timeout, idle, command: what the click command is
called with."""

_VALUES: Final = {
    "-o": "out",
    "--out": "out",
    "--out-dir": "out_dir",
    "--strace": "strace",
    "--timeout": "timeout",
    "--idle": "idle",
}
_SECONDS: Final = re.compile(r"[0-9]{1,9}(\.[0-9]{1,6})?")
_COMPLETION: Final = "_CVG_OBSERVE_COMPLETE"


def fast_args(argv: list[str]) -> Args | None:
    """``argv`` read as the click command reads it, or None when it is click's to read."""
    if _COMPLETION in os.environ:
        return None
    values: dict[str, str] = {}
    unconfined = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or arg == "-" or not arg.startswith("-"):
            break
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name == "--unconfined" and not eq and not unconfined:
            unconfined = True
            i += 1
            continue
        key = _VALUES.get(name)
        if key is None or key in values:
            return None
        if not eq:
            if i + 1 == len(argv):
                return None
            i += 1
            value = argv[i]
        if not value or (value.startswith("-") and not (key == "out" and value == "-")):
            return None
        values[key] = value
        i += 1
    command = argv[i + 1 :] if i < len(argv) and argv[i] == "--" else argv[i:]
    out, out_dir = values.get("out"), values.get("out_dir")
    if not command or (out is not None and out_dir is not None):
        return None
    if out is not None and out != "-" and not _path_ok(out, dir_ok=False, writable=True):
        return None
    if out_dir is not None and not _path_ok(out_dir, file_ok=False):
        return None
    seconds = []
    for key, default in (("timeout", DEFAULT_TIMEOUT), ("idle", DEFAULT_IDLE)):
        given = values.get(key)
        if given is not None and not _SECONDS.fullmatch(given):
            return None
        seconds.append(default if given is None else float(given))
    timeout, idle = seconds
    return out, out_dir, unconfined, values.get("strace"), timeout, idle, tuple(command)


def _path_ok(
    path: str, *, file_ok: bool = True, dir_ok: bool = True, writable: bool = False
) -> bool:
    """What ``click.Path(exists=False, ...)`` lets through: a path that is not there, or
    one of a kind it allows that can be read (and written, when ``writable``)."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    if (not file_ok and stat.S_ISREG(st.st_mode)) or (not dir_ok and stat.S_ISDIR(st.st_mode)):
        return False
    return os.access(path, os.R_OK) and (not writable or os.access(path, os.W_OK))
