"""Shared fixtures for cvg-policy's compile, expand and explain tests.

Enforcement is proven on the real kernel in a forked child (confinement can never be
undone, so never in the test process). The pytest python lives under /root (mode
0700): a child that drops to the unprivileged user must already have imported
everything it needs, so the child only makes syscalls. The fork helpers come from
cvg_testing; test modules get them through the ``forkrun`` fixture.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from clihelp import Invoke, PolicyFile, Result, invoke

from cvg_kernel.landlock import FS_RIGHTS, NET_RIGHTS, SCOPES
from cvg_schema import Facts, Policy, load_policy_dict
from cvg_testing import attempt_name, ensure_unpriv_user, identities, in_child, shared_dir


def read_file(path: str) -> Callable[[], bytes]:
    def read() -> bytes:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 4096)
        finally:
            os.close(fd)

    return read


@pytest.fixture
def forkrun() -> SimpleNamespace:
    """The fork helpers: ``in_child``, ``attempt``, ``read_file``."""
    return SimpleNamespace(in_child=in_child, attempt=attempt_name, read_file=read_file)


@pytest.fixture(params=identities())
def identity(request: pytest.FixtureRequest) -> pwd.struct_passwd | None:
    """Run an enforcement test as root and as an unprivileged user (None: stay as is)."""
    if request.param == "unpriv":
        return ensure_unpriv_user()
    return None


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A scratch directory any test identity can use (tmp_path is 0700 root)."""
    with shared_dir("cvg-policy-test-") as d:
        yield d


def make_policy(**sections: Any) -> Policy:
    return load_policy_dict({"version": 1, **sections})


ALL_FEATURES: tuple[str, ...] = (
    *(f"landlock.fs.{r}" for r in FS_RIGHTS),
    *(f"landlock.net.{r}" for r in NET_RIGHTS),
    *(f"landlock.scope.{s}" for s in SCOPES),
    "seccomp.filter",
    "rlimit.cpu",
    "rlimit.as",
    "rlimit.data",
    "rlimit.fsize",
    "rlimit.nofile",
    "rlimit.nproc",
)


def needs_abi(feature: str) -> int:
    """The Landlock ABI that brought ``feature`` (0: not a Landlock feature)."""
    kind, _, right = feature.partition(".")
    if kind != "landlock":
        return 0
    table, _, name = right.partition(".")
    return {"fs": FS_RIGHTS, "net": NET_RIGHTS, "scope": SCOPES}[table][name].abi


def make_facts(
    abi: int,
    *,
    unproven: tuple[str, ...] = (),
    absent: tuple[str, ...] = (),
    cap: int | None = None,
    arch: str = "x86_64",
    euid: int | None = 1000,
) -> Facts:
    """Facts for Landlock ABI ``abi``: every feature that ABI has is proven, except
    ``unproven`` (listed, failed) and ``absent`` (not listed at all)."""
    features = []
    for name in ALL_FEATURES:
        if name in absent:
            continue
        proven = needs_abi(name) <= abi and name not in unproven
        feature: dict[str, Any] = {"name": name, "proven": proven, "how": "test"}
        if not proven:
            feature["error"] = "not available in this test"
        features.append(feature)
    return Facts.model_validate(
        {
            "kind": "cvg.facts",
            "kernel": "6.8.0-test",
            "arch": arch,
            "landlock_abi": abi,
            "landlock_abi_cap": cap,
            "euid": euid,
            "features": features,
            "probed_at": datetime(2025, 1, 1, tzinfo=UTC),
        }
    )


@pytest.fixture
def policy_factory() -> Callable[..., Policy]:
    return make_policy


@pytest.fixture
def facts_factory() -> Callable[..., Facts]:
    return make_facts


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """cvg-validate's main() in-process: ``cli(args, stdin=None)`` gives a Result."""

    def call(args: list[str], stdin: bytes | None = None) -> Result:
        return invoke(capsys, monkeypatch, args, stdin)

    return call


@pytest.fixture
def policy_file(tmp_path: Path) -> PolicyFile:
    """``policy_file(text)``: the path of p.yaml in tmp_path, holding ``text``."""

    def write(text: str) -> Path:
        path = tmp_path / "p.yaml"
        path.write_text(text)
        return path

    return write
