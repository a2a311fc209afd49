"""An explanation as one self-contained HTML page: the run, each denial with its cause,
rule, risk and fix as a coloured diff, and a timeline of the tool's processes.

Inline CSS only: no script, no external file, so the page can be mailed or attached to
a ticket and opened anywhere. Everything that comes from the record (paths, argv,
details: all chosen by the tool that ran) is HTML-escaped.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from html import escape

from cvg_schema import Explanation
from cvg_schema.explanation import ExplainedDenial
from cvg_schema.run import Denial, RunRecord

from .change import deliberate

__all__ = ["TIMELINE_NOTE", "render_html"]

TIMELINE_NOTE = (
    "The run record keeps no process events, only denials: this timeline shows the run "
    "from its start to its end and, for each process that was refused something, when "
    "each of its denials came (the first time, for a denial repeated several times). "
    "Processes that were refused nothing do not appear."
)

_UNTRACED = "no: run with <code>cvg-run --trace</code> to have each denial named"
_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em;
       padding: 0 1em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
code, pre, .mono { font-family: ui-monospace, monospace; font-size: 13px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .3em .6em;
         border-bottom: 1px solid #ddd; }
th { width: 10em; color: #555; font-weight: 600; }
.denial { border: 1px solid #ccc; border-radius: 6px; padding: .6em 1em; margin: 1em 0; }
.denial h3 { margin: 0 0 .4em; font-size: 1em; overflow-wrap: anywhere; }
.risk { padding: 0 .4em; border-radius: 4px; font-weight: 600; }
.risk-low { background: #dff0d8; } .risk-medium { background: #fcf3cf; }
.risk-high { background: #f8d7da; }
pre.diff { background: #f7f7f7; padding: .5em; overflow-x: auto; }
pre.diff .add { background: #e6ffec; display: block; }
pre.diff .del { background: #ffebe9; display: block; }
pre.diff .hunk { color: #6f42c1; display: block; }
.note { color: #555; }
.lane { position: relative; height: 1.4em; background: #f2f2f2; border-radius: 3px; }
.span { position: absolute; top: .55em; height: .3em; background: #9bb7d4; }
.mark { position: absolute; top: .1em; width: .5em; height: 1.2em; margin-left: -.25em;
        background: #c0392b; border-radius: 2px; }
td.lanecell { width: 75%; }
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _target(d: Denial) -> str:
    if d.path is not None:
        return d.path
    return f"port {d.port}" if d.port is not None else ""


def _rows(pairs: Iterable[tuple[str, str]]) -> list[str]:
    return [f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in pairs]


def _run_table(record: RunRecord, record_name: str | None) -> list[str]:
    ex = record.exit
    status = f"{ex.status} ({ex.meaning})" + (f": {ex.detail}" if ex.detail else "")
    policy = "the embedded default policy"
    if record.policy_path:
        policy = f"<code>{_e(record.policy_path)}</code>"
    pairs = [
        ("command", f"<code>{_e(shlex.join(record.argv))}</code>"),
        ("working directory", f"<code>{_e(record.cwd)}</code>"),
        ("policy", policy),
        ("exit", _e(status)),
        ("started", _e(record.started.isoformat())),
        ("ended", _e(record.ended.isoformat())),
        ("wall clock", _e(f"{record.timings.wall_seconds:.3f} s")),
        ("traced", "yes" if record.traced else _UNTRACED),
    ]
    if record_name:
        pairs.insert(0, ("record", f"<code>{_e(record_name)}</code>"))
    if record.degraded:
        items = "".join(f"<li>{_e(d.item)}: {_e(d.reason)}</li>" for d in record.degraded)
        pairs.append(("degraded", f"<ul>{items}</ul>"))
    return ["<table>", *_rows(pairs), "</table>"]


def _diff(text: str) -> str:
    out = []
    for line in text.splitlines():
        kind = ""
        if line.startswith(("+++", "---")):
            kind = ""
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("@@"):
            kind = "hunk"
        out.append(f'<span class="{kind}">{_e(line)}</span>' if kind else _e(line))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def _denial(e: ExplainedDenial) -> list[str]:
    d = e.denial
    how = ", ".join(x for x in (d.mechanism, d.right, d.errno) if x)
    head = f"{_e(d.id)} <code>{_e(d.syscall)}</code> <span class=mono>{_e(_target(d))}</span>"
    pairs = [("how", _e(how)), ("cause", _e(e.cause)),
             ("rule", f"<code>{_e(e.rule)}</code>" if e.rule else "(none)")]  # fmt: skip
    if d.pid is not None:
        pairs.append(("process", _e(d.pid)))
    if d.detail:
        pairs.append(("detail", f'<span class="mono">{_e(d.detail)}</span>'))
    if e.risk is not None:
        level = _e(e.risk.level)
        pairs.append(("risk", f'<span class="risk risk-{level}">{level}</span> {_e(e.risk.text)}'))
    if e.fix is not None:
        pairs.append(("fix", _diff(e.fix)))
    elif e.rule is None:
        pairs.append(("fix", "none: no policy change allows this"))
    elif deliberate(e.rule):
        pairs.append(("fix", f"none written: <code>{_e(e.rule)}</code> denies it on purpose"))
    else:
        pairs.append(("fix", f"not written: <code>{_e(e.rule)}</code> needs a value this run "
                             "did not show"))  # fmt: skip
    return ['<div class="denial">', f"<h3>{head}</h3>", "<table>", *_rows(pairs),
            "</table>", "</div>"]  # fmt: skip


def _timeline(record: RunRecord) -> list[str]:
    start, end = record.started.timestamp(), record.ended.timestamp()
    length = max(end - start, 1e-6)
    by_pid: dict[int, list[tuple[float, str]]] = {}
    for d in record.denials:
        if d.pid is not None and d.time is not None:
            by_pid.setdefault(d.pid, []).append((d.time, d.id))

    def at(t: float) -> float:
        return round(min(max((t - start) / length, 0.0), 1.0) * 100, 2)

    out = ["<h2>Timeline</h2>", f'<p class="note">{_e(TIMELINE_NOTE)}</p>', "<table>"]
    out.append(f"<tr><th>run</th><td class=lanecell><div class=lane><div class=span "
               f'style="left:0%;width:100%"></div></div></td><td class=mono>0.000 s to '
               f"{length:.3f} s</td></tr>")  # fmt: skip
    for pid in sorted(by_pid, key=lambda p: min(t for t, _ in by_pid[p])):
        times = sorted(by_pid[pid])
        first, last = at(times[0][0]), at(times[-1][0])
        marks = "".join(
            f'<div class=mark style="left:{at(t)}%" title="{_e(i)} at {t - start:.3f} s"></div>'
            for t, i in times
        )
        ids = ", ".join(f"{_e(i)} at {t - start:.3f} s" for t, i in times)
        out.append(
            f"<tr><th>process {_e(pid)}</th><td class=lanecell><div class=lane>"
            f'<div class=span style="left:{first}%;width:{max(last - first, 0.3)}%"></div>'
            f"{marks}</div></td><td class=mono>{ids}</td></tr>"
        )
    if not by_pid:
        out.append('<tr><td colspan=3 class="note">No denial names its process and time.</td></tr>')
    out.append("</table>")
    return out


def render_html(explanation: Explanation, record: RunRecord, record_name: str | None = None) -> str:
    """The whole page."""
    title = f"cvg run {explanation.run_id or record.run_id}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]
    if explanation.summary:
        parts.append(f"<p>{_e(explanation.summary)}</p>")
    parts += _run_table(record, record_name)
    parts.append(f"<h2>Denials ({len(explanation.denials)})</h2>")
    if not explanation.denials:
        parts.append('<p class="note">None recorded.</p>')
    for e in explanation.denials:
        parts += _denial(e)
    parts += _timeline(record)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
