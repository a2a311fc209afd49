"""cvg-policy: load, check, explain and compile cvg policies (``cvg-validate``).

:func:`load_policy` reads YAML or JSON into a :class:`LoadedPolicy` (the validated
:class:`cvg_schema.Policy` and the line of every rule); :func:`check` finds what the
schema cannot (missing paths, unknown syscalls, risky grants); :func:`render_yaml`
writes a policy back with each rule's reasons as comments. Every problem is a
:class:`PolicyError` or a :class:`Finding`, one line naming file, line and rule.

The names load on first use: a program that wants only a submodule (the secrets' list,
``cvg_policy.secrets``) does not pay for pydantic, pyyaml and the checks.
"""

from __future__ import annotations

import importlib

# Each public name, by the module that defines it.
_MODULES = {
    "checks": "check",
    "errors": "Finding PolicyError",
    "load": "LoadedPolicy load_policy read_policy_file",
    "render": "render_json render_yaml",
}
_HOME = {name: module for module, names in _MODULES.items() for name in names.split()}

__all__ = sorted([*_HOME, "__version__"])


def __getattr__(name: str) -> object:
    if name == "__version__":
        value: object = _version()
    elif name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME, "__version__"})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cvg-policy")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.1.0"


# For the type checker, the names as if imported here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .checks import check as check
    from .errors import Finding as Finding
    from .errors import PolicyError as PolicyError
    from .load import LoadedPolicy as LoadedPolicy
    from .load import load_policy as load_policy
    from .load import read_policy_file as read_policy_file
    from .render import render_json as render_json
    from .render import render_yaml as render_yaml

    __version__: str
