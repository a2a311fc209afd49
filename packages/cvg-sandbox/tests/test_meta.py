"""The cvg-sandbox distribution depends on every sibling that ships a command, in the
range the siblings use for each other, and on nothing else."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import distribution, requires
from pathlib import Path
from typing import Any

import cvg_sandbox

PACKAGES = Path(__file__).resolve().parents[2]
SIBLING_RANGE = ">=0.1,<0.2"


def _project(dist: str) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((PACKAGES / dist / "pyproject.toml").read_text())[
        "project"
    ]
    return project


def _shipping() -> set[str]:
    """Every distribution of the workspace that ships a command, and what they need."""
    found = set()
    for pyproject in PACKAGES.glob("*/pyproject.toml"):
        project = _project(pyproject.parent.name)
        if project.get("scripts"):
            found.add(project["name"])
            for req in project.get("dependencies", []):
                name = re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0]
                if name.startswith("cvg-"):
                    found.add(name)
    return found


def _split(req: str) -> tuple[str, str]:
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", req.split(";")[0].strip())
    assert m, req
    return m[1], m[2].replace(" ", "")


def test_depends_on_every_shipping_sibling_in_the_sibling_range() -> None:
    deps = dict(_split(r) for r in _project("cvg-sandbox")["dependencies"])
    assert set(deps) == _shipping()
    assert "cvg-testing" not in deps
    assert set(deps.values()) == {SIBLING_RANGE}


def test_the_range_is_the_one_siblings_use_for_each_other() -> None:
    for name in _shipping():
        for req in _project(name).get("dependencies", []):
            dep, spec = _split(req)
            if dep.startswith("cvg-"):
                assert spec == SIBLING_RANGE, f"{name} wants {dep}{spec}"


def test_the_version_is_the_distributions_and_the_siblings_series() -> None:
    version = _project("cvg-sandbox")["version"]
    assert cvg_sandbox.__version__ == distribution("cvg-sandbox").version == version
    for name in _shipping():
        assert _project(name)["version"].startswith("0.1."), name


def test_the_installed_metadata_requires_them_all() -> None:
    installed = {_split(r)[0] for r in requires("cvg-sandbox") or []}
    assert installed == _shipping()
    for name in installed:  # each is installed alongside, at a version in range
        assert distribution(name).version.startswith("0.1."), name
