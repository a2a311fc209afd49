"""Serving the calls a plan hands to the supervisor (``seccomp.supervise``), in a run
without --trace.

The confined child installs its filter with a listener and sends it down the socket
made here (``cvg_kernel.plan.prepare(notify_sock=...)``); a thread of the supervisor
receives it and answers each supervised call with what ``cvg_kernel.guard`` did.
Refused calls outside the supervised set never reach it: the filter answers them
itself. Only plans that need it pay for the socket and the thread.
"""

from __future__ import annotations

import os

# typing only for the type checker: importing it costs every cold start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def supervised(plan: dict[str, Any]) -> tuple[str, ...]:
    """The calls ``plan`` hands to the supervisor (empty for most plans)."""
    spec = plan.get("seccomp")
    return tuple(spec.get("supervise") or ()) if isinstance(spec, dict) else ()


def paths_guards(plan: dict[str, Any]) -> Any:
    """The guards of the ``paths`` group (cvg_kernel.paths_guard), their grant roots
    opened now, before the tool starts; ``close()`` them once it is gone."""
    from cvg_kernel.paths_guard import PathGuards

    return PathGuards(plan)


def plan_guards(plan: dict[str, Any], variables: Mapping[str, str]) -> dict[str, Any]:
    """The guards made from ``plan`` for its supervised groups, by call name: the
    ``unix`` group's check the socket paths of the plan's ``unix`` section.
    Raises cvg_kernel.plan.PlanError for a malformed section."""
    if "unix" not in supervised(plan):
        return {}
    from cvg_kernel.unix_guard import make_guards

    section = plan.get("unix")
    landlock = plan.get("landlock")
    return make_guards(
        section if isinstance(section, dict) else {},
        variables,
        landlock if isinstance(landlock, dict) else None,
    )


class Guarding:
    """The supervisor's end: ``theirs`` goes to ``prepare``; ``start()`` after the fork,
    ``stop()`` once the tool's processes are gone (later calls then get ENOSYS)."""

    def __init__(self, plan: dict[str, Any], guards: Mapping[str, Any] | None = None) -> None:
        import _socket  # not socket: ten milliseconds to import; the thread imports it later

        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self._ours, self.theirs = ours.detach(), theirs.detach()
        os.set_inheritable(self.theirs, True)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self.calls = supervised(plan)
        # The guards made from the plan, by call name (cvg_kernel.notify.serve's guards).
        self.guards = dict(guards or {})
        self._paths = paths_guards(plan) if "paths" in self.calls else None
        if self._paths is not None:
            self.guards = {**self._paths.guards, **self.guards}
        # The plain program and its arch, from the prepared filter (set before start).
        self.program: tuple[Any, ...] = ()
        self.arch = ""
        self.error: str | None = None
        self.refused: list[Any] = []
        self._thread: Any = None  # threading.Thread, imported only when a plan needs it

    def start(self) -> None:
        """In the supervisor, after the fork: the child holds its end now."""
        import threading

        os.close(self.theirs)
        self.theirs = -1
        self._thread = threading.Thread(target=self._serve, name="cvg-guard", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        from cvg_kernel.notify import serve_handover

        ours, self._ours = self._ours, -1
        try:
            serve_handover(  # no listener: the child failed before confining, nothing ran
                ours,
                self.program,
                self.arch,
                self.refused.append,
                stop_fd=self._stop_r,
                supervised=self.calls,
                guards=self.guards,
            )
        except Exception as e:  # noqa: BLE001 - reported in the record; the tool's calls fail meanwhile
            self.error = f"{type(e).__name__}: {e}"

    def stop(self) -> None:
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(5.0)
        for fd in (self._ours, self.theirs, self._stop_r, self._stop_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._ours = self.theirs = self._stop_r = self._stop_w = -1
        if self._paths is not None:
            self._paths.close()
