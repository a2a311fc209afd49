"""Moving files between grants, through the real cvg-run, as root and as `cvgtest`:
a rename between two write grants works (the compiler grants refer on write grants),
while a file of a read-only grant can be neither linked nor renamed into a write
grant. Each operation first succeeds with no sandbox, so a refusal is cvg-run's.

Needs root (it runs cvg-run as both identities): `uv run pytest escape/test_grants.py`.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import probes  # noqa: E402
import runtime  # noqa: E402
import staging  # noqa: E402

TOOL = """
import json, os, sys
res = {}
for name, f in (
    ("mv_between_write_grants", lambda: os.rename("a/f", "b/f")),
    ("link_from_read_only", lambda: os.link("ro/canary", "a/linked")),
    ("rename_from_read_only", lambda: os.rename("ro/canary", "a/moved")),
):
    try:
        f()
        res[name] = "OK"
    except OSError as e:
        res[name] = os.strerror(e.errno)
print(json.dumps(res))
"""

POLICY = """version: 1
filesystem:
  read: [/usr, /etc, /bin, /lib, /lib64, /proc, /dev/null, /dev/urandom, "${CWD}/ro"]
  write: ["${SCRATCH}", "${CWD}/a", "${CWD}/b"]
  execute: [/usr, /bin, /lib, /lib64]
network: {tcp_connect: [], tcp_bind: [], udp: false, unix: false}
ipc: {signal_outside: false}
"""


@pytest.fixture(scope="module")
def staged():
    if os.geteuid() != 0:
        pytest.fail("escape/test_grants.py runs cvg-run as root and as cvgtest: run it as root")
    user = staging.ensure_unpriv_user()

    def as_unpriv():
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    py = probes.find_python(as_unpriv)
    tmp = Path(tempfile.mkdtemp(prefix="cvg-grants-", dir="/tmp"))
    tmp.chmod(0o755)
    yield py, staging.stage_python(tmp), user
    shutil.rmtree(tmp, ignore_errors=True)


def _run(py: str, pythonpath: str, ident: pwd.struct_passwd | None, sandboxed: bool) -> tuple:
    base = Path(tempfile.mkdtemp(prefix="grants-", dir="/tmp"))
    base.chmod(0o755)
    for d in ("a", "b", "ro", "state"):
        (base / d).mkdir()
    (base / "a" / "f").write_text("moved between write grants\n")
    (base / "ro" / "canary").write_text("read-only\n")
    (base / "policy.yaml").write_text(POLICY)
    uid, gid = (ident.pw_uid, ident.pw_gid) if ident else (0, 0)
    subprocess.run(["chown", "-R", f"{uid}:{gid}", str(base)], check=True)

    def demote():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    cmd = [py, "-c", TOOL]
    if sandboxed:
        cmd = [py, "-c", runtime.CVG_MAIN, "-p", str(base / "policy.yaml"), "--", *cmd]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": pythonpath,
        "HOME": str(base / "state"),
        "XDG_CACHE_HOME": str(base / "state"),
        "XDG_STATE_HOME": str(base / "state"),
    }
    try:
        r = subprocess.run(
            cmd, cwd=base, env=env, capture_output=True, text=True, preexec_fn=demote, timeout=60
        )
        assert r.returncode == 0, r.stderr[-500:]
        files = sorted(str(p.relative_to(base)) for p in base.glob("[abr]*/*"))
        return json.loads(r.stdout.strip().splitlines()[-1]), files
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("who", ["root", "cvgtest"])
def test_moves_between_grants(staged, who):
    py, pythonpath, user = staged
    ident = user if who == "cvgtest" else None
    bare, _ = _run(py, pythonpath, ident, sandboxed=False)
    assert bare == {
        "mv_between_write_grants": "OK",
        "link_from_read_only": "OK",
        "rename_from_read_only": "OK",
    }
    confined, files = _run(py, pythonpath, ident, sandboxed=True)
    assert confined["mv_between_write_grants"] == "OK"
    assert confined["link_from_read_only"] != "OK"
    assert confined["rename_from_read_only"] != "OK"
    assert "b/f" in files and "a/f" not in files
    assert "ro/canary" in files and "a/linked" not in files and "a/moved" not in files
