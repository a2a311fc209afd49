"""The one list of secrets, its table in docs/secrets.md, and what reads it."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from cvg_policy.secrets import (
    CWD_SECRETS,
    HOME_SECRETS,
    SECRET_GROUPS,
    SECRET_TABLE,
    SYSTEM_SECRETS,
    secret_paths,
    secret_reason,
)

DOCS = Path(__file__).parents[3] / "docs"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_secrets", DOCS / "gen_secrets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_is_the_list() -> None:
    assert (DOCS / "secrets.md").read_text() == _generator().render(), (
        "docs/secrets.md is stale: run python docs/gen_secrets.py"
    )


def test_every_row_is_well_formed() -> None:
    places = [(row[1], row[2]) for row in SECRET_TABLE]
    assert len(places) == len(set(places))
    for group, where, path, what in SECRET_TABLE:
        assert group in SECRET_GROUPS and where in ("home", "cwd", "system") and what
        assert path.startswith("/") == (where == "system")
    assert len(HOME_SECRETS) + len(CWD_SECRETS) + len(SYSTEM_SECRETS) == len(SECRET_TABLE)


# What a tool was seen reading and sending out while learning, and the groups asked for.
WANTED = [
    ".config/Claude/claude_desktop_config.json",
    ".claude.json",
    ".cursor/mcp.json",
    ".config/Code/User/mcp.json",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    ".npmrc",
    ".pypirc",
    ".config/gh/hosts.yml",
    ".aws/credentials",
    ".config/gcloud/credentials.db",
    ".azure/msal_token_cache.json",
    ".password-store/github.gpg",
    ".local/share/keyrings/login.keyring",
    ".mozilla/firefox/x.default/logins.json",
    ".config/google-chrome/Default/Cookies",
]


@pytest.mark.parametrize("name", WANTED)
def test_the_list_covers(name: str, tmp_path: Path) -> None:
    """Each is judged a secret by pattern (cvg-generate, cvg-import) and found on disk
    (the learning sandbox, the default policy)."""
    home = tmp_path / "home"
    path = home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("token")
    assert secret_reason(str(path)) is not None
    found = secret_paths(str(tmp_path), str(home), euid=0)
    assert any(str(path) == f or str(path).startswith(f + os.sep) for f in found), found


def test_a_projects_mcp_config_is_never_granted_but_not_denied(tmp_path: Path) -> None:
    """Named like a secret (cvg-generate, cvg-import), but not on the list the learning
    sandbox denies: that would split the working directory's grant (docs/secrets.md)."""
    for name in (".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("{}")
        assert secret_reason(str(path)) is not None
        assert str(path) not in secret_paths(str(tmp_path), None, euid=0)
