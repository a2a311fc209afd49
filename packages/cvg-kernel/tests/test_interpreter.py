"""exec_interpreter: what exec of a file also opens."""

from __future__ import annotations

import os
from pathlib import Path

from cvg_kernel.interpreter import exec_interpreter


def test_script_names_its_hashbang_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "s"
    script.write_bytes(b"#!/bin/sh -e\necho hi\n")
    assert exec_interpreter(str(script)) == "/bin/sh"


def test_relative_or_empty_hashbang_names_nothing(tmp_path: Path) -> None:
    for text in (b"#!sh\n", b"#!\n", b"#!   \n"):
        (tmp_path / "s").write_bytes(text)
        assert exec_interpreter(str(tmp_path / "s")) is None


def test_dynamic_elf_names_its_loader() -> None:
    loader = exec_interpreter(os.path.realpath("/bin/sh"))
    assert loader is not None and loader.startswith("/")


def test_unreadable_or_plain_files_name_nothing(tmp_path: Path) -> None:
    (tmp_path / "t").write_bytes(b"\x7fELF" + b"\0" * 10)
    assert exec_interpreter(str(tmp_path / "t")) is None
    assert exec_interpreter(str(tmp_path / "missing")) is None
    assert exec_interpreter("bad\0path") is None
