"""Programs a shell script names: another input takes another branch of it.

A script's ``case "$1" in`` runs ``diff`` on one input and ``patch`` on the next; one
trace sees only the branch it took. The script itself says what the other branches
run: each command word (the first word of a simple command, and the command a wrapper
such as ``xargs``, ``env``, ``timeout`` or ``find -exec`` runs) that is found on the
tool's PATH is a program the tool may run, citing the script, its line, and the event
that showed a shell reading it.

The scripts are the files a shell process read (a shell reads its script; what else it
reads is parsed too, and only words in command position that name a program count),
the scripts run by their ``#!`` line, a ``sh -c`` command line, and the recipes of the
makefiles ``make`` read (each recipe line is a shell command: another target runs
other programs). Never granted this
way: a shell (one shell runs anything; a shell is granted only when it ran), a setuid or
setgid program (it would run with other privileges), a secret by name.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from cvg_policy.secrets import secret_reason
from cvg_schema import Event, Observation

__all__ = ["MAKES", "SHELLS", "ScriptProgram", "command_words", "script_programs"]

SHELLS: Final = frozenset({"sh", "dash", "bash", "zsh", "ksh", "mksh", "busybox"})
MAKES: Final = frozenset({"make", "gmake"})
_MAX_SCRIPT: Final = 1 << 20
"""Bytes of one script read; a larger file is not a script anyone wrote by hand."""
_DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"

_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_REDIRECT: Final = re.compile(r"^(\d*|&)(>>?|<<?<?|>&|<&|>\|)")
_NAME: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_KEYWORDS: Final = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "esac",
     "function", "coproc", "time", "in", "{", "}", ";;"}
)  # fmt: skip
# After these, the rest of the command is a list of words, not commands.
_LISTS: Final = frozenset({"for", "select", "case"})
# These run the command that follows their options.
_WRAPPERS: Final = frozenset(
    {"exec", "command", "env", "nice", "nohup", "timeout", "stdbuf", "ionice", "setsid",
     "xargs", "flock", "chronic", "time", "builtin"}
)  # fmt: skip
_EXEC_OPTIONS: Final = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@dataclass(frozen=True)
class ScriptProgram:
    """A program a script names: its path here, the script, the line, the event."""

    path: str
    script: str
    line: int
    word: str
    event: Event
    path_dirs: tuple[str, ...] = ()  # the PATH it was found on


def command_words(text: str) -> Iterator[tuple[int, str]]:
    """The words of ``text`` (shell) in command position, with their line numbers.
    Quotes hold a word together across lines and separators; a ``$(...)`` inside
    double quotes is a command too."""
    words: list[tuple[int, str]] = []
    line = 1
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if m.lastgroup == "word":
            if token.startswith("#"):
                continue  # a comment, to the end of the line (the pattern stops there)
            words.append((line, token))
            for inner in _SUBSTITUTION.findall(token):
                yield from ((line + n - 1, w) for n, w in command_words(inner))
        elif m.lastgroup == "op" or "\n" in token:
            yield from _commands(words)
            words = []
        line += token.count("\n")
    yield from _commands(words)


# A word (quotes and escapes held together), a comment, an operator, or blanks.
_TOKEN: Final = re.compile(
    r"""(?P<word>\#[^\n]*(?=\n|$)|(?:[^\s"'\\;&|()`]|\\.|"(?:[^"\\]|\\.)*"?|'[^']*'?)+)"""
    r"|(?P<op>\|\||&&|\$\(|[;&|()`])|(?P<blank>\s+)",
    re.DOTALL,
)
_SUBSTITUTION: Final = re.compile(r"\$\(([^()]*)\)")


def _unquote(word: str) -> str:
    return re.sub(r"""\\(.)|["']""", lambda m: m.group(1) or "", word)


