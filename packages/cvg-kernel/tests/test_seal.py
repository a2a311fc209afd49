"""The per-user key and the MAC: made with the modes it is checked for, refused when
another user could read or replace it, and a MAC that is HMAC-SHA256."""

from __future__ import annotations

import hmac
import json
import os
import pwd
from pathlib import Path

import pytest

from cvg_kernel import seal
from cvg_testing import in_child

Identity = pwd.struct_passwd | None


def _env(d: Path) -> dict[str, str]:
    return {"HOME": str(d / "home"), "XDG_STATE_HOME": str(d / "state")}


def _load(identity: Identity, d: Path, *, create: bool) -> str:
    """load_key in a child as ``identity``: the key's hex, or the SealError's line."""

    def child() -> str:
        seal._loaded.clear()  # what the parent loaded, inherited by the fork
        try:
            return seal.load_key(create=create, environ=_env(d)).hex()
        except seal.SealError as e:
            return f"error: {e}"

    ran = in_child(child, user=identity)
    assert ran.error is None and isinstance(ran.value, str), ran.error
    return ran.value


def test_the_mac_is_hmac_sha256() -> None:
    for key in (b"", b"k" * 32, b"x" * 64, b"y" * 100):
        for data in (b"", b"a record", os.urandom(5000)):
            assert seal.mac(key, data) == hmac.digest(key, data, "sha256")


def test_own_dirs_follow_xdg_and_ignore_relative_values() -> None:
    env = {"HOME": "/h", "XDG_CACHE_HOME": "/c", "XDG_STATE_HOME": "rel"}
    assert seal.own_dirs(env) == ("/h/.config/cvg", "/c/cvg", "/h/.local/state/cvg")


def test_a_key_is_made_once_with_private_modes(identity: Identity, world_dir: Path) -> None:
    first = _load(identity, world_dir, create=True)
    assert len(bytes.fromhex(first)) == seal.KEY_BYTES
    assert _load(identity, world_dir, create=True) == first
    assert _load(identity, world_dir, create=False) == first
    path = Path(seal.key_path(_env(world_dir)))
    uid = os.geteuid() if identity is None else identity.pw_uid
    assert (path.stat().st_mode & 0o777, path.stat().st_uid) == (0o600, uid)
    assert (path.parent.stat().st_mode & 0o777, path.parent.stat().st_uid) == (0o700, uid)
    assert sorted(os.listdir(path.parent)) == ["seal"]


def test_no_key_is_an_error_only_to_a_reader(identity: Identity, world_dir: Path) -> None:
    assert _load(identity, world_dir, create=False).startswith("error: ")
    assert not (world_dir / "state" / "cvg").exists()


@pytest.mark.parametrize(
    ("what", "mode", "said"),
    [
        ("file", 0o640, "nobody else can read or write"),
        ("file", 0o604, "nobody else can read or write"),
        ("dir", 0o770, "writable by nobody else"),
        ("dir", 0o702, "writable by nobody else"),
    ],
)
def test_a_key_others_can_reach_is_not_used(
    identity: Identity, world_dir: Path, what: str, mode: int, said: str
) -> None:
    _load(identity, world_dir, create=True)
    path = Path(seal.key_path(_env(world_dir)))
    (path if what == "file" else path.parent).chmod(mode)
    got = _load(identity, world_dir, create=True)
    assert got.startswith("error: ") and said in got, got
    assert str(path if what == "file" else path.parent) in got


def test_a_key_of_another_user_is_not_used(world_dir: Path) -> None:
    """A key and directory of another user (here: the unprivileged user's, with the right
    modes, which root can read) are refused by this user's cvg."""
    if os.geteuid() != 0:
        pytest.skip("needs root to read a file of another user")
    from cvg_testing import ensure_unpriv_user

    user = ensure_unpriv_user()
    key = _load(user, world_dir, create=True)
    assert len(key) == 2 * seal.KEY_BYTES
    got = _load(None, world_dir, create=False)
    assert got.startswith("error: ") and "owned by uid 0" in got, got
    path = Path(seal.key_path(_env(world_dir)))
    os.chown(path.parent, 0, 0)  # the directory root's own: still not root's key file
    got = _load(None, world_dir, create=False)
    assert got.startswith("error: ") and str(path) in got and "owned by uid 0" in got, got


def test_a_sealed_record_checks_byte_for_byte() -> None:
    key, other = os.urandom(32), os.urandom(32)
    line = json.dumps({"kind": "cvg.run", "exit": {"status": 3}}, separators=(",", ":")) + "\n"
    sealed = seal.seal_record(key, line.encode())
    assert json.loads(sealed)["seal"].startswith("hmac-sha256:")
    assert seal.unseal_record(key, sealed)
    assert seal.unseal_record(key, sealed.rstrip(b"\n"))
    assert not seal.unseal_record(other, sealed)
    assert not seal.unseal_record(key, sealed.replace(b'"status":3', b'"status":0'))
    assert not seal.unseal_record(key, line.encode())  # no seal at all
    pretty = json.dumps(json.loads(sealed), indent=1).encode()
    assert not seal.unseal_record(key, pretty)
    for cut in (2, 10, len(sealed) // 2):
        assert not seal.unseal_record(key, sealed[:-cut])
