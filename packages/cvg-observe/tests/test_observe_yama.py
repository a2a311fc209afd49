"""cvg-observe under Yama's ptrace_scope 1, Ubuntu's default, as an unprivileged user.

There a process may be traced only by an ancestor (or by what it names with
PR_SET_PTRACER). The strace that cvg-observe starts is cvg-observe's child, not the
command's ancestor: the held command names cvg-observe before it is confined. The
proof that the scope binds comes first: the same user's bare attach to a process
that is not its descendant is refused.

Needs a kernel with Yama (this repository's own CI kernel has none, which the skip
proves); `nox -s kernels` runs it on Debian's 6.1 and 6.12, which have it.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cvg_testing
from cvg_testing.ci import YAMA_SCOPE

PTRACE_SEIZE = 0x4206
PTRACE_DETACH = 17
SECRET_LINE = "read through a held, confined command"


@pytest.fixture
def scope_1() -> Iterator[None]:
    """ptrace_scope 1 for the test, the machine's own value after it."""
    cvg_testing.require_yama()
    if os.geteuid() != 0:
        pytest.skip("needs root to set ptrace_scope")
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    before = Path(YAMA_SCOPE).read_text()
    Path(YAMA_SCOPE).write_text("1")
    try:
        yield
    finally:
        Path(YAMA_SCOPE).write_text(before)


def _seize(pid: int) -> str:
    """PTRACE_SEIZE ``pid`` (then let go): "OK" or the errno's name."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
        return errno.errorcode[ctypes.get_errno()]
    libc.ptrace(PTRACE_DETACH, pid, None, None)
    return "OK"


def _observe(box: Path, user: Any) -> dict[str, Any]:
    """cvg-observe on ``cat input.txt`` as ``user``, by an interpreter and a staged
    copy of the packages that user can read."""
    out = box / "observation.json"
    r = subprocess.run(
        [cvg_testing.unpriv_python(user), "-I", "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); from cvg_observe.cli import main; "
         "sys.exit(main(sys.argv[2:]))",
         cvg_testing.stage("cvg-observe"), "-o", str(out), "--", "cat", str(box / "input.txt")],
        user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd=box,
        env={"PATH": "/usr/bin:/bin", "HOME": str(box), "LANG": "C.UTF-8"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    events = json.loads(out.read_text())["events"] if out.exists() else []
    return {"code": r.returncode, "stderr": r.stderr[-2000:],
            "paths": [(e["op"], e.get("path")) for e in events]}  # fmt: skip


def test_observe_attaches_as_a_user_under_scope_1(scope_1: None) -> None:
    user = cvg_testing.ensure_unpriv_user()
    with cvg_testing.shared_dir("cvg-yama-") as box:
        os.chown(box, user.pw_uid, user.pw_gid)
        (box / "input.txt").write_text(SECRET_LINE + "\n")
        # The proof: a process of the same user that is no descendant of the caller.
        other = subprocess.Popen(
            ["sleep", "60"], user=user.pw_uid, group=user.pw_gid, extra_groups=[]
        )
        try:
            attach = cvg_testing.in_child(lambda: _seize(other.pid), user=user)
        finally:
            other.kill()
            other.wait()
        assert attach.error is None and attach.value == "EPERM", attach
        observed = _observe(box, user)
    assert observed["code"] == 0, observed
    paths = observed["paths"]
    assert ("execute", "/usr/bin/cat") in paths or ("execute", "/bin/cat") in paths, paths
    assert ("read", str(box / "input.txt")) in paths, paths
