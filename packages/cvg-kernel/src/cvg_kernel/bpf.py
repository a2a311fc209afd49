"""Classic BPF for seccomp: an assembler, an interpreter and a disassembler.

Only the subset a seccomp filter needs is supported: 32-bit absolute loads from
``seccomp_data``, ``and`` with a constant, forward jumps comparing against a
constant, and returning a constant action. Keeping the subset this small means
the interpreter here can be trusted to say exactly what the kernel will do, so
programs for other architectures can be checked without running them, and a
compiled plan can be explained rule by rule.

An instruction is the tuple ``(code, jt, jf, k)`` of ``struct sock_filter``.
"""

from __future__ import annotations

import errno as _errno
import struct

# collections.abc is this module, behind the collections package: its imports cost
# every cold start milliseconds.
from _collections_abc import Mapping, Sequence

from .record import Record

Instruction = tuple[int, int, int, int]

# Opcode fields (linux/bpf_common.h).
BPF_LD = 0x00
BPF_ALU = 0x04
BPF_JMP = 0x05
BPF_RET = 0x06
BPF_W = 0x00
BPF_ABS = 0x20
BPF_K = 0x00
BPF_AND = 0x50
BPF_JA = 0x00
BPF_JEQ = 0x10
BPF_JGT = 0x20
BPF_JGE = 0x30
BPF_JSET = 0x40

# The complete set of opcodes emitted and understood here.
LD_W_ABS = BPF_LD | BPF_W | BPF_ABS
ALU_AND_K = BPF_ALU | BPF_AND | BPF_K
JMP_JA = BPF_JMP | BPF_JA
JMP_JEQ_K = BPF_JMP | BPF_JEQ | BPF_K
JMP_JGT_K = BPF_JMP | BPF_JGT | BPF_K
JMP_JGE_K = BPF_JMP | BPF_JGE | BPF_K
JMP_JSET_K = BPF_JMP | BPF_JSET | BPF_K
RET_K = BPF_RET | BPF_K

_CONDITIONAL = {JMP_JEQ_K: "jeq", JMP_JGT_K: "jgt", JMP_JGE_K: "jge", JMP_JSET_K: "jset"}

BPF_MAXINSNS = 4096
# jt/jf are u8 offsets; anything further needs an unconditional ja (32-bit offset).
MAX_SHORT_JUMP = 0xFF

# struct seccomp_data { int nr; u32 arch; u64 instruction_pointer; u64 args[6]; },
# little-endian on both supported architectures, so the low word of a u64 comes first.
SECCOMP_DATA_NR = 0
SECCOMP_DATA_ARCH = 4
SECCOMP_DATA_IP = 8
SECCOMP_DATA_SIZE = 64


def arg_low(i: int) -> int:
    """Offset of the low 32 bits of ``args[i]``."""
    if not 0 <= i < 6:
        raise BpfError(f"seccomp_data has args[0..5], not args[{i}]")
    return 16 + 8 * i


def arg_high(i: int) -> int:
    """Offset of the high 32 bits of ``args[i]``."""
    return arg_low(i) + 4


# include/uapi/linux/audit.h: what seccomp_data.arch holds.
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_ARM = 0x40000028
AUDIT_ARCH_NAMES = {
    AUDIT_ARCH_X86_64: "AUDIT_ARCH_X86_64",
    AUDIT_ARCH_I386: "AUDIT_ARCH_I386",
    AUDIT_ARCH_AARCH64: "AUDIT_ARCH_AARCH64",
    AUDIT_ARCH_ARM: "AUDIT_ARCH_ARM",
}

# Filter return values (include/uapi/linux/seccomp.h).
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_KILL_THREAD = 0x00000000
SECCOMP_RET_TRAP = 0x00030000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_USER_NOTIF = 0x7FC00000
SECCOMP_RET_TRACE = 0x7FF00000
SECCOMP_RET_LOG = 0x7FFC0000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ACTION_FULL = 0xFFFF0000
SECCOMP_RET_DATA = 0x0000FFFF

_ACTION_NAMES = {
    SECCOMP_RET_KILL_PROCESS: "KILL_PROCESS",
    SECCOMP_RET_KILL_THREAD: "KILL_THREAD",
    SECCOMP_RET_TRAP: "TRAP",
    SECCOMP_RET_ERRNO: "ERRNO",
    SECCOMP_RET_USER_NOTIF: "USER_NOTIF",
    SECCOMP_RET_TRACE: "TRACE",
    SECCOMP_RET_LOG: "LOG",
    SECCOMP_RET_ALLOW: "ALLOW",
}
# TRACE without a tracer answers ENOSYS and a dying strace turns it into ENOSYS for
# everything; USER_NOTIF races on pointer arguments. Neither is a boundary, so the
# assembler refuses to emit them rather than rely on every caller remembering.
_REFUSED_ACTIONS = {SECCOMP_RET_TRACE, SECCOMP_RET_USER_NOTIF}


