"""Write docs/first-run.md: a new user's first minutes with cvg, really run.

From a fresh ``git clone`` of this repository into a temporary directory, run the
README's commands literally (and, where a literal command fails, what the user would try
next), capture each command's real output, and write the transcript as markdown.
Temporary paths, run ids and timings are replaced by stable names.

    python examples/first_run.py           # rewrite docs/first-run.md
    python examples/first_run.py --check   # exit 1 if docs/first-run.md is stale

--check compares only what does not depend on the machine: the commands, their exit
statuses and the denials cvg-run and cvg-explain name. How many ENOENT probes the
loader made, event ids and the learned policy's lines differ between Pythons and
distributions; the transcript shows them as they were where it was generated.

The clone is of the committed HEAD: commit first, then regenerate. Needs git and uv on
PATH and a populated uv cache (it does not download anything itself).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "first-run.md"

TOOL = """\
import sys

name = sys.argv[1] if len(sys.argv) > 1 else "data.txt"
with open(name) as f:
    text = f.read()
with open("out.txt", "w") as f:
    f.write(text.upper())
print(len(text.split()), "words")
"""


@dataclass
class Step:
    title: str
    command: str
    note: str = ""


STEPS = [
    Step(
        "Set up: the README's first command, in a fresh clone",
        "uv run cvg-run -- python3 -c 'print(1)'",
        "The first `uv run` creates `.venv` and installs the workspace (uv's own lines on "
        "stderr); then cvg-run runs the command under the embedded default policy.",
    ),
    Step(
        "The SSH key denial",
        "uv run cvg-run -- cat ~/.ssh/id_rsa",
        "`~` is a home holding a (fake) key, readable without cvg: `cat` prints it.",
    ),
    Step("", "cat ~/.ssh/id_rsa"),
    Step(
        "No network under the default policy",
        "uv run cvg-run -- python3 -c 'import socket; socket.socket()'",
    ),
    Step(
        "A tiny tool to learn a policy for",
        "cat tool.py && echo 'hello sandboxed world' > data.txt && python3 tool.py",
    ),
    Step(
        "Learn, generate, validate: the README's pipeline, after activating the environment",
        ". .venv/bin/activate && cvg-observe -- python3 tool.py | tee obs.json | cvg-generate"
        ' | cvg-validate > p.yaml; echo "exit $?"; grep -c . p.yaml',
        "The README says to activate `.venv` (made by the first `uv run`) or to prefix each "
        "tool with `uv run`.",
    ),
    Step(
        "Does it hold for another input? The README's --verify line",
        "uv run cvg-generate -q obs.json --verify -- python3 tool.py --other-input > /dev/null",
        "The observation `tee` kept is generated from again and the policy tried on another "
        "command line (the policy, on stdout, is dropped). This tool takes `--other-input` "
        "for a file name that does not exist: a missing file is the tool's own failure, not "
        "a gap in the policy.",
    ),
    Step("Run the tool under the learned policy", "uv run cvg-run -p p.yaml -- python3 tool.py"),
    Step(
        "Another input: a file the tool never read while it was watched",
        "echo 'private notes' > ~/notes.txt && "
        "uv run cvg-run --trace --record run.json -p p.yaml -- python3 tool.py ~/notes.txt",
    ),
    Step("Explain the denial", "uv run cvg-explain --format text run.json"),
]


def _sort_unordered(text: str) -> str:
    """Lines that come in any order: uv builds the workspace packages in parallel, and
    the commands of a pipeline complain at the same time."""
    out: list[str] = []
    run: list[str] = []
    for line in text.splitlines(keepends=True):
        if re.match(r"\s+(Building|Built) |bash: line \d+: .*: command not found$", line):
            run.append(line)
            continue
        out.extend(sorted(run, key=lambda x: (x.split()[0] == "Built", x)))
        run = []
        out.append(line)
    out.extend(sorted(run, key=lambda x: (x.split()[0] == "Built", x)))
    return "".join(out)


def _normalise(text: str, tmp: Path, home: Path) -> str:
    text = _sort_unordered(text)
    text = re.sub(r"\b\d{8}T\d{6}Z-[0-9a-f]{8}\b", "<run-id>", text)
    for path, name in ((home, "~"), (tmp / "cvg", "$CLONE"), (tmp, "$TMP")):
        text = text.replace(str(path), name)
    text = text.replace(str(Path.home()), "$REAL_HOME")
    text = re.sub(r"\b\d+(\.\d+)?\s?(ms|s)\b", "N ms", text)
    text = re.sub(r"\b[0-9a-f]{12,}\b", "<id>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<time>", text)
    text = re.sub(r"/tmp/[\w.-]+", "/tmp/<tmp>", text)
    text = re.sub(r"cvg-[\w]+-[\w]{6,}", "cvg-<scratch>", text)
    text = re.sub(r"Installed \d+ packages", "Installed N packages", text)
    text = re.sub(r"Resolved \d+ packages", "Resolved N packages", text)
    return text


def _shell(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    r = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300, check=False)  # fmt: skip
    return r.returncode, r.stdout


def transcript() -> str:
    tmp = Path(tempfile.mkdtemp(prefix="cvg-first-run-"))
    try:
        home = tmp / "home"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE KEY-----\n")
        # A new user: their own HOME and no project environment active, but the machine's
        # settings (uv cache, certificates, Python) as they are.
        real_home = str(Path.home())
        # Under nox the session's environment is active (VIRTUAL_ENV, and uv variables
        # pointing at it): a new user's shell has none of them, and `uv run` would
        # otherwise install the clone into that environment instead of making .venv.
        keep_uv = ("UV_CACHE_DIR", "UV_PYTHON_DOWNLOADS", "UV_INDEX_URL", "UV_DEFAULT_INDEX")
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH")
            and not k.startswith("NOX")
            and (not k.startswith("UV_") or k in keep_uv)
        }
        env["PATH"] = os.pathsep.join(
            p
            for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if not (Path(p) / "activate").exists()
        )
        env.update(HOME=str(home), LANG="C.UTF-8", TERM="dumb", NO_COLOR="1")
        env.setdefault("PYENV_ROOT", os.path.join(real_home, ".pyenv"))
        env.setdefault("UV_CACHE_DIR", os.path.join(real_home, ".cache", "uv"))
        rc, out = _shell(f"git clone -q {REPO} cvg", tmp, env)
        if rc != 0:
            raise SystemExit(f"first_run: git clone failed: {out.strip()}")
        clone = tmp / "cvg"
        (clone / "tool.py").write_text(TOOL)
        parts = [
            "# First run\n",
            "<!-- generated by `python examples/first_run.py` from a fresh clone; do not edit"
            " by hand. `python examples/first_run.py --check` fails when a command, an exit"
            " status or a named denial changes. -->\n",
            "A new user's first minutes, really run: `git clone` of the repository into an "
            "empty directory, then the README's commands as written. `~` is a fresh home "
            "directory, `$CLONE` the clone; run ids, temporary names and timings are "
            "replaced by placeholders. The tool is run as root here.\n",
            "```sh\n$ git clone <repository> cvg && cd cvg\n```\n",
        ]
        for step in STEPS:
            rc, out = _shell(step.command, clone, env)
            if step.title:
                parts.append(f"## {step.title}\n")
            if step.note:
                parts.append(step.note + "\n")
            shown = _normalise(out, tmp, home).rstrip("\n")
            body = f"$ {step.command}\n{shown}\n" if shown else f"$ {step.command}\n"
            parts.append(f"```sh\n{body}```\nexit status {rc}\n")
        parts.append(STUMBLES)
        return "\n".join(parts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


STUMBLES = """\
## Stumbles

