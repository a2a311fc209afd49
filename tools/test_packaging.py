"""Every distribution is ready to publish: the repository's license (its own copy of
the root LICENSE, which hatchling puts in the wheel), a readme, requires-python,
classifiers that say where it runs, and a man page for each command it ships
(docs/gen_man.py), installed under share/man/man1. Run by `uv run nox -s deps`; `nox -s build`
checks the built wheels carry the license."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"
DISTS = sorted(p.name for p in PACKAGES.iterdir() if (p / "pyproject.toml").exists())
REQUIRED_CLASSIFIERS = {
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.11",
}


def _project(dist: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((PACKAGES / dist / "pyproject.toml").read_text())
    return data


@pytest.mark.parametrize("dist", DISTS)
def test_metadata_is_complete(dist: str) -> None:
    data = _project(dist)
    project = data["project"]
    assert project["name"] == dist
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (PACKAGES / dist / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes(), (
        f"packages/{dist}/LICENSE differs from the root LICENSE"
    )
    assert project["readme"] == "README.md" and (PACKAGES / dist / "README.md").is_file()
    assert project["requires-python"] == ">=3.11"
    assert project["description"].strip()
    classifiers = set(project["classifiers"])
    assert classifiers >= REQUIRED_CLASSIFIERS, REQUIRED_CLASSIFIERS - classifiers
    assert not any(c.startswith("License ::") for c in classifiers), "PEP 639: the expression"
    typed = any((PACKAGES / dist / "src").glob("*/py.typed"))
    assert ("Typing :: Typed" in classifiers) == typed
    assert data["build-system"]["requires"] == ["hatchling>=1.27"]  # license-files
    scripts = project.get("scripts", {})
    pages = {p.stem for p in (PACKAGES / dist / "man").glob("*.1")}
    assert pages == set(scripts), f"man pages {pages} for commands {set(scripts)}"
    if scripts:
        shared = data["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
        assert shared == {"man": "share/man/man1"}


def test_the_root_license_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in text
