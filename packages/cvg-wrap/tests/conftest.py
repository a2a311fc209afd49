"""Fixtures for cvg-wrap's tests: a private home, state and config per test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import wraphelp


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> wraphelp.Home:
    """HOME, XDG_STATE_HOME and XDG_CONFIG_HOME of their own, for the tools cvg-wrap
    runs and the sessions a client starts."""
    return wraphelp.make_home(tmp_path, monkeypatch)
