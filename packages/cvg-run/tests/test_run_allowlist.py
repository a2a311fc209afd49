"""cvg-run under a syscalls allow list, on the real kernel, as root and as an
unprivileged user: listed calls work, an unlisted one gets EPERM and --trace names it,
and with on_violation: kill the tool dies of SIGSYS (exit 159).

Each refusal is first shown to succeed with no sandbox (the same identity, the same
script); the oracles are the tool's own output and exit status, and the record.
"""

from __future__ import annotations

import shutil
import signal

# Imported here for the forked child that drops privileges (see runhelp).
import tempfile  # noqa: F401
import threading  # noqa: F401
from typing import Any

import pytest
from runhelp import PY, Box, run_main
from test_run_trace import Identity, _only, _plain, _traced

from cvg_kernel.libc import machine
from cvg_kernel.seccomp import DEFAULT_DENY, table

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

ARCH = machine()
NAMES = sorted(table(ARCH))
# Everything a Python interpreter could want, less one harmless call each test makes.
ALL_BUT_GETPPID = [n for n in NAMES if n != "getppid" and n not in DEFAULT_DENY]
ALL_OFF_THE_DENY_LIST = [n for n in NAMES if n not in DEFAULT_DENY]

GETPPID = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"r = libc.syscall({table(ARCH)['getppid']})\n"
    "print('ppid', r > 0) if r > 0 else print('refused', os.strerror(ctypes.get_errno()))\n"
)
# mbind(addr, len, MPOL_DEFAULT, NULL, 0, 0) on a page of our own: a no-op that succeeds.
MBIND = (
    "import ctypes, mmap, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "m = mmap.mmap(-1, 4096); a = ctypes.addressof(ctypes.c_char.from_buffer(m))\n"
    f"r = libc.syscall({table(ARCH)['mbind']}, ctypes.c_void_p(a), 4096, 0, None, 0, 0)\n"
    "print(r, os.strerror(ctypes.get_errno()) if r else 'ok')\n"
)


def _allowlist(allow: list[str], **extra: Any) -> dict[str, Any]:
    return {"syscalls": {"mode": "allowlist", "allow": allow, **extra}}


def test_listed_calls_work_untraced(box: Box, identity: Identity) -> None:
    assert _plain(GETPPID, identity).stdout == "ppid True\n"
    ran, data = _traced(box, identity, GETPPID, trace=False, **_allowlist(ALL_OFF_THE_DENY_LIST))
    assert (ran.rc, ran.out) == (0, "ppid True\n")
    assert data["plan"]["seccomp"]["allow"] is not None


def test_an_unlisted_call_gets_eperm_and_trace_names_it(box: Box, identity: Identity) -> None:
    assert _plain(GETPPID, identity).stdout == "ppid True\n"
    ran, _ = _traced(box, identity, GETPPID, trace=False, **_allowlist(ALL_BUT_GETPPID))
    assert (ran.rc, ran.out) == (0, "refused Operation not permitted\n")

    ran, data = _traced(box, identity, GETPPID, **_allowlist(ALL_BUT_GETPPID))
    assert (ran.rc, ran.out) == (0, "refused Operation not permitted\n")
    d = _only(data, syscall="getppid")
    assert (d["mechanism"], d["rule"], d["errno"]) == ("seccomp", "syscalls.allow", "EPERM")
    assert "cvg-run: denied: syscall getppid (not in syscalls.allow)" in ran.err.splitlines()


def test_mbind_is_named_as_not_in_the_allow_list(box: Box, identity: Identity) -> None:
    # mbind is on the deny list too; in allowlist mode the allow list is what to change.
    assert _plain(MBIND, identity).stdout == "0 ok\n"
    ran, data = _traced(box, identity, MBIND, **_allowlist(ALL_OFF_THE_DENY_LIST))
    assert (ran.rc, ran.out) == (0, "-1 Operation not permitted\n")
    d = _only(data, syscall="mbind")
    assert (d["mechanism"], d["rule"]) == ("seccomp", "syscalls.allow")
    assert "cvg-run: denied: syscall mbind (not in syscalls.allow)" in ran.err.splitlines()


def test_on_violation_kill_ends_the_tool_with_sigsys(box: Box, identity: Identity) -> None:
    assert _plain(GETPPID, identity).returncode == 0
    policy = _allowlist(ALL_BUT_GETPPID, on_violation="kill")
    ran, data = _traced(box, identity, GETPPID, trace=False, **policy)
    assert ran.rc == 128 + signal.SIGSYS == 159
    assert ran.out == ""

    ran, data = _traced(box, identity, GETPPID, **policy)
    assert ran.rc == 159
    d = _only(data, mechanism="seccomp")
    assert d["rule"] == "syscalls.on_violation"
    assert "cvg-run: denied: process killed by SIGSYS (a call not in syscalls.allow" in ran.err


def test_a_launcher_only_list_still_reports_exec_failures(box: Box, identity: Identity) -> None:
    # With nothing listed but what the launcher needs, the exec itself still happens and
    # the tool (python) is refused its first calls: it cannot start, and cvg-run says so
    # by the tool's status, not by hanging or crashing itself.
    path = str(_policy(box, _allowlist([])))
    assert _plain("print(1)", identity).stdout == "1\n"
    ran = run_main(["-p", path, "--", PY, "-c", "print(1)"], box=box, user=identity)
    assert ran.rc not in (0, 124, 125) and ran.out == ""
    # Traced, the refusals go to the supervisor: the launcher's own calls between the
    # filter and the listener's handover must be allowed, or the run would wait for the
    # wall clock (124) with nobody to answer.
    ran = run_main(["--trace", "-p", path, "--", PY, "-c", "print(1)"], box=box, user=identity)
    assert ran.rc not in (0, 124, 125) and ran.out == ""
    assert "cvg-run: denied: syscall " in ran.err


def _policy(box: Box, sections: dict[str, Any]) -> Any:
    from runhelp import make_policy

    return make_policy(box.share, "narrow.json", **sections)
