"""cvg-run --trace says each denial on stderr while the tool still runs.

A server may run for hours: a refusal it meets at the start must show when it
happens, not when the server ends. The tool here is refused a read, then waits
for a file this test creates only after it has seen the denial's line on
cvg-run's stderr. The oracle is the tool's own state: still running (it has not
printed its last line, cvg-run has not exited) when the line arrives.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import time

import pytest
from runhelp import CVG_RUN, PY, Box, cli_env, load_record, make_policy

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

WAIT = 30.0


def _lines_until(proc: subprocess.Popen[bytes], wanted: str, deadline: float) -> str:
    """cvg-run's stderr read as it comes, up to the first line holding ``wanted``."""
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    seen = b""
    while wanted.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or not sel.select(left):
            break
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    sel.close()
    return seen.decode(errors="replace")


def test_a_denial_is_said_before_the_tool_ends(box: Box) -> None:
    secrets = box.root / "secrets"
    secrets.mkdir()
    secret = secrets / "id_rsa"
    secret.write_text("KEY\n")
    go = box.root / "go"
    script = (
        "import os, sys, time\n"
        f"try:\n open({str(secret)!r}).read(); print('read')\n"
        "except PermissionError:\n print('refused')\n"
        "sys.stdout.flush()\n"
        f"end = time.monotonic() + {WAIT}\n"
        f"while not os.path.exists({str(go)!r}) and time.monotonic() < end:\n"
        " time.sleep(0.05)\n"
        f"print('went' if os.path.exists({str(go)!r}) else 'timed out')\n"
    )
    plain = subprocess.run([PY, "-c", script.replace(str(go), str(secret))],
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert plain.stdout == "read\nwent\n"  # unconfined, the read works

    policy = make_policy(box.share)
    rec = box.share / "run.json"
    argv = [str(CVG_RUN), "--trace", "--record", str(rec), "-p", str(policy), "--", PY, "-c"]
    proc = subprocess.Popen([*argv, script], cwd=box.cwd, env=cli_env(box),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        err = _lines_until(proc, f"denied: open {secret} for read", time.monotonic() + WAIT)
        running = proc.poll() is None
        go.touch()
        out, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert f"cvg-run: denied: open {secret} for read" in err, err
    assert running, "the line came only once the tool had ended"
    assert proc.returncode == 0 and out == b"refused\nwent\n", (out, rest)
    # Said once: not again at the end of the run.
    assert (err + rest.decode()).count(f"denied: open {secret} for read") == 1
    data, _ = load_record(rec)
    assert [d["path"] for d in data["denials"] if d["mechanism"] == "landlock_fs"] == [str(secret)]
