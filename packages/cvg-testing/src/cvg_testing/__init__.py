"""Test support shared by cvg's packages: standard library and pytest only.

With CI=true a skipped test is a failure (see :mod:`cvg_testing.plugin`), unless it
names the Landlock ABI it needs and this kernel lacks it.
"""

from cvg_testing.ci import below_abi, in_ci, kernel_abi, needs_abi, require_abi
from cvg_testing.staging import import_path_for, stage, unpriv_python, world_readable_dir
from cvg_testing.users import UNPRIV_USER, drop_to, ensure_unpriv_user

__all__ = [
    "UNPRIV_USER",
    "below_abi",
    "drop_to",
    "ensure_unpriv_user",
    "import_path_for",
    "in_ci",
    "kernel_abi",
    "needs_abi",
    "require_abi",
    "stage",
    "unpriv_python",
    "world_readable_dir",
]
