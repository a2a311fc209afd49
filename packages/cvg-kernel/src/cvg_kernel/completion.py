"""Shell completion for the command lines that are not click (cvg-exec, cvg-run).

They answer click's protocol, so every cvg tool is set up the same way::

    eval "$(_CVG_RUN_COMPLETE=bash_source cvg-run)"            # ~/.bashrc
    eval "$(_CVG_RUN_COMPLETE=zsh_source cvg-run)"             # ~/.zshrc
    _CVG_RUN_COMPLETE=fish_source cvg-run | source             # config.fish

Both take options, then ``--`` or the first word that is not an option, then a
command of the user's own: the scripts are static (no call back into Python at each
key press, which would cost cvg-run's start-up every time) and hand the command's
words to the shell's own completion of commands.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection, Mapping, Sequence

TYPE_CHECKING = False  # not typing's: cvg-run imports this module on its cold path
if TYPE_CHECKING:
    import argparse

__all__ = ["SHELLS", "Option", "env_var", "from_argparse", "respond", "script"]

SHELLS = ("bash", "zsh", "fish")


class Option:
    """One option: its spellings, what its value is (``None`` for a flag, ``"file"``,
    ``"dir"``, or any other word for a value the shell cannot guess), a short help, and
    whether it may be given more than once."""

    def __init__(
        self, names: Sequence[str], value: str | None, help: str, repeat: bool = False
    ) -> None:
        self.names = tuple(names)
        self.value = value
        self.repeat = repeat
        # Its first clause, on one line, with none of the characters the shells' quoting
        # gives meaning to.
        first = re.split(r"[;:(]|\. ", " ".join(help.split()), maxsplit=1)[0].strip()
        first = re.sub(r"[\[\]'\"\\`${}]", "", first)
        self.help = first if len(first) <= 72 else first[:71].rstrip() + "…"


def from_argparse(
    parser: argparse.ArgumentParser, files: Collection[str] = (), dirs: Collection[str] = ()
) -> list[Option]:
    """The options of an argparse parser; ``files`` and ``dirs`` name the destinations
    whose value is a file or a directory."""
    out = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        value: str | None = None
        if action.nargs != 0:
            value = "file" if action.dest in files else "dir" if action.dest in dirs else "value"
        repeat = type(action).__name__.startswith("_Append")
        out.append(Option(action.option_strings, value, action.help or "", repeat))
    return out


def env_var(prog: str) -> str:
    """click's variable name: ``cvg-run`` -> ``_CVG_RUN_COMPLETE``."""
    return "_" + prog.replace("-", "_").upper() + "_COMPLETE"


def respond(
    prog: str, options: Sequence[Option], environ: Mapping[str, str] | None = None
) -> int | None:
    """When the completion variable is set: print the script it asks for and return
    the exit status (0, or 2 naming an unknown value). None when it is not set."""
    env = os.environ if environ is None else environ
    wanted = env.get(env_var(prog))
    if wanted is None:
        return None
    shell = wanted.removesuffix("_source")
    if shell not in SHELLS or not wanted.endswith("_source"):
        expected = ", ".join(f"{s}_source" for s in SHELLS)
        sys.stderr.write(f"{prog}: {env_var(prog)}={wanted!r}: expected one of {expected}\n")
        return 2
    sys.stdout.write(script(prog, shell, options))
    sys.stdout.flush()
    return 0


def script(prog: str, shell: str, options: Sequence[Option]) -> str:
    """The completion script for ``shell``."""
    if shell == "bash":
        return _bash(prog, options)
    if shell == "zsh":
        return _zsh(prog, options)
    if shell == "fish":
        return _fish(prog, options)
    raise ValueError(f"no completion for shell {shell!r}")


def _func(prog: str) -> str:
    return "_" + prog.replace("-", "_") + "_completion"


def _names(options: Sequence[Option], *values: str | None, others: bool = False) -> str:
    found = [
        n
        for o in options
        for n in o.names
        if (o.value in values) or (others and o.value not in (None, "file", "dir"))
    ]
    return "|".join(found)


def _bash(prog: str, options: Sequence[Option]) -> str:
    every = " ".join(n for o in options for n in o.names)
    takes = _names(options, "file", "dir", others=True) or "--"
    answers = (
        (_names(options, "file"), 'COMPREPLY=($(compgen -f -- "$cur")); return'),
        (_names(options, "dir"), 'COMPREPLY=($(compgen -d -- "$cur")); return'),
        (_names(options, others=True), "return"),
    )
    cases = "\n".join(f"            {names}) {then} ;;" for names, then in answers if names)
    return f"""\
# bash completion for {prog}; load with: eval "$({env_var(prog)}=bash_source {prog})"
{_func(prog)}() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} i=1 cmd=0
    # Options first; "--" or the first other word starts the command.
    while (( i < COMP_CWORD )); do
        case ${{COMP_WORDS[i]}} in
            --) cmd=$(( i + 1 )); break ;;
            {takes}) (( i += 2 )) ;;
            -?*) (( i += 1 )) ;;
            *) cmd=$i; break ;;
        esac
    done
    if (( cmd > 0 && cmd < COMP_CWORD )); then
        if declare -F _command_offset >/dev/null; then
            _command_offset "$cmd"
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if (( cmd == 0 )); then
        case $prev in
{cases}
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "{every}" -- "$cur"))
            return
        fi
    fi
    COMPREPLY=($(compgen -c -- "$cur"))
}}
complete -o default -o bashdefault -F {_func(prog)} {prog}
"""


def _zsh(prog: str, options: Sequence[Option]) -> str:
    specs = []
    for o in options:
        spelled = "{" + ",".join(o.names) + "}" if len(o.names) > 1 else o.names[0]
        exclusive = "(- *)" if "--help" in o.names else "(" + " ".join(o.names) + ")"
        action = ""
        if o.value == "file":
            action = ":file:_files"
        elif o.value == "dir":
            action = ":directory:_files -/"
        elif o.value is not None:
            action = f":{o.value}: "
        repeat = "*" if o.repeat else ""
        if o.repeat:
            exclusive = ""
        specs.append(f"        '{exclusive}{repeat}'{spelled}'[{o.help}]{action}' \\")
    body = "\n".join(specs)
    name = "_" + prog.replace("-", "_")
    return f"""\
#compdef {prog}
# zsh completion for {prog}; load with: eval "$({env_var(prog)}=zsh_source {prog})"
{name}() {{
    _arguments -s -S \\
{body}
        '(-):command: _command_names -e' \\
        '*::arguments: _normal'
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    {name} "$@"
else
    compdef {name} {prog}
fi
"""


def _fish(prog: str, options: Sequence[Option]) -> str:
    lines = [
        f"# fish completion for {prog}; load with: {env_var(prog)}=fish_source {prog} | source"
    ]
    takes = []
    for o in options:
        parts = [f"complete -c {prog}"]
        for n in o.names:
            parts.append(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}")
        if o.value == "file":
            parts.append("-r -F")
        elif o.value == "dir":
            parts.append("-x -a '(__fish_complete_directories (commandline -ct))'")
        elif o.value is not None:
            parts.append("-x")
        if o.value is not None:
            takes += list(o.names)
        parts.append(f"-d '{o.help}'")
        lines.append(" ".join(parts))
    lines.append(f"complete -c {prog} -x -a '(__fish_complete_subcommand -- {' '.join(takes)})'")
    return "\n".join(lines) + "\n"
