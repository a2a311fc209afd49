"""PT_INTERP and #! chains, read with the standard library only."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from cvg_observe.elf import elf_interpreter, executable_chain, shebang


def make_elf(path: Path, interp: bytes | None, *, bits: int = 64, big: bool = False) -> None:
    """A minimal ELF file: the header, two program headers (PT_LOAD, PT_INTERP)."""
    e = ">" if big else "<"
    ident = b"\x7fELF" + bytes([2 if bits == 64 else 1, 2 if big else 1, 1]) + bytes(9)
    if bits == 64:
        ehsize, phentsize = 64, 56
        phoff = ehsize
        data_off = phoff + 2 * phentsize
        header = ident + struct.pack(
            e + "HHIQQQIHHHHHH", 2, 62, 1, 0, phoff, 0, 0, ehsize, phentsize, 2, 64, 0, 0
        )
        load = struct.pack(e + "IIQQQQQQ", 1, 5, 0, 0, 0, 0, 0, 0x1000)
        pt = struct.pack(
            e + "IIQQQQQQ", 3 if interp else 4, 4, data_off, 0, 0, len(interp or b""), 0, 1
        )
    else:
        ehsize, phentsize = 52, 32
        phoff = ehsize
        data_off = phoff + 2 * phentsize
        header = ident + struct.pack(
            e + "HHIIIIIHHHHHH", 2, 3, 1, 0, phoff, 0, 0, ehsize, phentsize, 2, 40, 0, 0
        )
        load = struct.pack(e + "IIIIIIII", 1, 0, 0, 0, 0, 0, 5, 0x1000)
        pt = struct.pack(
            e + "IIIIIIII", 3 if interp else 4, data_off, 0, 0, len(interp or b""), 0, 4, 1
        )
    assert len(header) == ehsize
    path.write_bytes(header + load + pt + (interp or b""))


@pytest.mark.parametrize(("bits", "big"), [(64, False), (64, True), (32, False), (32, True)])
def test_pt_interp_of_crafted_files(tmp_path: Path, bits: int, big: bool) -> None:
    f = tmp_path / "prog"
    make_elf(f, b"/lib/ld-test.so.1\0", bits=bits, big=big)
    assert elf_interpreter(str(f)) == "/lib/ld-test.so.1"


def test_static_non_elf_and_missing(tmp_path: Path) -> None:
    static = tmp_path / "static"
    make_elf(static, None)
    assert elf_interpreter(str(static)) is None
    text = tmp_path / "text"
    text.write_text("hello\n")
    assert elf_interpreter(str(text)) is None
    assert elf_interpreter(str(tmp_path / "missing")) is None
    truncated = tmp_path / "truncated"
    truncated.write_bytes(b"\x7fELF\x02\x01\x01")
    assert elf_interpreter(str(truncated)) is None


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
def test_pt_interp_agrees_with_readelf() -> None:
    sh = shutil.which("sh")
    assert sh is not None
    out = subprocess.run(["readelf", "-l", sh], capture_output=True, text=True, check=True).stdout
    expected = out.split("Requesting program interpreter: ", 1)[1].split("]", 1)[0]
    assert elf_interpreter(sh) == expected


def test_shebang_chain(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    make_elf(tmp_path / "interp", b"/lib/ld-x.so\0")
    inner.write_text(f"#!{tmp_path / 'interp'} -flag\n")
    outer = tmp_path / "outer"
    outer.write_text(f"#! {inner}\nbody\n")
    assert shebang(str(outer)) == str(inner)
    assert executable_chain(str(outer)) == ([str(inner), str(tmp_path / "interp")], "/lib/ld-x.so")
    assert executable_chain(str(tmp_path / "interp")) == ([], "/lib/ld-x.so")


def test_relative_shebang_is_taken_against_cwd(tmp_path: Path) -> None:
    make_elf(tmp_path / "interp", b"/lib/ld-y.so\0")
    script = tmp_path / "s"
    script.write_text("#!./interp\n")
    assert executable_chain(str(script), str(tmp_path)) == (
        [str(tmp_path / "interp")],
        "/lib/ld-y.so",
    )


def test_shebang_loop_stops(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text(f"#!{a}\n")
    chain, interp = executable_chain(str(a))
    assert chain == [str(a)] * 5 and interp is None