What a new user trips over on the way above, in order:

1. **The README's tools were not on PATH** (fixed in the README). The policy examples
   and the learn/generate/validate pipeline write `cvg-validate`, `cvg-observe` and
   `cvg-generate` bare, and in a fresh clone that was `command not found` (exit 127);
   the README now says to activate `.venv` after the first `uv run`, or to prefix each
   tool with `uv run`.
2. **The SSH key example needs a key to deny** (said in the README now). With no
   `~/.ssh/id_rsa`, `cat` says `No such file or directory` inside and outside the
   sandbox alike; the transcript uses a home with a fake key.
3. **`python3` means the project's virtual environment under `uv run`.** The learned
   policy grants that interpreter's real files (here under `$REAL_HOME/.pyenv`, the
   real home, written as `${HOME}/...` when the learning home is the real one), so a
   learned policy is specific to this machine's Python.
4. **A learned policy is long.** The six-line tool above gets a policy of about a
   hundred lines (runtime baselines, each rule with the events behind it as comments);
   `cvg-validate --explain` is the way to read it.
5. **The README's `--trace` line was shorter than the real one** (fixed): cvg-run also
   names the Landlock right (`...; Landlock right read_file)`), as above.
"""


_EXPLAINED = re.compile(r"^d\d+\s+(\S.*\(.*\))$")


def stable(text: str) -> list[str]:
    """What --check compares: titles, commands, exit statuses, and each denial named
    by cvg-run (its `denied:` line) or by cvg-explain (its entry, less the event id,
    and the rule it names)."""
    kept = []
    for line in text.splitlines():
        # "exit N" alone: a pipeline's status, echoed by its step.
        named = "cvg-run: denied: " in line or re.fullmatch(r"exit \d+", line)
        if line.startswith(("## ", "$ ", "exit status ")) or named:
            kept.append(line)
        elif m := _EXPLAINED.match(line):
            kept.append("explained: " + " ".join(m.group(1).split()))
        elif line.startswith("  rule: "):
            kept.append(line.strip())
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true",
        help="regenerate in memory and exit 1 if docs/first-run.md differs",
    )  # fmt: skip
    args = parser.parse_args(argv)
    text = transcript()
    if args.check:
        current = stable(OUT.read_text() if OUT.exists() else "")
        fresh = stable(text)
        if current != fresh:
            sys.stderr.writelines(difflib.unified_diff(
                [f"{x}\n" for x in current], [f"{x}\n" for x in fresh],
                str(OUT.relative_to(REPO)), "regenerated"))  # fmt: skip
            print(f"first_run: {OUT.relative_to(REPO)} is stale: run "
                  "`python examples/first_run.py` and commit it", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    tmp = OUT.with_name(OUT.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
