"""The probe proves itself as an unprivileged user, not only as root."""

from __future__ import annotations

import json
import os
import pwd
from typing import Any

import pytest
from probe_expect import assert_feature

from cvg_kernel import cgroup
from cvg_probe import FEATURES, run_probes
from cvg_schema import Facts, dumps, loads_as
from cvg_testing import ensure_unpriv_user, in_child

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")


@pytest.fixture(scope="module")
def unpriv() -> tuple[pwd.struct_passwd, Facts, str | None]:
    user = ensure_unpriv_user()

    def body() -> Any:
        return {"facts": json.loads(dumps(run_probes())), "cgroup": cgroup.available()}

    child = in_child(body, user=user)
    assert child.error is None, child.error
    assert child.exitcode == 0
    facts = loads_as(Facts, json.dumps(child.value["facts"]))
    return user, facts, child.value["cgroup"]


@pytest.mark.parametrize("name", FEATURES)
def test_feature_as_unprivileged_user(
    unpriv: tuple[pwd.struct_passwd, Facts, str | None], name: str
) -> None:
    assert_feature(unpriv[1], name, group=unpriv[2])


def test_ran_as_that_user(unpriv: tuple[pwd.struct_passwd, Facts, str | None]) -> None:
    user, facts, _ = unpriv
    assert facts.euid == user.pw_uid


def test_unprivileged_specifics(unpriv: tuple[pwd.struct_passwd, Facts, str | None]) -> None:
    facts = unpriv[1]
    caps = facts.feature("caps.drop")
    assert caps is not None and caps.proven
    assert "held no capabilities" in caps.how
    nproc = facts.feature("rlimit.nproc")
    assert nproc is not None and nproc.proven
    assert "uid 0" not in nproc.how  # it bit directly, no uid switch needed
