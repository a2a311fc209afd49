"""Where the benchmarks find cvg's commands: beside the running interpreter (the
workspace's venv) first, then on PATH."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def beside_python(name: str) -> str | None:
    """The command ``name`` next to ``sys.executable``, else on PATH; None if neither."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)
