"""The README is a first screen: it opens with the two commands that set everything up
on a fresh machine, and everything past a short tour lives in docs/, so it stays short."""

from __future__ import annotations

from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_LINES = 150
# The main job, then every check: what a newcomer types first, in this order.
COMMANDS = ["uv run cvg-run -- python3 -c 'print(1)'", "uv run nox"]


def first_screen_problems(text: str) -> list[str]:
    """What keeps ``text`` from being the README's first screen (empty when it is)."""
    lines = text.splitlines()
    problems = []
    if len(lines) > MAX_LINES:
        problems.append(f"{len(lines)} lines, more than {MAX_LINES}: move sections to docs/")
    # The title, a blank line, then the commands' block before anything else.
    if lines[:3] != ["# cvg", "", "```sh"]:
        problems.append("does not open with '# cvg' and then a ```sh block")
        return problems
    block = lines[3 : lines.index("```", 3)] if "```" in lines[3:] else lines[3:]
    commands = [line.split("#")[0].strip() for line in block]
    if commands != COMMANDS:
        problems.append(f"its first block runs {commands}, not {COMMANDS}")
    return problems


def test_the_readme_opens_with_the_two_commands_and_fits_a_screen() -> None:
    problems = first_screen_problems(README.read_text(encoding="utf-8"))
    assert not problems, "README.md: " + "; ".join(problems)


OPENING = (
    "# cvg\n\n```sh\nuv run cvg-run -- python3 -c 'print(1)'   # main\nuv run nox  # all\n```\n"
)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (OPENING + "tour\n" * (MAX_LINES - 6), None),
        (OPENING + "tour\n" * (MAX_LINES - 5), "more than 150"),
        ("# cvg\n\nintro\n\n" + OPENING.split("\n\n", 1)[1], "does not open with"),
        (OPENING.replace("uv run nox  # all\n", ""), "first block runs"),
        (OPENING.replace("uv run nox", "uv run nox -s lint"), "first block runs"),
        (OPENING.replace("-- python3", "-p p.yaml -- python3"), "first block runs"),
    ],
)
def test_the_check_sees_a_readme_that_grew_or_lost_its_commands(
    text: str, problem: str | None
) -> None:
    problems = first_screen_problems(text)
    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems
