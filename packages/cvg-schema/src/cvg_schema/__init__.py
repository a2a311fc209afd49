"""cvg's message contract: pydantic models and JSON Schemas for every cvg message.

Every message is a JSON object with ``kind`` and ``schema_version``:

=================== ==================== ==========================================
kind                model                made by
=================== ==================== ==========================================
``cvg.facts``       :class:`Facts`       cvg-probe
``cvg.policy``      :class:`Policy`      cvg-generate, a person
``cvg.plan``        :class:`Plan`        cvg-validate --compile, cvg-run
``cvg.observation`` :class:`Observation` cvg-observe, cvg-import
``cvg.run``         :class:`RunRecord`   cvg-run
``cvg.explanation`` :class:`Explanation` cvg-explain
=================== ==================== ==========================================

Read with :func:`loads` / :func:`read` (dispatching on ``kind``) or :func:`loads_as` /
:func:`read_as` (one expected kind); a bare policy dict goes through
:func:`load_policy_dict`. Every problem is a :class:`SchemaError`, one line naming the
first error by JSON path. Write with :func:`dumps` and :func:`write_atomic`.

The names load on first use, each with its module: a program that imports only a
submodule (``cvg_schema.console`` for its command line) does not pay for pydantic and
the models until it touches one.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Each public name, by the module that defines it.
_MODULES = {
    "base": "KIND_NAMES SCHEMA_VERSION SUPPORTED_MAJOR CvgModel MessageBase",
    "errors": "SchemaError json_type",
    "explanation": "ExplainedDenial Explanation Risk RiskLevel",
    "facts": "Facts Feature StraceInfo",
    "io": (
        "KINDS Message digest digest_bytes dumps json_schema load_dict "
        "load_policy_dict loads loads_as model_for read read_as read_bytes "
        "schema_bytes write_atomic"
    ),
    "observation": "Event EventOp Executable Observation",
    "plan": (
        "ABI_OF_FS_RIGHT FS_RIGHTS Arch Capabilities Degradation Expansion FsRight "
        "FsRule ImpliedDeny Landlock LandlockFlag NetRight NetRule Plan PlanEnvironment PlanSource "
        "RlimitName RlimitValue Scope Seccomp SocketFamily SocketFamilyName SocketRule "
        "SocketTypeName"
    ),
    "policy": (
        "POLICY_SECTIONS POLICY_VARIABLES Filesystem Ipc Network Policy "
        "PolicyEnvironment Reason Resources Syscalls"
    ),
    "run": "Denial ExitInfo ExitMeaning Mechanism ProtectedCreated RunRecord Scratch Timings",
}
_HOME = {name: module for module, names in _MODULES.items() for name in names.split()}

__all__ = sorted([*_HOME, "__version__"])


def __getattr__(name: str) -> object:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


# For the type checker, the names as if imported here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .base import KIND_NAMES as KIND_NAMES
    from .base import SCHEMA_VERSION as SCHEMA_VERSION
    from .base import SUPPORTED_MAJOR as SUPPORTED_MAJOR
    from .base import CvgModel as CvgModel
    from .base import MessageBase as MessageBase
    from .errors import SchemaError as SchemaError
    from .errors import json_type as json_type
    from .explanation import ExplainedDenial as ExplainedDenial
    from .explanation import Explanation as Explanation
    from .explanation import Risk as Risk
    from .explanation import RiskLevel as RiskLevel
    from .facts import Facts as Facts
    from .facts import Feature as Feature
    from .facts import StraceInfo as StraceInfo
    from .io import KINDS as KINDS
    from .io import Message as Message
    from .io import digest as digest
    from .io import digest_bytes as digest_bytes
    from .io import dumps as dumps
    from .io import json_schema as json_schema
    from .io import load_dict as load_dict
    from .io import load_policy_dict as load_policy_dict
    from .io import loads as loads
    from .io import loads_as as loads_as
    from .io import model_for as model_for
    from .io import read as read
    from .io import read_as as read_as
    from .io import read_bytes as read_bytes
    from .io import schema_bytes as schema_bytes
    from .io import write_atomic as write_atomic
    from .observation import Event as Event
    from .observation import EventOp as EventOp
    from .observation import Executable as Executable
    from .observation import Observation as Observation
    from .plan import ABI_OF_FS_RIGHT as ABI_OF_FS_RIGHT
    from .plan import FS_RIGHTS as FS_RIGHTS
    from .plan import Arch as Arch
    from .plan import Capabilities as Capabilities
    from .plan import Degradation as Degradation
    from .plan import Expansion as Expansion
    from .plan import FsRight as FsRight
    from .plan import FsRule as FsRule
    from .plan import ImpliedDeny as ImpliedDeny
    from .plan import Landlock as Landlock
    from .plan import LandlockFlag as LandlockFlag
    from .plan import NetRight as NetRight
    from .plan import NetRule as NetRule
    from .plan import Plan as Plan
    from .plan import PlanEnvironment as PlanEnvironment
    from .plan import PlanSource as PlanSource
    from .plan import RlimitName as RlimitName
    from .plan import RlimitValue as RlimitValue
    from .plan import Scope as Scope
    from .plan import Seccomp as Seccomp
    from .plan import SocketFamily as SocketFamily
    from .plan import SocketFamilyName as SocketFamilyName
    from .plan import SocketRule as SocketRule
    from .plan import SocketTypeName as SocketTypeName
    from .policy import POLICY_SECTIONS as POLICY_SECTIONS
    from .policy import POLICY_VARIABLES as POLICY_VARIABLES
    from .policy import Filesystem as Filesystem
    from .policy import Ipc as Ipc
    from .policy import Network as Network
    from .policy import Policy as Policy
    from .policy import PolicyEnvironment as PolicyEnvironment
    from .policy import Reason as Reason
    from .policy import Resources as Resources
    from .policy import Syscalls as Syscalls
    from .run import Denial as Denial
    from .run import ExitInfo as ExitInfo
    from .run import ExitMeaning as ExitMeaning
    from .run import Mechanism as Mechanism
    from .run import ProtectedCreated as ProtectedCreated
    from .run import RunRecord as RunRecord
    from .run import Scratch as Scratch
    from .run import Timings as Timings
