"""The Landlock restrict_self flag probes: each flag accepted, and the layer it
came with then seen to bite (tsync: in a thread started before)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cvg_kernel import landlock
from cvg_kernel.process import PR_SET_NO_NEW_PRIVS
from cvg_schema import Feature

from ._fork import Outcome, Send
from ._group import Group, Spec, check, outcome_of
from ._landlock import LandlockState
from ._landlock_fs import open_close
from ._libc import prctl

# Each flag is tried on its own layer, which handles one right nobody else handles, so
# the layer can be seen to bite after restrict_self accepted the flag.
_FLAG_RIGHT = {
    "log_same_exec_off": ("make_fifo", lambda p: os.mkfifo(p, 0o600)),
    "log_new_exec_on": ("make_sym", lambda p: os.symlink("r", p)),
    "log_subdomains_off": ("make_dir", lambda p: os.mkdir(p)),
    "tsync": ("make_reg", lambda p: open_close(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
}
FLAG_SPECS = {
    name: Spec(
        f"landlock.flag.{name}",
        f"landlock_restrict_self() with {name} accepted in a child, and that layer "
        f"(handling {_FLAG_RIGHT[name][0]}) then denied it"
        + (" in a thread started before, from the other thread" if name == "tsync" else ""),
        landlock.FLAGS[name].abi,
    )
    for name in landlock.FLAGS
}


def try_layer(
    ruleset: landlock.Ruleset,
    op: Callable[[str], object],
    prefix: str,
    *,
    other_thread: bool = False,
) -> dict[str, str]:
    """Enforce one layer whose ruleset handles exactly what ``op`` needs, and watch
    ``op`` (on fresh paths starting with ``prefix``) work before and fail after.

    With ``other_thread``, a thread started before the restriction also tries
    ``op`` afterwards: without tsync it is outside the new layer (OK), with it
    it must be denied too. Call it in a child that has set no_new_privs.
    """
    got = {"before": outcome_of(lambda: op(f"{prefix}.0"))}
    thread_result: list[str] = []
    go = threading.Event()

    def other() -> None:
        go.wait(2)
        thread_result.append(outcome_of(lambda: op(f"{prefix}.t")))

    thread = threading.Thread(target=other, daemon=True) if other_thread else None
    if thread is not None:
        thread.start()
    try:
        ruleset.restrict_self()
        got["restrict"] = "OK"
    except landlock.LandlockError as e:
        got["restrict"] = str(e)
    go.set()
    if got["restrict"] == "OK":
        got["after"] = outcome_of(lambda: op(f"{prefix}.1"))
    if thread is not None:
        thread.join(3)
        got["other thread"] = thread_result[0] if thread_result else "no result"
    return got


class LandlockFlagGroup(Group):
    name = "landlock.flag"

    def __init__(self, state: LandlockState, base: str) -> None:
        self.flags = [f for f in landlock.FLAGS if state.lacks(landlock.FLAGS[f].abi) is None]
        self.specs = [FLAG_SPECS[f] for f in self.flags]
        self.dir = os.path.join(base, "flags")
        os.mkdir(self.dir)
        self.rulesets: dict[str, landlock.Ruleset] = {}
        try:
            for f in self.flags:
                self.rulesets[f] = landlock.Ruleset.build(
                    handled_fs=[_FLAG_RIGHT[f][0]],
                    handled_net=[],
                    scoped=[],
                    flags=[f],
                    abi=state.effective,
                )
        except BaseException:
            self.close()
            raise

    def body(self, send: Send) -> Mapping[str, Any]:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        return {
            f: try_layer(
                self.rulesets[f], _FLAG_RIGHT[f][1], f"{self.dir}/{f}", other_thread=f == "tsync"
            )
            for f in self.flags
        }

    def interpret(self, outcome: Outcome) -> list[Feature]:
        features = []
        for f in self.flags:
            got = outcome.report.get(f, {})
            expect = {"before": "OK", "restrict": "OK", "after": "EACCES"}
            if f == "tsync":
                expect["other thread"] = "EACCES"
            features.append(check(FLAG_SPECS[f], got, expect))
        return features

    def close(self) -> None:
        for rs in self.rulesets.values():
            rs.close()
