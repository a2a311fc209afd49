from __future__ import annotations

import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest

from cvg_testing import ensure_unpriv_user, identities, shared_dir


@pytest.fixture(params=identities())
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
    with shared_dir("cvg-test-", 0o777) as d:
        yield d


@pytest.fixture
def files(world_dir: Path) -> Path:
    """``world_dir`` with a file the tests grant (granted.txt) and one they do not
    (secret.txt), readable by every identity."""
    (world_dir / "granted.txt").write_text("granted\n")
    (world_dir / "secret.txt").write_text("secret\n")
    for f in world_dir.iterdir():
        f.chmod(0o644)
    return world_dir
