"""docs/mcp.md's section on resource limits for a long-lived server says what the
schema and the embedded default policy say."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from cvg_schema.policy import Resources

DOC = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"
DEFAULT_POLICY = (
    Path(__file__).resolve().parents[2] / "cvg-run" / "src" / "cvg_run" / "default_policy.yaml"
)


def _section() -> str:
    text = DOC.read_text()
    m = re.search(r"^### Resource limits for a long-lived server\n(.*?)^##", text, re.M | re.S)
    assert m is not None, "docs/mcp.md has no section on resource limits for a long-lived server"
    return " ".join(m.group(1).split())


def test_each_limit_is_explained_for_a_long_lived_server() -> None:
    section = _section()
    for key in ("wall_clock_seconds", "cpu_seconds", "memory_mb"):
        assert f"**`{key}`" in section, key
    assert "is a total, not a rate" in section


def test_the_numbers_are_the_schemas_and_the_default_policys() -> None:
    section = _section()
    wall = Resources.model_fields["wall_clock_seconds"]
    most = next(m.le for m in wall.metadata if getattr(m, "le", None) is not None)
    embedded = yaml.safe_load(DEFAULT_POLICY.read_text())["resources"]["wall_clock_seconds"]
    assert f"The default is {wall.default} seconds ({embedded} in the embedded" in section
    assert f"up to {most} (7 days)" in section
