"""Warm sandboxes, one per policy, shared by every call that names that policy.

A ``Sandbox`` is a helper process with runners prepared ahead, so keeping one per
policy is what makes a call cost a fork and an exec rather than a policy compile
and an interpreter start. Each is keyed by the policy's file and bytes, so an
operator who edits a policy gets a new sandbox on the next call. Idle sandboxes
beyond ``keep`` are closed; one in use is never closed under a running call.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from cvg_run.api import Sandbox, SandboxError

from .policies import Chosen

WRITE_RIGHTS = frozenset(
    {"write_file", "make_reg", "make_dir", "make_sym", "make_sock", "make_fifo", "make_char",
     "make_block", "remove_file", "remove_dir", "refer", "truncate"}
)  # fmt: skip


def writes_over(plan: Mapping[str, Any], directory: str) -> str | None:
    """The path of a write grant in ``plan`` that covers ``directory``, if any."""
    for rule in (plan.get("landlock") or {}).get("fs_rules") or []:
        path = str(rule.get("path", ""))
        if "${" in path or not WRITE_RIGHTS.intersection(rule.get("access") or []):
            continue  # ${SCRATCH} is a fresh directory per run: it holds nothing of ours
        real = os.path.realpath(path)
        if directory == real or directory.startswith(real.rstrip("/") + "/"):
            return path
    return None


class _Entry:
    def __init__(self, box: Sandbox, private: str | None, guard: str | None) -> None:
        self.box = box
        self.private = private
        self.users = 0
        # A policy that may write the policy directory would let a run add policies.
        covering = writes_over(box.plan, guard) if guard else None
        self.refusal = (
            None
            if covering is None
            else f"it grants write to {covering}, which holds the policy directory: a run "
            "could add policies of its own"
        )

    def close(self) -> None:
        self.box.close()
        if self.private is not None:
            shutil.rmtree(self.private, ignore_errors=True)


class Pool:
    def __init__(
        self,
        *,
        cwd: str,
        allow_degraded: bool = False,
        python: str | None = None,
        keep: int = 8,
        guard: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.guard = guard
        self.allow_degraded = allow_degraded
        self.python = python
        self.keep = keep
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._closed = False

    def acquire_warm(self, chosen: Chosen) -> _Entry | None:
        """The running sandbox for ``chosen``, held until :meth:`release`; None when
        there is none yet (then :meth:`acquire`, which may take a while)."""
        key = (chosen.path or "<inline>", chosen.digest)
        with self._lock:
            if self._closed:
                raise SandboxError("the server is shutting down")
            entry = self._entries.get(key)
            if entry is not None and not entry.box.closed:
                entry.users += 1
                self._entries.move_to_end(key)
                return entry
        return None

    def acquire(self, chosen: Chosen) -> _Entry:
        """The sandbox for ``chosen``, started if need be (a policy compile and a
        helper start: call it from a thread). Raises SandboxError when the policy is
        refused (invalid, or not fully enforceable here)."""
        warm = self.acquire_warm(chosen)
        if warm is not None:
            return warm
        key = (chosen.path or "<inline>", chosen.digest)
        fresh = self._start(chosen)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and not entry.box.closed:
                spare, entry.users = fresh, entry.users + 1
            else:
                spare, entry = None, fresh
                entry.users = 1
                self._entries[key] = entry
            idle = self._evictable()
        if spare is not None:
            spare.close()
        for old in idle:
            old.close()
        return entry

    def _start(self, chosen: Chosen) -> _Entry:
        private = None
        path = chosen.path
        if path is None:
            private = tempfile.mkdtemp(prefix="cvg-mcp-inline-")
            path = os.path.join(private, "inline.yaml")
            with open(path, "wb") as f:
                f.write(chosen.data)
        try:
            box = Sandbox(
                path,
                cwd=self.cwd,
                allow_degraded=self.allow_degraded,
                python=self.python,
            )
        except BaseException:
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
            raise
        return _Entry(box, private, self.guard)

    def _evictable(self) -> list[_Entry]:
        """Idle entries past ``keep``, oldest first, removed from the pool."""
        out = []
        for key, entry in list(self._entries.items()):
            if len(self._entries) <= self.keep:
                break
            if entry.users == 0:
                del self._entries[key]
                out.append(entry)
        return out

    def discard(self, entry: _Entry) -> None:
        """Drop a sandbox whose helper failed, so the next call starts a fresh one."""
        with self._lock:
            for key, other in list(self._entries.items()):
                if other is entry:
                    del self._entries[key]
        entry.box.close()

    def release(self, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            close = self._closed and entry.users == 0
            idle = self._evictable()
        if close:
            entry.close()
        for old in idle:
            old.close()

    def close(self) -> None:
        """Close every sandbox. A run still going is ended by its helper's exit."""
        with self._lock:
            self._closed = True
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            entry.close()

    def __len__(self) -> int:
        return len(self._entries)
