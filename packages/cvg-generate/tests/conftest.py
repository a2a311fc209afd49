"""Fixtures for cvg-generate's tests on the real kernel."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cvg_testing import shared_dir


@pytest.fixture(params=["root", "unprivileged"])
def identity(request: pytest.FixtureRequest) -> str:
    """Who runs the tool: root, then the unprivileged user (which needs root)."""
    if request.param == "unprivileged" and os.geteuid() != 0:
        pytest.skip("needs root to create and become the unprivileged user")
    return str(request.param)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A fresh directory every identity can use (pytest's tmp_path is 0700 root)."""
    with shared_dir("cvg-generate-") as d:
        yield d
