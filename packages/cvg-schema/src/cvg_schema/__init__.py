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
"""

from .base import KIND_NAMES, SCHEMA_VERSION, SUPPORTED_MAJOR, CvgModel, MessageBase
from .errors import SchemaError, json_type
from .explanation import ExplainedDenial, Explanation, Risk, RiskLevel
from .facts import Facts, Feature, StraceInfo
from .io import (
    KINDS,
    Message,
    digest,
    digest_bytes,
    dumps,
    json_schema,
    load_dict,
    load_policy_dict,
    loads,
    loads_as,
    model_for,
    read,
    read_as,
    read_bytes,
    schema_bytes,
    write_atomic,
)
from .observation import Event, EventOp, Executable, Observation
from .plan import (
    ABI_OF_FS_RIGHT,
    FS_RIGHTS,
    Arch,
    Capabilities,
    Degradation,
    Expansion,
    FsRight,
    FsRule,
    Landlock,
    LandlockFlag,
    NetRight,
    NetRule,
    Plan,
    PlanEnvironment,
    PlanSource,
    RlimitName,
    RlimitValue,
    Scope,
    Seccomp,
    SocketFamily,
    SocketFamilyName,
    SocketRule,
    SocketTypeName,
)
from .policy import (
    POLICY_SECTIONS,
    POLICY_VARIABLES,
    Filesystem,
    Ipc,
    Network,
    Policy,
    PolicyEnvironment,
    Reason,
    Resources,
    Syscalls,
)
from .run import Denial, ExitInfo, ExitMeaning, Mechanism, RunRecord, Scratch, Timings

__version__ = "0.1.0"

__all__ = [
    "ABI_OF_FS_RIGHT",
    "FS_RIGHTS",
    "KINDS",
    "KIND_NAMES",
    "POLICY_SECTIONS",
    "POLICY_VARIABLES",
    "SCHEMA_VERSION",
    "SUPPORTED_MAJOR",
    "Arch",
    "Capabilities",
    "CvgModel",
    "Degradation",
    "Denial",
    "Event",
    "EventOp",
    "Executable",
    "ExitInfo",
    "ExitMeaning",
    "Expansion",
    "ExplainedDenial",
    "Explanation",
    "Facts",
    "Feature",
    "Filesystem",
    "FsRight",
    "FsRule",
    "Ipc",
    "Landlock",
    "LandlockFlag",
    "Mechanism",
    "Message",
    "MessageBase",
    "NetRight",
    "NetRule",
    "Network",
    "Observation",
    "Plan",
    "PlanEnvironment",
    "PlanSource",
    "Policy",
    "PolicyEnvironment",
    "Reason",
    "Resources",
    "Risk",
    "RiskLevel",
    "RlimitName",
    "RlimitValue",
    "RunRecord",
    "SchemaError",
    "Scope",
    "Scratch",
    "Seccomp",
    "SocketFamily",
    "SocketFamilyName",
    "SocketRule",
    "SocketTypeName",
    "StraceInfo",
    "Syscalls",
    "Timings",
    "__version__",
    "digest",
    "digest_bytes",
    "dumps",
    "json_schema",
    "json_type",
    "load_dict",
    "load_policy_dict",
    "loads",
    "loads_as",
    "model_for",
    "read",
    "read_as",
    "read_bytes",
    "schema_bytes",
    "write_atomic",
]