class BpfError(ValueError):
    """A program that is malformed or outside the supported subset."""


def ret_errno(err: int) -> int:
    """The action that makes the syscall fail with ``err``."""
    if not 0 < err <= SECCOMP_RET_DATA:
        raise BpfError(f"errno {err} does not fit SECCOMP_RET_DATA")
    return SECCOMP_RET_ERRNO | err


def action_name(action: int) -> str:
    """``ALLOW``, ``KILL_PROCESS``, ``ERRNO(EPERM)``..., for people and explanations."""
    base = action & SECCOMP_RET_ACTION_FULL
    data = action & SECCOMP_RET_DATA
    name = _ACTION_NAMES.get(base)
    if name is None:
        return f"0x{action:08x}"
    if base == SECCOMP_RET_ERRNO:
        return f"ERRNO({_errno.errorcode.get(data, str(data))})"
    return name if data == 0 else f"{name}({data})"


def _check_u32(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 0xFFFFFFFF:
        raise BpfError(f"constant {k!r} is not an unsigned 32-bit integer")
    return k


def _check_offset(offset: int) -> int:
    # seccomp_check_filter() accepts only aligned word loads inside seccomp_data.
    if not isinstance(offset, int) or offset % 4 or not 0 <= offset < SECCOMP_DATA_SIZE:
        raise BpfError(f"load offset {offset!r} is not an aligned word inside seccomp_data")
    return offset


class _Op(Record, frozen=False):
    code: int
    k: int
    jt: str | None = None  # label, or None for the next instruction
    jf: str | None = None
    comment: str = ""


class Assembler:
    """Builds a program with symbolic forward labels.

    Conditional jumps name their targets by label, or ``None`` for "fall through to
    the next instruction". Labels are resolved in :meth:`assemble`; a conditional
    target further than 255 instructions away gets an unconditional ``ja``
    trampoline placed right after the jump.
    """

    def __init__(self) -> None:
        self._ops: list[_Op] = []
        self._labels: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ops)

    def label(self, name: str) -> None:
        if name in self._labels:
            raise BpfError(f"label {name!r} defined twice")
        self._labels[name] = len(self._ops)

    def load(self, offset: int, comment: str = "") -> None:
        self._ops.append(_Op(LD_W_ABS, _check_offset(offset), comment=comment))

    def and_(self, k: int, comment: str = "") -> None:
        self._ops.append(_Op(ALU_AND_K, _check_u32(k), comment=comment))

    def jeq(self, k: int, jt: str | None, jf: str | None = None, comment: str = "") -> None:
        self._cond(JMP_JEQ_K, k, jt, jf, comment)

    def jgt(self, k: int, jt: str | None, jf: str | None = None, comment: str = "") -> None:
        self._cond(JMP_JGT_K, k, jt, jf, comment)

    def jge(self, k: int, jt: str | None, jf: str | None = None, comment: str = "") -> None:
        self._cond(JMP_JGE_K, k, jt, jf, comment)

    def jset(self, k: int, jt: str | None, jf: str | None = None, comment: str = "") -> None:
        self._cond(JMP_JSET_K, k, jt, jf, comment)

    def ja(self, target: str, comment: str = "") -> None:
        self._ops.append(_Op(JMP_JA, 0, jt=target, comment=comment))

    def ret(self, action: int, comment: str = "") -> None:
        if (action & SECCOMP_RET_ACTION_FULL) in _REFUSED_ACTIONS:
            raise BpfError(f"refusing to emit {action_name(action)}: it is not a boundary")
        self._ops.append(_Op(RET_K, _check_u32(action), comment=comment))

    def ret_supervised(self, comment: str = "") -> None:
        """USER_NOTIF for a call the supervisor decides and performs itself
        (:mod:`cvg_kernel.guard`). Not a boundary by itself: it holds because the
        supervisor never answers CONTINUE where an argument could change under it, and
        with nobody listening the kernel answers ENOSYS."""
        self._ops.append(_Op(RET_K, SECCOMP_RET_USER_NOTIF, comment=comment))

    def _cond(self, code: int, k: int, jt: str | None, jf: str | None, comment: str) -> None:
        self._ops.append(_Op(code, _check_u32(k), jt=jt, jf=jf, comment=comment))

    def _target(self, index: int, label: str | None) -> int:
        """Index of the op a jump from op ``index`` lands on."""
        if label is None:
            target = index + 1
        else:
            if label not in self._labels:
                raise BpfError(f"jump to undefined label {label!r}")
            target = self._labels[label]
            if target <= index:
                raise BpfError(f"jump to {label!r} goes backwards; BPF jumps only go forward")
        if target >= len(self._ops):
            raise BpfError(f"jump to {label or 'the next instruction'!r} runs off the end")
        return target

    def assemble_annotated(self) -> list[tuple[Instruction, str]]:
        """Like :meth:`assemble`, with each instruction's comment (trampolines say so)."""
        ops = self._ops
        if not ops or ops[-1].code != RET_K:
            raise BpfError("a program must end with ret")
        targets: list[tuple[int, int]] = []
        for i, op in enumerate(ops):
            if op.code == JMP_JA:
                targets.append((self._target(i, op.jt), -1))
            elif op.code in _CONDITIONAL:
                targets.append((self._target(i, op.jt), self._target(i, op.jf)))
            else:
                targets.append((-1, -1))

        # Trampolines only ever lengthen distances, so marking is monotonic and the
        # loop reaches a fixed point.
        far_t = [False] * len(ops)
        far_f = [False] * len(ops)
        while True:
            pos: list[int] = []
            p = 0
            for i in range(len(ops)):
                pos.append(p)
                p += 1 + far_t[i] + far_f[i]
            changed = False
            for i, op in enumerate(ops):
                if op.code not in _CONDITIONAL:
                    continue
                base = pos[i] + 1
                t, f = targets[i]
                if not far_t[i] and pos[t] - base > MAX_SHORT_JUMP:
                    far_t[i] = changed = True
                if not far_f[i] and pos[f] - base > MAX_SHORT_JUMP:
                    far_f[i] = changed = True
            if not changed:
                break
        if p > BPF_MAXINSNS:
            raise BpfError(f"program has {p} instructions; the kernel allows {BPF_MAXINSNS}")

        out: list[tuple[Instruction, str]] = []
        for i, op in enumerate(ops):
            base = pos[i] + 1
            t, f = targets[i]
            if op.code == JMP_JA:
                out.append(((JMP_JA, 0, 0, pos[t] - base), op.comment))
            elif op.code in _CONDITIONAL:
                jt = 0 if far_t[i] else pos[t] - base
                jf = int(far_t[i]) if far_f[i] else pos[f] - base
                out.append(((op.code, jt, jf, op.k), op.comment))
                if far_t[i]:
                    out.append(((JMP_JA, 0, 0, pos[t] - (base + 1)), "long jump"))
                if far_f[i]:
                    out.append(((JMP_JA, 0, 0, pos[f] - (base + 1 + far_t[i])), "long jump"))
            else:
                out.append(((op.code, 0, 0, op.k), op.comment))
        validate([insn for insn, _ in out])
        return out

    def assemble(self) -> list[Instruction]:
        """Resolve labels and return the program as ``(code, jt, jf, k)`` tuples."""
        return [insn for insn, _ in self.assemble_annotated()]


def validate(program: Sequence[Instruction]) -> None:
    """Raise :class:`BpfError` unless ``program`` is in the supported subset and well-formed.

    Mirrors the kernel's own checks: known opcodes, jumps that stay inside the
    program, aligned loads within ``seccomp_data``, and a final ``ret``.
    """
    n = len(program)
    if not 0 < n <= BPF_MAXINSNS:
        raise BpfError(f"program length {n} is outside 1..{BPF_MAXINSNS}")
    for pc, insn in enumerate(program):
        if len(insn) != 4:
            raise BpfError(f"instruction {pc} is not (code, jt, jf, k): {insn!r}")
        code, jt, jf, k = insn
        if not (0 <= jt <= 0xFF and 0 <= jf <= 0xFF):
            raise BpfError(f"instruction {pc}: jt/jf out of u8 range")
        _check_u32(k)
        if code == LD_W_ABS:
            _check_offset(k)
        elif code == JMP_JA:
            if pc + 1 + k >= n:
                raise BpfError(f"instruction {pc}: ja runs off the end")
        elif code in _CONDITIONAL:
            if pc + 1 + max(jt, jf) >= n:
                raise BpfError(f"instruction {pc}: jump runs off the end")
        elif code not in (ALU_AND_K, RET_K):
            raise BpfError(f"instruction {pc}: opcode 0x{code:02x} is not supported")
    if program[-1][0] != RET_K:
        raise BpfError("a program must end with ret")


def seccomp_data(nr: int, arch: int, args: Sequence[int] = (), ip: int = 0) -> bytes:
    """The 64-byte ``struct seccomp_data`` the kernel hands a filter."""
    if len(args) > 6:
        raise BpfError("a syscall has at most 6 arguments")
    full = [a & 0xFFFFFFFFFFFFFFFF for a in args] + [0] * (6 - len(args))
    return struct.pack("<IIQ6Q", nr & 0xFFFFFFFF, arch & 0xFFFFFFFF, ip & 0xFFFFFFFFFFFFFFFF, *full)


def trace(
    program: Sequence[Instruction], nr: int, arch: int, args: Sequence[int] = (), ip: int = 0
) -> tuple[int, tuple[int, ...]]:
    """Run ``program`` as the kernel would; return the action and the pcs visited.

    The last visited pc is the ``ret`` that decided, which is what an explanation
    of a denial points at. ``nr`` and ``args`` may be negative; they are taken
    modulo 2**32 and 2**64 like the kernel's ``int`` and ``u64`` fields.
    """
    validate(program)
    data = seccomp_data(nr, arch, args, ip)
    a = 0
    pc = 0
    visited: list[int] = []
    while True:
        visited.append(pc)
        code, jt, jf, k = program[pc]
        if code == RET_K:
            return k, tuple(visited)
        if code == LD_W_ABS:
            a = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == ALU_AND_K:
            a &= k
            pc += 1
        elif code == JMP_JA:
            pc += 1 + k
        else:
            if code == JMP_JEQ_K:
                taken = a == k
            elif code == JMP_JGT_K:
                taken = a > k
            elif code == JMP_JGE_K:
                taken = a >= k
            else:
                taken = (a & k) != 0
            pc += 1 + (jt if taken else jf)


def evaluate(
    program: Sequence[Instruction], nr: int, arch: int, args: Sequence[int] = (), ip: int = 0
) -> int:
    """The action ``program`` returns for this syscall (see :func:`trace`)."""
    return trace(program, nr, arch, args, ip)[0]


def _field_name(offset: int) -> str:
    if offset == SECCOMP_DATA_NR:
        return "nr"
    if offset == SECCOMP_DATA_ARCH:
        return "arch"
    if offset < 16:
        return "ip" if offset == SECCOMP_DATA_IP else "ip high"
    i, half = divmod(offset - 16, 8)
    return f"args[{i}] {'high' if half else 'low'}"


def disassemble(
    program: Sequence[Instruction],
    *,
    syscall_names: Mapping[int, str] | None = None,
    comments: Sequence[str] | None = None,
) -> str:
    """Render ``program`` one instruction a line, jump targets as absolute pcs.

    Where the accumulator provably holds ``nr`` (or ``arch``), compared constants are
    named from ``syscall_names`` (or the audit arch names).
    """
    validate(program)
    n = len(program)
    # What A holds on entry to each pc: a set of load offsets (None = unknown).
    # Jumps only go forward, so one pass in program order sees every predecessor.
    holds: list[set[int | None]] = [set() for _ in range(n)]
    holds[0].add(None)
    lines: list[str] = []
    for pc, (code, jt, jf, k) in enumerate(program):
        here = holds[pc]
        source = next(iter(here)) if len(here) == 1 else None
        note = ""
        if code == LD_W_ABS:
            text = f"ld [{k}]"
            note = _field_name(k)
            after: set[int | None] = {k}
            succ = [pc + 1]
        elif code == ALU_AND_K:
            text = f"and #0x{k:x}"
            after, succ = {None}, [pc + 1]
        elif code == JMP_JA:
            text = f"ja {pc + 1 + k}"
            after, succ = here, [pc + 1 + k]
        elif code == RET_K:
            text = f"ret {action_name(k)}"
            after, succ = set(), []
        else:
            text = f"{_CONDITIONAL[code]} #0x{k:x}, {pc + 1 + jt}, {pc + 1 + jf}"
            if code == JMP_JEQ_K and source == SECCOMP_DATA_NR and syscall_names:
                note = syscall_names.get(k, "")
            elif code == JMP_JEQ_K and source == SECCOMP_DATA_ARCH:
                note = AUDIT_ARCH_NAMES.get(k, "")
            after, succ = here, [pc + 1 + jt, pc + 1 + jf]
        for s in succ:
            holds[s] |= after
        if comments is not None and pc < len(comments) and comments[pc]:
            note = f"{note}: {comments[pc]}" if note else comments[pc]
        lines.append(f"{pc:4d}: {text:<32}" + (f"; {note}" if note else "").rstrip())
    return "\n".join(line.rstrip() for line in lines) + "\n"
