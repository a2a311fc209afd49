"""Sibling programs of an installed package: one run uses some, another input others.

A tool that ran ``sort`` from coreutils runs ``sha256sum`` on another input; a build
that ran ``as`` from binutils archives with ``ar`` on the next. The package manager
knows which programs ship together: dpkg lists each package's files in
``/var/lib/dpkg/info/<package>.list``. An executed file that belongs to a package
widens to that package's other programs (regular executable files in a ``bin``,
``sbin`` or ``libexec`` directory of the package, and executable ELF programs
elsewhere in it that are not shared libraries: GCC keeps ``collect2`` and ``lto1``
beside ``cc1`` in ``/usr/lib/gcc/<triplet>/<version>``, and a driver that only
compiled on one input links on the next), citing the package.

Never for a package that ships a setuid or setgid file (a program that runs with
other privileges is granted only when it was seen to run) or a shell (listed in
``/etc/shells``: one shell runs anything), checked on disk, and never a file that is a
secret by name. A sibling that serves another purpose than the program seen is left
out (:data:`OTHER_PURPOSE`): a package manager beside its runtime (``npm``, ``npx``,
``corepack`` and ``node-gyp`` in Debian's nodejs), a daemon, a restricted shell or a
network helper beside a client (``git-daemon``, ``git-shell``, ``git-http-backend``,
``git-imap-send``, ``scalar`` in git). Such a program is granted only when it was run.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Final

from cvg_policy.secrets import secret_reason

__all__ = ["DPKG_INFO", "Package", "PackageIndex", "index"]

DPKG_INFO: Final = Path("/var/lib/dpkg/info")
SHELLS_FILE: Final = Path("/etc/shells")
_PROGRAM_DIRS: Final = frozenset({"bin", "sbin", "libexec"})
_MAX_PROGRAMS: Final = 400
"""A package shipping more programs than this is not widened (a distribution's
catch-all package would grant far more than one tool's siblings)."""


@dataclass
class Package:
    """One installed package, its program files, and why it is not widened (if so)."""

    name: str
    listing: str
    programs: list[str] = field(default_factory=list)
    refused: str | None = None


class PackageIndex:
    """Which package each installed file belongs to (dpkg's lists, read once)."""

    def __init__(self, info: Path = DPKG_INFO, shells: Path = SHELLS_FILE) -> None:
        self.info = info
        self.owner: dict[str, str] = {}
        self.files: dict[str, list[str]] = {}
        self._packages: dict[str, Package] = {}
        self.shells = _shells(shells)
        try:
            listings = sorted(info.glob("*.list"))
        except OSError:
            listings = []
        for listing in listings:
            name = listing.name[: -len(".list")]
            try:
                lines = listing.read_text(errors="surrogateescape").splitlines()
            except OSError:
                continue
            self.files[name] = lines
            for line in lines:
                self.owner.setdefault(line, name)

    def package_of(self, path: str) -> Package | None:
        """The package that installed ``path`` (as run or as resolved), else None."""
        for candidate in _spellings(path):
            name = self.owner.get(candidate)
            if name is not None:
                return self.package(name)
        return None

    def package(self, name: str) -> Package:
        """The package ``name`` with its programs, judged on disk."""
        found = self._packages.get(name)
        if found is None:
            found = self._packages[name] = self._judge(name)
        return found

    def _judge(self, name: str) -> Package:
        pkg = Package(name, str(self.info / f"{name}.list"))
        programs: dict[str, None] = {}
        for path in self.files.get(name, []):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            real = os.path.realpath(path)
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                pkg.refused = f"it ships the setuid/setgid program {path}"
                return pkg
            if path in self.shells or real in self.shells:
                pkg.refused = f"it ships the shell {path}"
                return pkg
            if not st.st_mode & 0o111 or secret_reason(real) is not None:
                continue
            if OTHER_PURPOSE.fullmatch(os.path.basename(path)):
                continue
            if _PROGRAM_DIRS.intersection(path.split("/")[:-1]) or _elf_program(real):
                programs[real] = None
        if len(programs) > _MAX_PROGRAMS:
            pkg.refused = f"it ships {len(programs)} programs (more than {_MAX_PROGRAMS})"
            return pkg
        pkg.programs = sorted(programs)
        return pkg


OTHER_PURPOSE: Final = re.compile(
    r"(npm|npx|corepack|node-gyp|yarn|yarnpkg|pnpm|pnpx|pip[0-9.]*|pipx|easy_install[0-9.-]*"
    r"|gem|bundle|bundler|cargo|rustup|uv|uvx|poetry|conda|apt|apt-get|dpkg"
    r"|.*daemon|.*-shell|.*-http-backend|.*-imap-send|.*-send-email|scalar"
    r"|ssh|sshd|scp|sftp|nc|ncat|netcat|socat|telnet)"
)
"""Siblings never granted by widening (matched against the whole file name): package
managers, daemons and servers, restricted shells, mail and network helpers."""

_SHARED_LIBRARY: Final = re.compile(r"\.so(\.[0-9]+)*$")


def _elf_program(path: str) -> bool:
    """An ELF file that is not named as a shared library (``.so``, ``.so.1.2``)."""
    if _SHARED_LIBRARY.search(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _spellings(path: str) -> list[str]:
    """``path`` as dpkg may list it: as given, resolved, and across the merged-/usr
    links (``/bin/ls`` and ``/usr/bin/ls`` are one file on a merged-/usr system)."""
    out = [os.path.normpath(path)]
    real = os.path.realpath(path)
    out.append(real)
    for p in list(out):
        head, tail = os.path.split(p)
        out.append(os.path.join(os.path.realpath(head), tail))
        if p.startswith("/usr/"):
            out.append(p[len("/usr") :])
        elif p.startswith(("/bin/", "/sbin/", "/lib/", "/lib64/", "/lib32/")):
            out.append("/usr" + p)
    return list(dict.fromkeys(out))


def _shells(path: Path) -> set[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return set()
    out = set()
    for line in lines:
        line = line.strip()
        if line.startswith("/"):
            out.add(line)
            out.add(os.path.realpath(line))
    return out


def index() -> PackageIndex:
    """The index of this machine's packages (:data:`DPKG_INFO`, read once per process)."""
    return _index(DPKG_INFO, SHELLS_FILE)


@lru_cache(maxsize=4)
def _index(info: Path, shells: Path) -> PackageIndex:
    return PackageIndex(info, shells)
