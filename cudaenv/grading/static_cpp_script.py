"""The shell script the toolchain check (:mod:`cudaenv.grading.static_cpp`) runs in the grading
sandbox, and the parser of the report it writes: per solution source, the compiler's exit code
and log, the solution's own lines of each preprocessed TU, the headers the TU's line markers
name, the device code's lines that matter (:func:`ptx_lines`), and the host object's symbols,
sections, initialiser calls and the demangled names of what it references (binutils'
``c++filt``, next to the ``nm`` and ``objdump`` it runs)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cudaenv.grading.device_code import PTX_LIBRARY_FILTER, PTX_NARROW_FILTER
from cudaenv.grading.static_cpp_plan import Plan
from cudaenv.grading.symbols import ObjectReport

_CALL_RELOCS = {"R_X86_64_PLT32", "R_X86_64_PLT64", "R_AARCH64_CALL26", "R_AARCH64_JUMP26"}


_FILTER = r"""
BEGIN { n = split(ENVIRON["CUDAENV_OWN"], a, "\n"); for (i = 1; i <= n; i++) own[a[i]] = 1;
        pwd = ENVIRON["PWD"] "/" }
/^# [0-9]+ "/ { f = $0; sub(/^# [0-9]+ "/, "", f); sub(/"[^"]*$/, "", f);
  if (index(f, pwd) == 1) f = substr(f, length(pwd) + 1);
  sub(/^\.\//, "", f); if (!(f in seen)) { seen[f] = 1; print "@@H " f }
  cur = (f in own); next }
cur { print }
"""
_NM = (
    r"""awk '$1=="U"||$1=="w"||$1=="v" {print; next} """
    r"""NF==3 && ($3 !~ /^_Z/ || $3 ~ /__sti__|^_GLOBAL__sub_I_/) {print; next} """
    r"""NF==3 && $2 ~ /^[TDBR]$/ {print; next} """
    r"""NF==3 && $3 ~ /(3cub|6thrust|7cutlass|4cute)/ && n++ < 20 {print}'"""
)


#: bytes of each kind of PTX line the report keeps (the narrow-type lines, the library kernels)
PTX_BYTES = 64_000


def ptx_lines(file_expr: str) -> str:
    """The shell commands that print what the device-code rules read from one PTX file: every
    line naming a narrow float type, then every kernel or function declaration naming a
    library's namespace. Each ``grep`` reads the whole file and keeps only its matches, so the
    bound (bytes of matches, :data:`PTX_BYTES`) is never reached by lines that do not matter:
    no number of empty kernels hides an fp16 instruction after them. ``file_expr``: the file
    as shell text (``"$p"``, or a path through :func:`shlex.quote`)."""
    q = file_expr
    return (
        f"grep -E {shlex.quote(PTX_NARROW_FILTER)} {q} | head -c {PTX_BYTES}; "
        f"grep -E {shlex.quote(PTX_LIBRARY_FILTER)} {q} | head -c {PTX_BYTES}"
    )


_FN = (
    '  for s in $(nm -S "$o/x.o" | awk \'NF==4 && $4 ~ /^_GLOBAL__sub_I_|'
    '__static_initialization_and_destruction_/ {print $4 "@" $1 "@" $2}\'); do',
    '    n=${s%%@*}; r=${s#*@}; echo "@@FN $n ${r%@*} ${r#*@}" >> "$R"',
    # only the initialiser's own section: objdump walks every section otherwise (minutes on
    # a cuDNN-frontend object of 20,000 sections), and another section's relocations at the
    # same offsets are not the initialiser's
    '    sec=$(objdump -t "$o/x.o" | awk -v n="$n" \'$NF == n {print $(NF-2); exit}\')',
    '    objdump -dr --no-show-raw-insn ${sec:+-j "$sec"} --disassemble="$n" "$o/x.o"'
    ' | grep -E \'R_[A-Z0-9_]+|call|jmp\' | tee -a "$o/fn" >> "$R"',
    "  done",
    # the demangled names of what the object references and what its initialisers call
    '  { nm -u "$o/x.o" | awk \'{print $NF}\'; grep -oE "_Z[A-Za-z0-9_.$]+" "$o/fn" 2>/dev/null; }'
    ' | grep "^_Z" | sort -u > "$o/names"',
    '  if command -v c++filt >/dev/null 2>&1; then echo "@@DEM" >> "$R";'
    ' c++filt < "$o/names" | paste "$o/names" - >> "$R"; fi',
)


def script(p: Plan, sources: list[tuple[str, bool]], report: str, kept: bool = False) -> str:
    """One shell run: compile each source to an object, keep its preprocessed TUs, print the
    solution's own lines, the headers, the symbols and the initialisers into ``report``."""
    nvcc = p.compiler == "nvcc"
    flags = " ".join(shlex.quote(f) for f in p.flags)
    lines = [
        "set -u",
        'W=$(pwd); D=$(mktemp -d "${TMPDIR:-/tmp}/cudaenv-tc.XXXXXX") || exit 97',
        "trap 'rm -rf \"$D\"' EXIT",
        f'R={shlex.quote(report)}; : > "$R"',
        f"F={shlex.quote(_FILTER)}",
        "i=0",
    ]
    stems = [PurePosixPath(src).stem for src, _ in sources]
    for src, header in sources:
        lang = ("-x cu " if nvcc else "-x c++ ") if header else ""
        keep = '-keep -keep-dir "$o"' if nvcc else "-save-temps=obj"
        q = shlex.quote(src)
        stem = PurePosixPath(src).stem
        compile_ = (
            f'{shlex.quote(p.compiler)} {flags} {lang}-c {q} -o "$o/x.o" {keep} > "$o/log" 2>&1'
        )
        if kept and nvcc and not header and src.endswith(".cu") and stems.count(stem) == 1:
            # the build's own outputs, kept by nvcc -keep (see build_env), else compile again
            k = shlex.quote(stem)
            compile_ = (
                f'if [ -f {k}.o ] && [ -f {k}.cpp4.ii ]; then cp {k}.o {k}.cpp4.ii "$o"/ && '
                f'{{ [ ! -f {k}.cpp1.ii ] || cp {k}.cpp1.ii "$o"/; }} && '
                f'{{ [ ! -f {k}.ptx ] || cp {k}.ptx "$o"/; }} && mv "$o"/{k}.o "$o/x.o"; '
                f"else {compile_}; fi"
            )
        lines += [
            'i=$((i+1)); o="$D/$i"; mkdir -p "$o"',
            f'echo "@@SRC {src}" >> "$R"',
            compile_,
            'rc=$?; echo "@@RC $rc" >> "$R"',
            'if [ $rc -ne 0 ]; then tail -c 1500 "$o/log" >> "$R"; else',
            '  for ii in "$o"/*.ii "$o"/*.i; do [ -f "$ii" ] || continue;'
            ' echo "@@II ${ii##*/}" >> "$R"; awk "$F" "$ii" >> "$R"; done',
            '  for p in "$o"/*.ptx; do [ -f "$p" ] || continue; echo "@@PTX ${p##*/}" >> "$R";'
            f' {{ {ptx_lines(chr(34) + "$p" + chr(34))}; }} >> "$R"; done',
            f'  echo "@@NM" >> "$R"; nm "$o/x.o" | {_NM} >> "$R"',
            '  echo "@@SEC" >> "$R"; readelf -SW "$o/x.o" | grep -E "\\.(init_array|ctors|preinit_array)" >> "$R"',
            *_FN,
            "fi",
        ]
    return "\n".join(lines) + "\nexit 0\n"


@dataclass
class Unit:
    """One solution source as the report describes it."""

    path: str
    rc: int = 0
    log: str = ""
    own: str = ""
    headers: list[str] | None = None
    obj: ObjectReport | None = None
    ptx: list[str] = field(default_factory=list)


def parse_report(text: str) -> list[Unit]:
    """The units of a report :func:`script` wrote, in order."""
    units: list[Unit] = []
    part = ""
    for line in text.splitlines():
        if line.startswith("@@SRC "):
            units.append(Unit(line[6:], headers=[], obj=ObjectReport()))
            part = "log"
            continue
        if not units:
            continue
        u = units[-1]
        assert u.headers is not None and u.obj is not None
        if line.startswith("@@RC "):
            u.rc = int(line[5:] or 1)
        elif line.startswith("@@II "):
            part = "own"
        elif line.startswith("@@PTX "):
            part = "ptx"
        elif line.startswith("@@H "):
            u.headers.append(line[4:])
        elif line == "@@NM":
            part = "nm"
        elif line == "@@SEC":
            part = "sec"
        elif line.startswith("@@FN "):
            words = line[5:].split()
            part = words[0]
            u.obj.init_calls[part] = []
            if len(words) == 3:  # its address and size: objdump also prints earlier relocations
                start = int(words[1], 16)
                u.obj.init_ranges[part] = (start, start + int(words[2], 16))
        elif line == "@@DEM":
            part = "dem"
        elif part == "log":
            u.log += line + "\n"
        elif part == "own":
            u.own += line + "\n"
        elif part == "ptx":
            u.ptx.append(line)
        elif part == "nm":
            u.obj.nm.append(line)
        elif part == "sec":
            u.obj.sections.append(line)
        elif part == "dem":
            mangled, _, demangled = line.partition("\t")
            if demangled and demangled != mangled:
                u.obj.demangled[mangled] = demangled
        elif part in u.obj.init_calls:
            span = u.obj.init_ranges.get(part)
            at = re.match(r"\s*([0-9a-fA-F]+):", line)
            if span and at and not span[0] <= int(at.group(1), 16) < span[1]:
                continue  # another function's line (objdump -r prints from the section start)
            if m := re.search(r"(R_[A-Z0-9_]+)\s+(\S+)", line):
                if m.group(1) in _CALL_RELOCS:  # a call; other relocations are data addresses
                    u.obj.init_calls[part].append(m.group(2))
            elif m := re.search(r"\b(call|jmp|bl|b)\s.*(<[^>]+>)", line):
                u.obj.init_calls[part].append(m.group(2))
    return units
