"""What a cold cvg-run imports before it runs the tool: each module is paid for by every
call a user makes. typing (with contextlib and warnings) and the policy compiler's
pydantic and yaml cost milliseconds to a hundred of them, and none is needed when the
plan is cached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


# Loaded by a whole cold run with a cached plan, not only by importing the CLI: json
# brings in re, threading is only needed when a thread is started, the signal module's
# enums bring in enum and functools, and collections.abc the collections package.
NOT_IN_A_CACHED_RUN = (
    *NOT_ON_THE_COLD_PATH,
    "json",
    "re",
    "threading",
    "signal",
    "enum",
    "functools",
    "collections",
    "cvg_policy",
)


def test_a_run_with_a_cached_plan_loads_nothing_it_does_not_need(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from cvg_run.cli import main\n"
        "status = main(['--', 'true'])\n"
        f"print(status, ' '.join(m for m in {NOT_IN_A_CACHED_RUN!r} if m in sys.modules))\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    # A working directory nothing writes to: the default policy's plan depends on its names.
    work = tmp_path / "work"
    work.mkdir()
    runs = [
        subprocess.run(
            [sys.executable, "-I", "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=work,
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0][0] == "0" and "cvg_policy" in runs[0], runs  # the first one compiled
    assert runs[1] == ["0"], runs
