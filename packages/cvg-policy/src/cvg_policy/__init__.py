"""cvg-policy: load, check, explain and compile cvg policies (``cvg-validate``).

:func:`load_policy` reads YAML or JSON into a :class:`LoadedPolicy` (the validated
:class:`cvg_schema.Policy` and the line of every rule); :func:`check` finds what the
schema cannot (missing paths, unknown syscalls, risky grants); :func:`render_yaml`
writes a policy back with each rule's reasons as comments. Every problem is a
:class:`PolicyError` or a :class:`Finding`, one line naming file, line and rule.
"""

from importlib.metadata import PackageNotFoundError, version

from .checks import check
from .errors import Finding, PolicyError
from .load import LoadedPolicy, load_policy, read_policy_file
from .render import render_json, render_yaml

try:
    __version__ = version("cvg-policy")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.1.0"

__all__ = [
    "Finding",
    "LoadedPolicy",
    "PolicyError",
    "__version__",
    "check",
    "load_policy",
    "read_policy_file",
    "render_json",
    "render_yaml",
]
