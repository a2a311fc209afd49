"""The docs are true: docs/cli.md is what the tools' --help says, every internal link
in the project's Markdown resolves (the file, and the #anchor in a Markdown file), every
repository path the docs and code comments name exists, and nothing names a file
outside the repository."""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import re
import sys
import tokenize
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
    for n, line in _prose_lines_with_code(path):
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
    """(line number, text) outside fenced code blocks."""
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


# ----------------------------------------------------- paths named in text, and no outside files

# The repository stands on its own: its docs and code comments name files in the tree, and
# none outside it. A path counts as a repository path when it starts at one of the tree's
# top-level folders (docs/policy.md, packages/cvg-run/..., escape/run.py): a path that
# starts with / (/usr/bin), ~, $, a URL, or a placeholder (<kind>, {name}, ${CWD}) does not.
TOP_DIRS = ("benchmarks", "docs", "escape", "examples", "packages", "tools")
_REPO_PATH = re.compile(r"(?<![\w./~$@:%-])((?:" + "|".join(TOP_DIRS) + r")/[\w.*\-/]*)(?![\w<{$])")
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])[A-Z](?![A-Za-z])")
_CAPS = re.compile(r"[A-Z][A-Z0-9_]*")
# Spelled in pieces so this file does not name them itself.
_NOTES = "KERNEL" + "-NOTES"
_OUTSIDE = re.compile(r"\b(?:DESIGN\.md|" + _NOTES + r")\b|\.\./shared\b")
_SKIP_DIRS = {".git", ".venv", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache",
              ".hypothesis", "__pycache__", "node_modules", ".servers"}  # fmt: skip
# Generated from results.json by escape/run.py, rewritten by the next matrix run.
_GENERATED = ("escape/results/",)
_TEXT_SUFFIXES = {".md", ".py", ".toml", ".yaml", ".yml", ".json", ".txt", ".cfg", ".sh"}


def tree_files(root: Path = ROOT, suffixes: set[str] = _TEXT_SUFFIXES) -> list[Path]:
    """The project's own text files: no virtual environments, caches or generated results."""
    out = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = Path(here).relative_to(root).as_posix() + "/"
        if rel.startswith(_GENERATED):
            dirs[:] = []
            continue
        out.extend(Path(here) / f for f in sorted(files) if Path(f).suffix in suffixes)
    return out


def python_prose(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python source."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                for i, line in enumerate(first.value.value.splitlines()):
                    yield first.lineno + i, line


def named_paths(path: Path, root: Path = ROOT) -> Iterator[tuple[int, str]]:
    """(line, path) for each repository path a Markdown file or a Python file's comments
    and docstrings name."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if not _REPO_PATH.search(text):
        return
    lines = python_prose(text) if path.suffix == ".py" else enumerate(text.splitlines(), 1)
    for n, line in lines:
        for m in _REPO_PATH.finditer(line):
            yield n, m.group(1).rstrip(".")


def _checkable(named: str) -> bool:
    """A file (its last part has a suffix) or a path two folders deep, with no
    placeholder part (X.Y, NAME): ``tools/greet/`` in an example stays an example."""
    parts = [p for p in named.split("/") if p]
    if any(_PLACEHOLDER.search(p) or _CAPS.fullmatch(p) for p in parts):
        return False
    return "." in parts[-1].lstrip(".") or len(parts) >= 3


def missing_paths(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for n, named in named_paths(path, root):
        if not _checkable(named):
            continue
        found = any(root.glob(named.rstrip("/"))) if "*" in named else (root / named).exists()
        if not found:
            problems.append(f"{path.relative_to(root)}:{n}: {named}: no such path in the tree")
    return problems


def outside_references(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [
        f"{path.relative_to(root)}:{n}: names {m.group(0)}, a file outside the repository"
        for n, line in enumerate(text.splitlines(), 1)
        for m in _OUTSIDE.finditer(line)
    ]


def test_every_path_named_in_docs_and_comments_exists() -> None:
    files = tree_files(suffixes={".md", ".py"})
    assert ROOT / "docs" / "design.md" in files and ROOT / "noxfile.py" in files
    problems = [p for f in files for p in missing_paths(f)]
    assert not problems, "paths that do not exist:\n" + "\n".join(problems)


def test_no_text_names_a_file_outside_the_repository() -> None:
    problems = [p for f in tree_files() for p in outside_references(f)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("page.md", "see docs/missing.md and packages/cvg-x/src/x.py\n", 2),
        ("page.md", "see docs/policy.md, escape/ and escape/attacks/*.py.\n", 0),
        ("page.md", "run /usr/bin/python3 on ~/docs/x.md, https://h/docs/x.md, ../docs/y.md\n", 0),
        ("page.md", "write packages/<dist>/README.md or docs/${NAME}.md\n", 0),
        ("mod.py", '"""Pinned in docs/gone.md."""\n# and tools/gone.py\nX = "docs/nope.md"\n', 2),
    ],
)
def test_the_path_checker_finds_missing_paths(
    tmp_path: Path, name: str, text: str, expected: int
) -> None:
    # A planted reference to a file that is not there is reported with its line; a real
    # one, a system path, a URL, a relative link and a placeholder are not.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "policy.md").write_text("# Policy\n")
    (tmp_path / "escape" / "attacks").mkdir(parents=True)
    (tmp_path / "escape" / "attacks" / "fs.py").write_text("")
    page = tmp_path / name
    page.write_text(text, encoding="utf-8")
    problems = missing_paths(page, root=tmp_path)
    assert len(problems) == expected, problems
    assert all(p.startswith(f"{name}:") for p in problems)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("as " + "DESIGN" + ".md says", 1),
        (_NOTES + " section 4; " + _NOTES + ".md", 2),
        ("from " + ".." + "/shared/fixtures", 1),
        ("see docs/design.md and docs/kernel-notes.md", 0),
    ],
)
def test_the_outside_reference_checker(tmp_path: Path, text: str, expected: int) -> None:
    page = tmp_path / "page.md"
    page.write_text(text + "\n", encoding="utf-8")
    assert len(outside_references(page, root=tmp_path)) == expected