def _commands(located: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The command words of one simple command's words (with their lines)."""
    words = [_unquote(w) for _n, w in located]
    lines = [n for n, _w in located]
    expect = True  # the next word other than an assignment or redirection is a command
    skip_target = False
    for i, word in enumerate(words):
        if skip_target:
            skip_target = False
            continue
        if word in _EXEC_OPTIONS and i + 1 < len(words):
            yield lines[i + 1], words[i + 1]
            continue
        if not expect:
            continue
        m = _REDIRECT.match(word)
        if m:
            skip_target = m.end() == len(word)  # `> file`: the next word is the file
            continue
        if _ASSIGNMENT.match(word):
            continue
        if word in _LISTS:
            return
        if word in _KEYWORDS:
            continue
        if word in _WRAPPERS:
            yield lines[i], word
            continue  # its options, then the command it runs
        if word.startswith("-") or word.isdigit() or re.fullmatch(r"[0-9.]+[smhd]?", word):
            continue  # a wrapper's option or duration
        yield lines[i], word
        expect = False


def script_programs(obs: Observation) -> list[ScriptProgram]:
    """The programs the scripts of ``obs`` name, found on its PATH (here), each once."""
    found: dict[str, ScriptProgram] = {}
    path_dirs = _path_dirs(obs)
    for script, text, event in _scripts(obs):
        for line, word in command_words(text):
            program = _resolve(word, path_dirs)
            if program is None or program in found:
                continue
            if _refused(program, obs.home) is None:
                found[program] = ScriptProgram(program, script, line, word, event, tuple(path_dirs))
    return list(found.values())


def _scripts(obs: Observation) -> Iterator[tuple[str, str, Event]]:
    """(name, text, event) of each script: a file a shell read, a script its #! line
    ran, a ``sh -c`` command line."""
    shells: set[int] = set()
    makes: set[int] = set()
    seen: set[str] = set()
    for exe, event in obs.executions():
        if _is_shell(exe.path) and event.pid is not None:
            shells.add(event.pid)
        if _base(exe.path) in MAKES and event.pid is not None:
            makes.add(event.pid)
        if exe.shebang and _is_shell(exe.shebang[0]) and event.result == "ok":
            yield from _read_script(exe.path, event, seen)
    first = next((e for _exe, e in obs.executions()), None)
    argv = obs.argv or []
    if first is not None and argv and _is_shell(argv[0]) and "-c" in argv[1:-1]:
        yield "the command line", argv[argv.index("-c", 1) + 1], first
    for e in obs.events:
        if e.op != "read" or e.result != "ok" or not e.path or e.directory:
            continue
        if e.pid in shells:
            yield from _read_script(e.path, e, seen)
        elif e.pid in makes:
            for name, text, event in _read_script(e.path, e, seen):
                yield name, _recipes(text), event


def _read_script(path: str, event: Event, seen: set[str]) -> Iterator[tuple[str, str, Event]]:
    real = os.path.realpath(path)
    if real in seen or real.startswith(("/proc/", "/sys/", "/dev/")):
        return
    seen.add(real)
    try:
        with open(real, "rb") as f:
            data = f.read(_MAX_SCRIPT + 1)
    except OSError:
        return
    if len(data) > _MAX_SCRIPT or b"\0" in data:
        return  # a binary, or too large to be a script
    yield path, data.decode("utf-8", "replace"), event


def _recipes(text: str) -> str:
    """A makefile's recipe lines as a shell script, line numbers kept: the lines that
    start with a tab, without make's ``@``, ``-`` and ``+`` prefixes; every other line
    blank (rules, variables and directives are make's, not the shell's)."""
    out = []
    for line in text.splitlines():
        out.append(line[1:].lstrip("@-+ \t") if line.startswith("\t") else "")
    return "\n".join(out)


def _base(path: str) -> str:
    return posixpath.basename(os.path.realpath(path))


def _is_shell(path: str) -> bool:
    return _base(path) in SHELLS or posixpath.basename(path) in SHELLS


def _path_dirs(obs: Observation) -> list[str]:
    """The tool's PATH when the observation gave it, else the directories its programs
    ran from, then the usual ones."""
    value = (obs.environment or {}).get("PATH")
    if value:
        return [d for d in value.split(":") if d.startswith("/")]
    ran = [posixpath.dirname(exe.path) for exe in obs.executables if exe.path.startswith("/")]
    dirs = [d for d in ran if posixpath.basename(d) in ("bin", "sbin")]
    return list(dict.fromkeys([*dirs, *_DEFAULT_PATH.split(":")]))


def _resolve(word: str, path_dirs: list[str]) -> str | None:
    if word.startswith("/"):
        candidates = [word]
    elif _NAME.match(word):
        candidates = [posixpath.join(d, word) for d in path_dirs]
    else:
        return None
    for candidate in candidates:
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
            return os.path.realpath(candidate)
    return None


def _refused(program: str, home: str | None) -> str | None:
    """Why ``program`` is not granted from a script's word, or None."""
    if _is_shell(program):
        return "a shell"
    try:
        mode = os.stat(program).st_mode
    except OSError:
        return "gone"
    if mode & (stat.S_ISUID | stat.S_ISGID):
        return "setuid or setgid"
    secret: str | None = secret_reason(program, home)
    return secret
