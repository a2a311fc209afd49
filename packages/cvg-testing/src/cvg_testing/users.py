"""The unprivileged test user, created on first use (which needs root)."""

from __future__ import annotations

import os
import pwd
import subprocess

import pytest

UNPRIV_USER = "cvgtest"


def identities() -> list[str]:
    """The identities an enforcement test runs as: root and the unprivileged user, or
    only "self" when not root."""
    return ["root", "unpriv"] if os.geteuid() == 0 else ["self"]


def ensure_unpriv_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(UNPRIV_USER)
    except KeyError:
        pass
    if os.geteuid() != 0:
        pytest.skip(f"needs root to create the unprivileged user {UNPRIV_USER}")
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
         UNPRIV_USER],
        check=True,
    )  # fmt: skip
    return pwd.getpwnam(UNPRIV_USER)


def drop_to(user: pwd.struct_passwd) -> None:
    """Become the user for good (in a forked child): groups first, then gid, then uid."""
    os.setgroups([])
    os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
    os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
