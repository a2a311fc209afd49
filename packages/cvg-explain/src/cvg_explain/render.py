"""An explanation as text for a person: one block per denial, its fix diff indented."""

from __future__ import annotations

from cvg_schema import Explanation
from cvg_schema.run import Denial

from .change import deliberate

__all__ = ["render_text"]


def _what(d: Denial) -> str:
    if d.rule == "network.hosts" and d.mechanism == "supervisor" and d.detail:
        return d.detail
    target = d.path if d.path is not None else (f"port {d.port}" if d.port is not None else "")
    how = ", ".join(x for x in (d.mechanism, d.right, d.errno) if x)
    return f"{d.syscall} {target}".rstrip() + f"  ({how})"


def render_text(explanation: Explanation, record_name: str | None = None) -> str:
    lines: list[str] = []
    head = f"run {explanation.run_id}" if explanation.run_id else "run"
    if record_name:
        head += f" ({record_name})"
    lines.append(f"{head}: {explanation.summary or ''}".rstrip(": "))
    for e in explanation.denials:
        d = e.denial
        lines.append("")
        lines.append(f"{d.id}  {_what(d)}")
        lines.append(f"  cause: {e.cause}")
        lines.append(f"  rule:  {e.rule or '(none)'}")
        if e.fix is None:
            if e.rule is None:
                lines.append("  fix:   none (no policy change allows this)")
            elif deliberate(e.rule):
                lines.append(f"  fix:   none written: {e.rule} denies it on purpose")
            else:
                # The rule is known but not its value (a port the tool never named).
                lines.append(f"  fix:   not written: {e.rule} needs a value this run did not show")
            continue
        if e.risk is not None:
            lines.append(f"  risk:  {e.risk.level}: {e.risk.text}")
        lines.append("  fix:")
        lines.extend("    " + line for line in e.fix.splitlines())
    return "\n".join(lines) + "\n"
