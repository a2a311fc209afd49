"""cvg-run: run a command under a cvg policy, supervise it, and record the run.

``from cvg_run import Sandbox`` is the warm Python API (see api.py). It is
imported lazily so the cvg-run command's cold start does not pay for it.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Result", "Sandbox", "SandboxError"]

# Not `from typing import TYPE_CHECKING`: importing typing costs the cold path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .api import Result, Sandbox, SandboxError


def __getattr__(name: str) -> object:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(name)
