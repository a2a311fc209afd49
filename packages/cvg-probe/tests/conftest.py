from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cvg_kernel.landlock import ABI_ENV
from cvg_probe.probes import RunDetail, run_detailed


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache directory and no ABI cap from the caller."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv(ABI_ENV, raising=False)
    return cache / "cvg"


@pytest.fixture(scope="session")
def here() -> Iterator[RunDetail]:
    """One uncapped probe run on this machine, shared by the per-feature tests."""
    saved = os.environ.pop(ABI_ENV, None)
    try:
        yield run_detailed()
    finally:
        if saved is not None:
            os.environ[ABI_ENV] = saved
