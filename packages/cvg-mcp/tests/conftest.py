"""Fixtures for cvg-mcp's tests: a world per test, as root and as an unprivileged user."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import cvg_testing

sys.path.insert(0, str(Path(__file__).parent))

import mcphelp


@pytest.fixture(params=cvg_testing.identities())
def world(request: pytest.FixtureRequest) -> Iterator[mcphelp.World]:
    """A world whose server runs as root, then as the unprivileged user."""
    user = cvg_testing.ensure_unpriv_user() if request.param == "unpriv" else None
    w = mcphelp.make_world(user)
    try:
        yield w
    finally:
        mcphelp.remove_world(w)


@pytest.fixture
def rworld() -> Iterator[mcphelp.World]:
    """A world whose server runs as ourselves only (for what is not about identity)."""
    w = mcphelp.make_world(None)
    try:
        yield w
    finally:
        mcphelp.remove_world(w)
