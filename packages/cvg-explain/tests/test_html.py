"""cvg-explain --format html: one self-contained page, everything from the record
escaped, each fix as a diff, a timeline of the processes that were refused."""

from __future__ import annotations

from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import record_dict, sealed

from cvg_explain.cli import main
from cvg_explain.htmlpage import TIMELINE_NOTE
from cvg_policy.load import load_policy
from cvg_schema.io import digest

HOSTILE = "/srv/<script>alert('x')</script>&amp;\"q\".txt"
POLICY = "version: 1\nfilesystem:\n  read: [/usr]\n"
START = datetime.fromisoformat("2026-11-29T12:00:00+00:00").timestamp()


class Page(HTMLParser):
    """The tags, attributes and text of a page, and whether it parsed whole."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.open: list[str] = []
        self.classes: dict[str, list[str]] = {}
        self._where: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        cls = dict(attrs).get("class") or ""
        self._where.append(cls)

    def handle_endtag(self, tag: str) -> None:
        if self._where:
            self._where.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._where and self._where[-1]:
            self.classes.setdefault(self._where[-1], []).append(data)


def _page(tmp_path: Path, capsys: pytest.CaptureFixture[str], denials: list[dict[str, Any]],
          **extra: Any) -> tuple[str, Page]:  # fmt: skip
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY)
    data = record_dict(denials, policy_path=str(policy))
    data["policy_digest"] = digest(load_policy(POLICY, filename=str(policy)).policy)
    data.update(extra)
    rec = tmp_path / "run.json"
    rec.write_text(sealed(data))
    rc = main(["--format", "html", str(rec)])
    out, err = capsys.readouterr()
    assert (rc, err) == (0, "")
    page = Page()
    page.feed(out)
    page.close()
    return out, page


def test_a_hostile_path_is_text_never_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    denial = {"syscall": "openat", "path": HOSTILE, "mechanism": "landlock_fs",
              "right": "read_file", "errno": "EACCES", "pid": 4242, "time": START + 0.25,
              "detail": "<img src=x onerror=alert(1)>"}  # fmt: skip
    out, page = _page(tmp_path, capsys, [denial], argv=["python3", "<b>tool</b>.py"])
    assert page.tags.count("script") == 0 and "img" not in page.tags and "b" not in page.tags
    assert "<script>alert" not in out and "<img" not in out
    text = "".join(page.text)
    assert HOSTILE in text  # shown as it is, once decoded
    assert "<img src=x onerror=alert(1)>" in text and "<b>tool</b>.py" in text
    # Self-contained: no script, no stylesheet or image to fetch, no link anywhere.
    assert {"script", "link", "img", "iframe", "object"}.isdisjoint(page.tags)
    assert not [a for a in page.attrs if a[0] in ("src", "href")]
    assert page.tags.count("style") == 1


def test_denials_fixes_as_diffs_and_the_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    denials = [
        {"syscall": "openat", "path": "/srv/data.txt", "mechanism": "landlock_fs",
         "right": "read_file", "errno": "EACCES", "pid": 100, "time": START + 0.1},
        {"syscall": "ptrace", "mechanism": "seccomp", "errno": "EPERM", "pid": 101,
         "time": START + 0.9},
    ]  # fmt: skip
    out, page = _page(tmp_path, capsys, denials)
    text = "".join(page.text)
    assert "Denials (2)" in text and "cvg run 20261129T120000Z-0a1b2c3d" in text
    assert "+  read: [/usr, /srv/data.txt]" in page.classes["add"]
    assert "-  read: [/usr]" in page.classes["del"]
    assert "high" in page.classes["risk risk-high"] and "low" in page.classes["risk risk-low"]
    assert TIMELINE_NOTE in text
    assert "process 100" in text and "process 101" in text
    assert "d1 at 0.100 s" in text and "d2 at 0.900 s" in text
    assert 'style="left:10.0%"' in out and 'style="left:90.0%"' in out


def test_an_untraced_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, page = _page(tmp_path, capsys, [], traced=False)
    text = "".join(page.text)
    assert "Denials (0)" in text and "None recorded." in text
    assert "to have each denial named" in text
    assert "No denial names its process and time." in text
