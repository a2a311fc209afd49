"""Each package declares what its code imports, and imports what it declares.

Walks every package's src (and tests) with ast, maps each top-level import to the
distribution that provides it in this environment (the standard library is
sys.stdlib_module_names), and compares with pyproject.toml. A workspace package run
as a program counts as used: the string "cvg_kernel" passed to `python -m`, or a
console script name such as "cvg-run". An import inside `try: ... except ImportError`
is optional and need not be declared. And no package imports another's private
modules or names (``cvg_kernel._libc``, ``from cvg_run.api import _pump``). Run by
`uv run nox -s deps`.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parent.parent / "packages"
DISTS = sorted(p.name for p in PACKAGES.iterdir() if (p / "pyproject.toml").exists())
MODULE_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    return norm(re.split(r"[\s<>=!~;\[@]", req.strip(), maxsplit=1)[0])


def meta(dist: str) -> dict:
    return tomllib.loads((PACKAGES / dist / "pyproject.toml").read_text())


def workspace() -> tuple[dict[str, str], dict[str, str]]:
    """Module name -> dist, and console script -> dist, for the workspace."""
    modules, scripts = {}, {}
    for dist in DISTS:
        modules[dist.replace("-", "_")] = dist
        for script in meta(dist)["project"].get("scripts", {}):
            scripts[script] = dist
    return modules, scripts


def _optional(tree: ast.AST) -> set[int]:
    """ids of import nodes guarded by `except ImportError` / ModuleNotFoundError."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        names = set()
        for h in node.handlers:
            for t in h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]:
                if isinstance(t, ast.Name):
                    names.add(t.id)
        if names & {"ImportError", "ModuleNotFoundError"}:
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return guarded


def uses(root: Path) -> tuple[set[str], set[str], set[str]]:
    """Top-level modules imported under root (required, then optional), and every
    string constant (some name a module run with -m or a program)."""
    imported: set[str] = set()
    maybe: set[str] = set()
    strings: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        optional = _optional(tree)
        for node in ast.walk(tree):
            into = maybe if id(node) in optional else imported
            if isinstance(node, ast.Import):
                into |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                into.add(node.module.split(".")[0])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    return imported - stdlib, maybe - stdlib - imported, strings


def dists_of(modules: set[str], local: set[str]) -> tuple[set[str], set[str]]:
    """The distributions providing `modules`, and the modules nothing provides."""
    # Editable installs of the workspace list no top-level modules: name them here.
    provided = {**packages_distributions(), **{m: [d] for m, d in workspace()[0].items()}}
    found, unknown = set(), set()
    for mod in modules - local:
        if mod in provided:
            found |= {norm(d) for d in provided[mod]}
        else:
            unknown.add(mod)
    return found, unknown


def run_as_program(strings: set[str]) -> set[str]:
    modules, scripts = workspace()
    used = {scripts[s] for s in strings if s in scripts}
    used |= {modules[s.split(".")[0]] for s in strings
             if MODULE_NAME.match(s) and s.split(".")[0] in modules}  # fmt: skip
    return used


# Distributions that only gather others, import nothing and ship no code of their own
# (packages/cvg-sandbox/tests checks what it depends on).
META = {"cvg-sandbox"}


@pytest.mark.parametrize("dist", DISTS)
def test_src_imports_match_declared_dependencies(dist: str) -> None:
    project = meta(dist)["project"]
    if dist in META:
        imported, _, strings = uses(PACKAGES / dist / "src")
        assert not imported and not run_as_program(strings), f"{dist} holds code"
        assert all(requirement_name(r).startswith("cvg-") for r in project["dependencies"])
        return
    declared = {requirement_name(r) for r in project.get("dependencies", [])}
    own = dist.replace("-", "_")
    imported, optional, strings = uses(PACKAGES / dist / "src")
    needed, unknown = dists_of(imported, {own})
    maybe, _ = dists_of(optional, {own})
    assert not unknown, f"{dist} imports modules no installed distribution provides: {unknown}"
    undeclared = needed - declared - {dist}
    assert not undeclared, f"{dist} imports {sorted(undeclared)} without declaring them"
    unused = declared - needed - maybe - run_as_program(strings)
    assert not unused, f"{dist} declares {sorted(unused)} and never imports or runs them"


@pytest.mark.parametrize("dist", DISTS)
def test_test_imports_are_in_the_test_group(dist: str) -> None:
    """`nox -s tests` installs only a package's dependencies and its test group."""
    data = meta(dist)
    declared = {requirement_name(r) for r in data["project"].get("dependencies", [])}
    group = data.get("dependency-groups", {}).get("test", [])
    declared |= {requirement_name(r) for r in group if isinstance(r, str)}
    tests = PACKAGES / dist / "tests"
    if not tests.is_dir():
        pytest.fail(f"{dist} has no tests directory")
    local = {p.stem for p in tests.rglob("*.py")} | {dist.replace("-", "_")}
    imported, _, _ = uses(tests)
    needed, unknown = dists_of(imported, local)
    assert not unknown, f"{dist}'s tests import modules nothing provides: {unknown}"
    missing = needed - declared - {norm(dist)}
    assert not missing, f"{dist}'s tests import {sorted(missing)}: add them to its test group"


# ---- distributions meet only through public APIs: none imports another's private names.

TOP = {d.replace("-", "_"): d for d in DISTS}


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def violations(source: str, own: str) -> list[str]:
    """Private names of other distributions that ``source`` (of package ``own``) imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.Import):
            modules = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [(node.module, [alias.name for alias in node.names])]
        for module, names in modules:
            parts = module.split(".")
            if parts[0] not in TOP or parts[0] == own:
                continue
            bad = [p for p in parts[1:] if _private(p)] + [n for n in names if _private(n)]
            if bad:
                found.append(f"line {node.lineno}: {module} ({', '.join(bad)})")
    return found


@pytest.mark.parametrize("dist", DISTS)
def test_no_private_imports_across_distributions(dist: str) -> None:
    own = dist.replace("-", "_")
    problems = []
    for path in sorted((PACKAGES / dist / "src").rglob("*.py")):
        for v in violations(path.read_text(), own):
            problems.append(f"{path.relative_to(PACKAGES)} {v}")
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_private_import() -> None:
    planted = "from cvg_kernel._libc import machine\nfrom cvg_run.api import _pump\n"
    assert len(violations(planted, "cvg_policy")) == 2
    assert violations(planted, "cvg_kernel") == ["line 2: cvg_run.api (_pump)"]
    assert violations("from cvg_kernel import __version__\n", "cvg_run") == []


def test_the_layout_table_draws_the_dependency_graph_as_declared() -> None:
    """docs/development.md's Layout table: each distribution's workspace dependencies,
    as declared."""
    layout = (PACKAGES.parent / "docs" / "development.md").read_text()
    rows = {}
    for line in layout.splitlines():
        m = re.fullmatch(r"\| `(cvg(?:-[a-z]+)?)` \| ([^|]*) \| [^|]* \|", line)
        if m:
            rows[m[1]] = set(re.findall(r"`(cvg-[a-z]+)`", m[2]))
    for dist in DISTS:
        if dist == "cvg-testing":
            continue
        declared = {
            requirement_name(r)
            for r in meta(dist)["project"].get("dependencies", [])
            if requirement_name(r).startswith("cvg-")
        }
        assert rows.get(dist) == declared, (
            f"docs/development.md's Layout row for {dist}: {rows.get(dist)}"
        )
