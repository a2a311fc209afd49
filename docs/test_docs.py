"""The docs are true: docs/cli.md is what the tools' --help says, and every internal
link in the project's Markdown resolves (the file, and the #anchor in a Markdown file)."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

DOCS = Path(__file__).parent
ROOT = DOCS.parent

# Globbed at test time, so files being written elsewhere (THREAT_MODEL.md, docs/adr/,
# examples/) are checked the moment they exist and skipped while they do not.
PATTERNS = [
    "README.md",
    "THREAT_MODEL.md",
    "docs/**/*.md",
    "packages/*/README.md",
    "benchmarks/README.md",
    "escape/**/README.md",
    "examples/**/README.md",
]

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _load_gen_cli():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_cli"] = module
    spec.loader.exec_module(module)
    return module


def markdown_files() -> list[Path]:
    found: set[Path] = set()
    for pattern in PATTERNS:
        found.update(p for p in ROOT.glob(pattern) if p.is_file())
    return sorted(found)


def _prose_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) outside fenced code blocks, with inline code removed."""
    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, _INLINE_CODE.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in _prose_lines_with_code(path):
        out.update(_HTML_ID.findall(line))
        m = _HEADING.match(line)
        if m is None:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def _prose_lines_with_code(path: Path) -> Iterator[tuple[int, str]]:
    # Headings keep their inline code (`cvg-run` in a heading is part of its anchor).
    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def links(path: Path) -> Iterator[tuple[int, str]]:
    for n, line in _prose_lines(path):
        for m in _LINK.finditer(line):
            yield n, m.group(1)
        ref = _REF_DEF.match(line)
        if ref:
            yield n, ref.group(1)


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for n, target in links(path):
        if _EXTERNAL.match(target):
            continue
        file_part, _, fragment = target.partition("#")
        dest = path if not file_part else (path.parent / unquote(file_part)).resolve()
        where = f"{path.relative_to(root)}:{n}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
            continue
        checkable = fragment and dest.suffix == ".md" and dest.is_file()
        if checkable and unquote(fragment).lower() not in anchors(dest):
            problems.append(f"{where}: no heading #{fragment} in {dest.name}")
    return problems


def test_cli_md_matches_the_tools_help() -> None:
    gen_cli = _load_gen_cli()
    expected = gen_cli.render()
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == expected, "docs/cli.md is stale: run python docs/gen_cli.py"


def test_cli_md_covers_every_tool() -> None:
    gen_cli = _load_gen_cli()
    tools = {argv[0] for argv in gen_cli.COMMANDS}
    scripts: set[str] = set()
    for pyproject in (ROOT / "packages").glob("*/pyproject.toml"):
        section = re.search(r"\[project\.scripts\]\n((?:[^\[\n].*\n)*)", pyproject.read_text())
        if section:
            scripts.update(re.findall(r"^([\w-]+)\s*=", section.group(1), re.MULTILINE))
    assert scripts and scripts <= tools, f"not in docs/cli.md: {sorted(scripts - tools)}"


def test_every_internal_link_resolves() -> None:
    files = markdown_files()
    assert ROOT / "README.md" in files and DOCS / "policy.md" in files
    problems = [p for f in files for p in broken_links(f)]
    assert not problems, "broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see [a](missing.md) and [b](#nowhere)", 2),
        ("see [a](policy.md#filesystem) and [b](https://example.com/x)", 0),
        ("`[not](a-link.md)` and\n```\n[nor](this.md)\n```", 0),
    ],
)
def test_the_link_checker_finds_broken_links(tmp_path: Path, text: str, expected: int) -> None:
    # The checker itself can fail: a planted broken link is reported with its line.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "policy.md").write_text("# Policy\n\n## Filesystem\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(text + "\n", encoding="utf-8")
    problems = broken_links(page, root=tmp_path)
    assert len(problems) == expected, problems
    assert all(p.startswith("docs/page.md:1: ") for p in problems)
