"""What counts as a secret for cvg-generate and cvg-import (pattern view)."""

from __future__ import annotations

import fnmatch
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cvg_policy.secrets import _ANY_SECRET_NAME, SECRET_NAMES, secret_reason


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


@pytest.mark.parametrize(
    "path",
    [
        "/home/alice/.aws/config",
        "/home/alice/.kube/config",
        "/tmp/divergence-overlay-abc/home/.aws/config",
        "${HOME}/.config/divergence-token/x",
        "/var/lib/secrets/db.txt",
        "/etc/divergence-token",
        "/srv/app/.ssh",
    ],
)
def test_secrets_are_recognised_without_knowing_home(path: str) -> None:
    assert secret_reason(path) is not None


@pytest.mark.parametrize(
    "path",
    [
        # Public files whose names hold a secret word.
        "/etc/passwd",
        "/etc/pam.d/common-password",
        "/usr/share/doc/libsecret-1-0/copyright",
        "/usr/lib/x86_64-linux-gnu/libsecret-1.so.0",
        # Project directories that mention one.
        "/home/u/src/secret-santa/main.py",
        "/tmp/pytest-of-root/pytest-1/test_never_grants_secrets0/out.txt",
        "/home/u/work/token-bucket/README.md",
        # Certificate stores: public.
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/ssl/certs/ISRG_Root_X1.pem",
        "/home/u/.venv/lib/python3.11/site-packages/certifi/cacert.pem",
        "/usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt",
    ],
)
def test_a_secret_word_alone_does_not_make_a_secret(path: str) -> None:
    assert secret_reason(path) is None


def test_a_pem_outside_the_certificate_stores_is_a_secret() -> None:
    assert secret_reason("/srv/app/tls/server.pem") is not None
    assert secret_reason("/etc/ssl/private/ssl-cert-snakeoil.key") is not None


# Letters, glob characters, and each pattern's literal text, so every pattern is hit.
_NAME_CHARS = st.sampled_from(
    [*string.ascii_lowercase, *"_.-*[]?!0123456789", *(p.replace("*", "") for p in SECRET_NAMES)]
)


@given(st.lists(_NAME_CHARS, max_size=12).map("".join))
@settings(max_examples=2000, deadline=None)
def test_one_pattern_for_secret_names_matches_as_each_does(name: str) -> None:
    """The combined pattern says a name is a secret exactly when one of SECRET_NAMES,
    matched alone, does."""
    alone = [p for p in SECRET_NAMES if fnmatch.fnmatchcase(name, p)]
    assert bool(_ANY_SECRET_NAME(name)) == bool(alone)


@pytest.mark.parametrize(
    "name", ["id_rsa", "ID_RSA.pub", "server.pem", "x.key", ".env", ".env.local", "db.p12"]
)
def test_a_secret_name_is_reported_with_the_first_pattern_it_matches(name: str) -> None:
    first = next(p for p in SECRET_NAMES if fnmatch.fnmatchcase(name.lower(), p))
    assert secret_reason(f"/srv/{name}") == f"{name!r} is named like a secret ({first})"
