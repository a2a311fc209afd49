"""cvg-explain: explain each denial of a cvg run: cause, rule, smallest fix as a YAML diff,
and its risk.

>>> from cvg_explain import explain
>>> explanation = explain(record)                      # the policy the record names
>>> explanation = explain(record, policy_path="p.yaml")  # or another file
>>> explanation = explain(record, policy_text=text)      # or text already in hand
"""

from .explain import (
    ExplainError,
    Fixes,
    PolicySource,
    apply_changes,
    explain,
    merge_changes,
    plan_fixes,
    policy_source,
)

__all__ = [
    "ExplainError",
    "Fixes",
    "PolicySource",
    "apply_changes",
    "explain",
    "merge_changes",
    "plan_fixes",
    "policy_source",
]

__version__ = "0.1.0"
