"""Test support shared by cvg's packages: standard library and pytest only.

With CI=true a skipped test is a failure (see :mod:`cvg_testing.plugin`), unless one of
the kernel helpers here raised it (:class:`KernelLacks`) and the kernel still lacks
the feature.
"""

from cvg_testing.ci import (
    KernelLacks,
    below_abi,
    in_ci,
    kernel_abi,
    needs_abi,
    require_abi,
    require_below_abi,
    require_yama,
)
from cvg_testing.fork import (
    Child,
    Spawned,
    attempt,
    attempt_name,
    errname,
    exit_child,
    in_child,
    spawn,
    stdio_from,
)
from cvg_testing.procs import alive
from cvg_testing.sink import Sink
from cvg_testing.staging import (
    import_path_for,
    shared_dir,
    stage,
    unpriv_python,
    world_readable_dir,
)
from cvg_testing.stats import wilson
from cvg_testing.tree import Tree, Under, tree_root
from cvg_testing.users import UNPRIV_USER, drop_to, ensure_unpriv_user, identities
from cvg_testing.web import TextServer

__all__ = [
    "UNPRIV_USER",
    "Child",
    "KernelLacks",
    "Sink",
    "Spawned",
    "TextServer",
    "Tree",
    "Under",
    "alive",
    "attempt",
    "attempt_name",
    "below_abi",
    "drop_to",
    "ensure_unpriv_user",
    "errname",
    "exit_child",
    "identities",
    "import_path_for",
    "in_child",
    "in_ci",
    "kernel_abi",
    "needs_abi",
    "require_abi",
    "require_below_abi",
    "require_yama",
    "shared_dir",
    "spawn",
    "stage",
    "stdio_from",
    "tree_root",
    "unpriv_python",
    "wilson",
    "world_readable_dir",
]
