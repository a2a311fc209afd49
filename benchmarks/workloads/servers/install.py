"""Install the third-party MCP servers the false-denial suite confines, pinned, into a
cache directory next to this file (never globally).

    uv run python benchmarks/workloads/servers/install.py [--dest DIR]

npm servers: ``npm ci`` from package.json and package-lock.json (every version locked).
PyPI servers: one venv per server (``uv venv`` on the system's /usr/bin/python3) and
``uv pip install --require-hashes`` from its requirements file (``NAME.txt``, made with
``uv pip compile --generate-hashes``). A stamp of the inputs' hash makes a second call
a no-op; a changed pin reinstalls. Prints the cache directory. Exit 1, one line on
stderr, when npm, uv or the network is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEST = HERE.parent / ".servers"
PYTHON = "/usr/bin/python3"
# The PyPI servers, each with its own requirements file here.
PYPI = ("mcp-server-fetch", "mcp-server-git", "mcp-server-sqlite", "mcp-server-time")
NPM_FILES = ("package.json", "package-lock.json")


class InstallError(Exception):
    pass


def inputs_hash() -> str:
    h = hashlib.sha256()
    for name in (*NPM_FILES, *(f"{p}.txt" for p in PYPI), Path(__file__).name):
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    return h.hexdigest()[:16]


def run(cmd: list[str], cwd: Path | None = None) -> None:
    if not shutil.which(cmd[0]):
        raise InstallError(f"{cmd[0]} is not on PATH (needed to install the MCP servers)")
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
        raise InstallError(f"{' '.join(cmd[:3])} failed (exit {p.returncode}): {tail[0]}")


def install(dest: Path) -> Path:
    stamp = dest / "stamp"
    want = inputs_hash()
    if stamp.exists() and stamp.read_text().strip() == want:
        return dest
    # Built in place, the stamp written last: the venvs' scripts name their own path in
    # their #! lines, so a tree cannot be built aside and moved.
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "node").mkdir(parents=True)
    for name in NPM_FILES:
        shutil.copy(HERE / name, dest / "node" / name)
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=dest / "node")
    for server in PYPI:
        venv = dest / "py" / server
        run(["uv", "venv", "-q", "--python", PYTHON, str(venv)])
        run(
            [
                "uv", "pip", "install", "-q", "--require-hashes",
                "--python", str(venv / "bin" / "python"), "-r", str(HERE / f"{server}.txt"),
            ]
        )  # fmt: skip
    (dest / "stamp").write_text(want + "\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEST, help=f"default: {DEST}")
    args = parser.parse_args(argv)
    try:
        print(install(args.dest.resolve()))
    except InstallError as e:
        print(f"install.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
