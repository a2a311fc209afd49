"""Fixtures for cvg-run's tests: identities, a world-writable box per test."""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import cvg_testing

sys.path.insert(0, str(Path(__file__).parent))

if os.geteuid() == 0:
    # Children drop to the unprivileged user and then import (the traced launcher
    # re-imports cvg_run and cvg_kernel from where this process found them): from a
    # clone that user cannot enter, every cvg module must come from a staged copy.
    _staged = cvg_testing.import_path_for(cvg_testing.ensure_unpriv_user())
    if _staged is not None:
        sys.path.insert(0, _staged)

import runhelp

IS_ROOT = os.geteuid() == 0


def _identities() -> list[str]:
    return ["root", "unpriv"] if IS_ROOT else ["self"]


@pytest.fixture(scope="session", autouse=True)
def _warm() -> None:
    runhelp.warm_up()


@pytest.fixture(autouse=True)
def _no_abi_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing the caller exported changes what this kernel is taken to offer."""
    monkeypatch.delenv(runhelp.ABI_ENV, raising=False)


@pytest.fixture(params=_identities())
def identity(request: pytest.FixtureRequest) -> pwd.struct_passwd | None:
    """Each test as root and as an unprivileged user: the user to drop to in the
    child, or None to stay as we are."""
    if request.param == "unpriv":
        return cvg_testing.ensure_unpriv_user()
    return None


@pytest.fixture
def as_root() -> None:
    if not IS_ROOT:
        pytest.skip("needs root")


@pytest.fixture
def box() -> Iterator[runhelp.Box]:
    b = runhelp.make_box()
    try:
        yield b
    finally:
        shutil.rmtree(b.root, ignore_errors=True)
