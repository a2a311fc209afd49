"""Write docs/secrets.md from the one list of secrets (cvg_policy.secrets.SECRET_TABLE).

    python docs/gen_secrets.py            rewrite docs/secrets.md
    python docs/gen_secrets.py --check    exit 1 if docs/secrets.md is not what the list says

Exit status: 0 written or up to date; 1 drift (--check); 2 usage error.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from cvg_policy.secrets import SECRET_GROUPS, SECRET_NAMES, SECRET_TABLE, SECRET_WORDS

OUT = Path(__file__).with_name("secrets.md")

HEAD = """\
# Secrets

<!-- Made by docs/gen_secrets.py from cvg_policy.secrets.SECRET_TABLE: do not edit. -->

One list, in `cvg_policy.secrets`, says what a secret is. It is read by:

- the learning sandbox (`cvg-observe`, and so `cvg-wrap learn`): each secret that exists
  is denied (`filesystem.deny`), so the tool cannot read it while it is watched;
- `cvg-run`'s embedded default policy: each secret the caller could read beneath the
  policy's reads is carved out;
- the compiler, for every policy (`cvg_policy.implied`): each secret that exists beneath
  a read, write or execute grant and that the caller could read is denied unless a grant
  names that secret's own path exactly (`read: ["${HOME}", "${HOME}/.ssh"]`). A
  `./` row is looked for in the working directory, in the granted directory itself and
  in the home; a glob (`.env.*`, `ssh_host_*_key`) matches what exists when compiling,
  and cvg-run compiles again when that changes. The plan lists each one in `implied`
  with the grant and the row it cites; `cvg-validate --explain` shows them;
- `cvg-generate` and `cvg-import`: a path on the list is never granted, whatever the
  tool did with it.

`~` is `$HOME` and the user's home in the password database, when they differ. A
directory is denied whole. As an ordinary user `/root` is denied too, unless it is that
user's home.
"""

TAIL = """
## Named like a secret

`cvg-generate` and `cvg-import` also refuse, wherever they are, files named
{names} (case-insensitively), and files or hidden directories whose name holds one of
{words}, outside the code trees (`/usr`, `/lib`, ...) and code files (`*.py`, ...).
The learning sandbox denies only the paths in the table above (the default policy also
the names at the top of the working directory that look like secrets): a token in a
file with any other name is readable while learning. That includes a project's own MCP
config in the working directory (`.mcp.json`, `.vscode/mcp.json`, `.cursor/mcp.json`):
denying a file there splits the working directory's grant, and a server learning in it
could not read back the files it creates. Such configs are usually committed to the
project and name their tokens by variable; one that holds a token is readable while
learning (never granted afterwards).
"""


def render() -> str:
    lines = [HEAD]
    for group, title in SECRET_GROUPS.items():
        rows = [row for row in SECRET_TABLE if row[0] == group]
        lines.append(f"## {title}\n")
        lines.append("| path | holds |")
        lines.append("|---|---|")
        for _, where, path, what in rows:
            shown = {"home": f"`~/{path}`", "cwd": f"`./{path}` (working directory)"}
            lines.append(f"| {shown.get(where, f'`{path}`')} | {what} |")
        lines.append("")
    names = ", ".join(f"`{n}`" for n in SECRET_NAMES)
    words = ", ".join(f"`{w}`" for w in SECRET_WORDS)
    lines.append(TAIL.format(names=names, words=words))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python docs/gen_secrets.py [--check]", file=sys.stderr)
        return 2
    text = render()
    if argv == ["--check"]:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print("docs/secrets.md is stale: run python docs/gen_secrets.py", file=sys.stderr)
            return 1
        return 0
    fd, tmp = tempfile.mkstemp(dir=OUT.parent, prefix=".secrets.md.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
