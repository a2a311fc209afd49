from __future__ import annotations

import os
import pwd
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cvg_testing import ensure_unpriv_user


def _identities() -> list[str]:
    return ["root", "unpriv"] if os.geteuid() == 0 else ["self"]


@pytest.fixture(params=_identities())
def identity(request: pytest.FixtureRequest) -> pwd.struct_passwd | None:
    """Run each enforcement test as root and as an unprivileged user.

    Yields the user to drop to in the child, or None to stay as we are.
    """
    if request.param == "unpriv":
        return ensure_unpriv_user()
    return None


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A scratch directory any test identity can use (tmp_path is 0700 root)."""
    d = Path(tempfile.mkdtemp(prefix="cvg-test-"))
    d.chmod(0o777)
    try:
        yield d
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)
