"""Which policy a client may use: a name in the operator's directory, or inline text
when the operator allowed it.

The operator chooses the policies, not the agent. A name is looked up beneath
``--policies DIR`` only: an absolute name, a ``..`` component, or a name whose file
(after symlinks) lies outside DIR is refused, so a client cannot point the sandbox
at a policy of its own making by naming a file it wrote elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from typing import Final

MAX_POLICY_BYTES: Final = 1 << 20
EXTENSIONS: Final = ("", ".yaml", ".yml", ".json")
# A name is plain path text; anything else is either inline text or a mistake.
_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]{0,254}")
_INLINE_START: Final = re.compile(r"\s*(\{|version\s*:)")


class Refused(Exception):
    """The client asked for something the operator did not allow. One line."""


@dataclass(frozen=True)
class Chosen:
    """A policy the client may use: its file (None for inline text), its bytes, and
    a digest that changes whenever the bytes do."""

    name: str
    path: str | None
    data: bytes

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


def looks_inline(value: str) -> bool:
    """Policy text rather than a name: it spans lines, or it is a JSON object, or it
    starts like a policy (``version:``)."""
    return "\n" in value or _INLINE_START.match(value) is not None


class PolicyDir:
    """The operator's policies: ``DIR/NAME`` with an optional .yaml, .yml or .json."""

    def __init__(self, directory: str, *, allow_inline: bool = False) -> None:
        self.directory = os.path.realpath(directory)
        self.allow_inline = allow_inline

    def names(self) -> list[str]:
        """The policies a client can name, without extension, sorted."""
        out: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(self.directory):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for f in filenames:
                stem, ext = os.path.splitext(f)
                if ext not in EXTENSIONS[1:] or f.startswith("."):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, stem), self.directory)
                try:
                    self._resolve(rel)
                except Refused:
                    continue
                out.add(rel)
        return sorted(out)

    def choose(self, policy: str) -> Chosen:
        """The policy named (or, with inline allowed, given) by ``policy``."""
        if not isinstance(policy, str) or not policy.strip():
            raise Refused("policy: give the name of a policy in the operator's directory")
        if looks_inline(policy):
            if not self.allow_inline:
                raise Refused(
                    "policy: inline policy text is not allowed here: name one of the "
                    "operator's policies (the server runs without --allow-inline-policy)"
                )
            data = policy.encode("utf-8")
            if len(data) > MAX_POLICY_BYTES:
                raise Refused(f"policy: inline policy is larger than {MAX_POLICY_BYTES} bytes")
            return Chosen("<inline>", None, data)
        path = self._resolve(policy)
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_POLICY_BYTES + 1)
        except OSError as e:
            raise Refused(f"policy {policy!r}: cannot read: {e.strerror}") from None
        if len(data) > MAX_POLICY_BYTES:
            raise Refused(f"policy {policy!r}: larger than {MAX_POLICY_BYTES} bytes")
        return Chosen(policy, path, data)

    def _resolve(self, name: str) -> str:
        if os.path.isabs(name) or name.startswith("~"):
            raise Refused(f"policy {name!r}: absolute paths are refused: name a policy in DIR")
        parts = name.replace("\\", "/").split("/")
        if ".." in parts:
            raise Refused(f"policy {name!r}: '..' is refused: name a policy in DIR")
        if not _NAME.fullmatch(name) or "" in parts or "." in parts:
            raise Refused(
                f"policy {name!r}: not a policy name (letters, digits, '_', '-', '.', '/')"
            )
        for ext in EXTENSIONS:
            candidate = os.path.join(self.directory, name + ext)
            if not os.path.lexists(candidate):
                continue
            real = os.path.realpath(candidate)
            if os.path.commonpath([real, self.directory]) != self.directory:
                raise Refused(f"policy {name!r}: it leads outside the policy directory")
            try:
                st = os.stat(real)
            except OSError as e:
                raise Refused(f"policy {name!r}: cannot read: {e.strerror}") from None
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"policy {name!r}: not a regular file")
            return real
        raise Refused(f"policy {name!r}: unknown policy: use list_policies to see the names")
