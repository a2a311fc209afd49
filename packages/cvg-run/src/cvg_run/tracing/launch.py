"""The launcher strace starts: confine this process with the run's plan, then exec the tool.

strace has to start the process it traces with ``--seccomp-bpf`` (the fast mode
is not available when attaching), and confinement has to happen between fork and
exec, so strace runs this small program rather than the tool itself::

    strace -f ... -- python -I -S -c BOOT PATHS --err-fd N --plan-fd M ... -- CMD

It imports nothing but cvg_kernel and the standard library, and applies the plan
cvg-run prepared (cvg_kernel.plan.adopt: the Landlock ruleset by inherited
descriptor, the seccomp program assembled, the variables bound) exactly as the
untraced supervisor's child does (rlimits, capabilities, no_new_privs, Landlock,
seccomp, descriptors close-on-exec; with --notify-fd the seccomp filter reports
its denials to the supervisor) and execs CMD. A failure goes up the error
descriptor as ``STATUS message``, the same protocol as the untraced child, so
cvg-run's exit status and messages do not change with --trace.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# Run by `python -I -S -c BOOT PATHS ARGS...`: -S skips site (its imports cost
# every traced run), so the directories holding cvg_kernel and cvg_run are given.
BOOT = (
    "import sys;sys.path[:0]=sys.argv[1].split('\\n');"
    "from cvg_run.tracing.launch import main;main(sys.argv[2:])"
)


class _LazyModule(type(sys)):  # type: ignore[misc]
    """A module that imports the real one on first use.

    cvg_kernel.plan imports json at the top but only its loads() uses it, and json
    brings re and enum: half the launcher's import time, paid on every traced run
    for nothing (the plan arrives in marshal form).
    """

    def __getattr__(self, name: str) -> object:
        import importlib

        module = str(self.__dict__["__name__"])
        del sys.modules[module]
        return getattr(importlib.import_module(module), name)


def main(argv: Sequence[str]) -> None:
    """Never returns: the tool runs, or the launcher exits with the status the
    untraced run would have."""
    err_fd = -1
    try:
        plan_fd = -1
        close: list[int] = []
        notify: int | None = None
        i = 0
        while i < len(argv) and argv[i] != "--":
            flag, value = argv[i], argv[i + 1]
            if flag == "--err-fd":
                err_fd = int(value)
            elif flag == "--plan-fd":
                plan_fd = int(value)
            elif flag == "--close-fd":
                close.append(int(value))
            elif flag == "--notify-fd":
                notify = int(value)
            i += 2
        command = list(argv[i + 1 :])
        for fd in close:  # the trace pipe: strace keeps its own copy
            try:
                os.close(fd)
            except OSError:
                pass
        import marshal

        sys.modules.setdefault("json", _LazyModule("json"))
        from cvg_kernel.plan import adopt, child_exec

        # The plan as cvg-run prepared it (cvg_kernel.plan.Prepared.handoff), in a memfd:
        # its Landlock ruleset is an inherited descriptor, its filter already assembled.
        with open(plan_fd, "rb") as f:
            handoff = marshal.loads(f.read())
        # With a notify socket, apply() installs the filter with its denials as user
        # notifications and sends the listener to the supervisor (then closes both).
        prepared = adopt(handoff, notify_sock=notify)
        prepared.apply()
    except BaseException as e:  # noqa: BLE001 - a forked child never returns into the caller's code
        # Not cvg_kernel.plan.child_exit: importing it may be what failed.
        try:
            message = f"confinement failed: {e}"
            if err_fd >= 0:
                os.write(err_fd, f"125 {message}".encode()[:4000])
            else:
                os.write(2, f"cvg-run: {message}\n".encode())
        finally:
            os._exit(125)
    child_exec(prepared, command, None, err_fd)
