"""The pipeline on eight real workloads, as a user runs it.

    cvg-observe -- CMD | cvg-generate | cvg-validate > p.yaml && cvg-run -p p.yaml -- CMD

For each workload the policy learned from the first input must give the same output
as the command run with no sandbox (the oracle), at this kernel's Landlock ABI and
under the ABI-4 cap; then the same policy must hold for a second input with other
file names in another subdirectory of the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import workloads as wl

from cvg_testing import ensure_unpriv_user, shared_dir

BY_NAME = {w.name: w for w in wl.WORKLOADS}
_LEARNED: dict[str, tuple[wl.Place, Path]] = {}


def test_the_workload_tools_are_installed() -> None:
    # Fails loudly rather than skipping: CI must install them (apt-get install ...).
    assert wl.missing_tools() == [], "install: " + ", ".join(wl.missing_tools())


def _learned(name: str, base: Path) -> tuple[wl.Place, Path]:
    if name not in _LEARNED:
        w = BY_NAME[name]
        place = wl.make_place(base, name)
        policy = place.root / "p.yaml"
        with wl.with_server(w):
            observed, _ = wl.learn(place, w, policy)
        assert observed.status == 0, observed.stderr
        _LEARNED[name] = (place, policy)
    return _LEARNED[name]


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    # Not under pytest's own temporary root (mode 0700): the unprivileged user works here.
    with shared_dir("cvg-generate-workloads-") as root:
        yield root


def _same(bare: wl.Outcome, boxed: wl.Outcome) -> None:
    assert bare.status == 0, f"the command fails with no sandbox: {bare.stderr}"
    assert (boxed.status, boxed.stdout, boxed.beside) == (bare.status, bare.stdout, bare.beside), (
        boxed.stderr
    )


@pytest.mark.parametrize("name", list(BY_NAME))
def test_policy_learned_from_one_input_runs_it_identically(name: str, base: Path) -> None:
    w = BY_NAME[name]
    place, policy = _learned(name, base)
    text = policy.read_text()
    assert "# e" in text  # the reasons came through cvg-validate as comments
    with wl.with_server(w):
        bare = wl.run(place, w, w.first, [])
        _same(bare, wl.run(place, w, w.first, wl.sandboxed(policy)))
        abi4 = wl.run(
            place,
            w,
            w.first,
            wl.sandboxed(policy, abi4=True),
            extra_env={"CVG_LANDLOCK_ABI_MAX": "4"},
        )
        _same(bare, abi4)


SECOND_INPUT_FAILS: dict[str, str] = {}
"""Workloads whose learned policy does not hold for the second input, and why (see the
README's generalization table)."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=SECOND_INPUT_FAILS[n], strict=True))
        if n in SECOND_INPUT_FAILS
        else n
        for n in BY_NAME
    ],
)
def test_policy_holds_for_a_second_input(name: str, base: Path) -> None:
    w = BY_NAME[name]
    place, policy = _learned(name, base)
    with wl.with_server(w):
        bare = wl.run(place, w, w.second, [])
        _same(bare, wl.run(place, w, w.second, wl.sandboxed(policy)))


EXACT_FAILS: dict[str, str] = {
    "gcc-make": "the program built in hello/ gets an execute grant there; the second "
    "input builds and runs tools/greet/greet",
}
"""With --no-workspace (the working directory's paths granted one by one), the
workloads whose policy does not hold for the second input: measured, see the README."""


@pytest.mark.parametrize("name", list(BY_NAME))
def test_without_the_workspace_rule(name: str, base: Path) -> None:
    w = BY_NAME[name]
    place, _ = _learned(name, base)
    exact = place.root / "exact.yaml"
    wl.generate(place, place.root / "obs.json", exact, "--no-workspace")
    assert "workspace" not in exact.read_text()  # no rule was widened to the workspace
    with wl.with_server(w):
        bare = wl.run(place, w, w.first, [])
        _same(bare, wl.run(place, w, w.first, wl.sandboxed(exact)))
        bare = wl.run(place, w, w.second, [])
        boxed = wl.run(place, w, w.second, wl.sandboxed(exact))
    held = (boxed.status, boxed.stdout, boxed.beside) == (bare.status, bare.stdout, bare.beside)
    assert held == (name not in EXACT_FAILS), (name, boxed.stderr)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_policy_holds_for_an_unprivileged_user(name: str, base: Path) -> None:
    # Learned as root; run by cvgtest, bare and under the policy (the first input).
    if os.geteuid() != 0:
        pytest.skip("needs root to create and become the unprivileged user")
    user = ensure_unpriv_user()
    w = BY_NAME[name]
    place, policy = _learned(name, base)
    with wl.with_server(w):
        bare = wl.run_as(user, place, w, w.first, None)
        _same(bare, wl.run_as(user, place, w, w.first, policy))
