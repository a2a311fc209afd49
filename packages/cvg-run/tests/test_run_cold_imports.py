"""What a cold cvg-run imports before it runs the tool: each module is paid for by every
call a user makes. typing (with contextlib and warnings) and the policy compiler's
pydantic and yaml cost milliseconds to a hundred of them, and none is needed when the
plan is cached."""

from __future__ import annotations

import subprocess
import sys

NOT_ON_THE_COLD_PATH = ("typing", "contextlib", "warnings", "pydantic", "yaml", "click")


def test_the_cold_path_imports_nothing_it_does_not_need() -> None:
    code = (
        "import sys, cvg_run.cli\n"
        f"print(' '.join(m for m in {NOT_ON_THE_COLD_PATH!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == []
