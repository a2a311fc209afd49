"""What counts as a secret for cvg-generate and cvg-import (pattern view)."""

from __future__ import annotations

import pytest

from cvg_policy.secrets import secret_reason


@pytest.mark.parametrize(
    "path",
    [
        "/home/u/.ssh/id_rsa",
        "/home/u/.ssh",
        "${HOME}/.aws/credentials",
        "/home/u/.config/gh/hosts.yml",
        "/etc/shadow",
        "/etc/ssh/ssh_host_ed25519_key",
        "/etc/ssl/private/server.key",
        "/srv/app/.env",
        "/srv/app/.env.production",
        "/tmp/divergence-overlay-x/home/.config/divergence-token",
        "/srv/app/certs/client.pem",
        "/srv/app/api_token.txt",
        "/srv/app/deploy/id_ed25519",
    ],
)
def test_secrets_are_recognised(path: str) -> None:
    assert secret_reason(path, "/home/u") is not None


@pytest.mark.parametrize(
    "path",
    [
        "/usr/lib/python3.11/tokenize.py",
        "/usr/lib/python3.11/secrets.py",
        "/home/u/.pyenv/versions/3.11.7/lib/python3.11/token.py",
        "/etc/passwd",
        "/usr/share/doc/passwd/copyright",
        "/home/u/project/src/main.c",
        "/home/u/.ssh-notes.txt",
        "/home/u/.bashrc",
    ],
)
def test_ordinary_files_are_not_secrets(path: str) -> None:
    assert secret_reason(path, "/home/u") is None
