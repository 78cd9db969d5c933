"""Build a generated cuda_cpp problem's runner with a solution on the CPU (cuemu.h) and run it
the way the grader runs a split harness: the checker draws the inputs, the runner writes the
outputs, the checker decides.

Only for the tests: kernel launches ``k<<<grid, block>>>(args)`` are rewritten into
``CUEMU_LAUNCH(k, grid, block, args)``; everything else compiles as C++17 with g++ against the
stand-in CUDA headers beside this file, with ``__CUDACC__`` defined so that
``cudaenv_runner.h`` brings its device helpers (DeviceArray, sync, ranges) on the stand-ins.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from cudaenv.problems.model import Problem
from tests.grading.split_harness import CheckerDir

HERE = Path(__file__).resolve().parent
IO = ".cudaenv-io"


def available() -> str | None:
    """Why emulation cannot run here (None: it can)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"cuemu switches x86-64 contexts; this machine is {platform.machine()}"
    if shutil.which("g++") is None:
        return "g++ is not installed"
    return None


def _match(text: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {open_}{close} from offset {start}")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def rewrite_launches(src: str) -> str:
    """``name<<<g, b[, smem, stream]>>>(args)`` -> ``CUEMU_LAUNCH(name, (g), (b), args)``."""
    out, pos = [], 0
    while (at := src.find("<<<", pos)) >= 0:
        name_start = at
        if src[name_start - 1] == ">":  # a template kernel: name<args><<<...
            depth = 0
            while True:
                name_start -= 1
                depth += {">": 1, "<": -1}.get(src[name_start], 0)
                if depth == 0:
                    break
        while name_start > 0 and (src[name_start - 1].isalnum() or src[name_start - 1] == "_"):
            name_start -= 1
        end_cfg = src.index(">>>", at)
        cfg = _split_top(src[at + 3 : end_cfg])
        paren = end_cfg + 3
        while src[paren].isspace():
            paren += 1
        close = _match(src, paren, "(", ")")
        args = src[paren + 1 : close - 1]
        name = src[name_start:at]
        out.append(src[pos:name_start])
        if "<" in name:  # the macro would split template arguments at their commas
            name = f"({name})"
        grid, block = cfg[0].strip(), cfg[1].strip()
        if len(cfg) > 2:  # dynamic shared memory (a stream after it runs in order anyway)
            smem = cfg[2].strip()
            out.append(f"CUEMU_LAUNCH_SMEM({name}, ({grid}), ({block}), ({smem}), {args})")
        else:
            out.append(f"CUEMU_LAUNCH({name}, ({grid}), ({block}), {args})")
        pos = close
    out.append(src[pos:])
    return EXTERN_SHARED.sub(_dynamic_shared, "".join(out))


# `extern __shared__ T name[];`: the launch's dynamic shared memory, as a pointer
EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+|alignas\(\s*\d+\s*\)\s+)?"
    r"([A-Za-z_][\w:\s]*?)\s*\b(\w+)\s*\[\s*\]\s*;"
)


def _dynamic_shared(m: re.Match[str]) -> str:
    kind, name = " ".join(m.group(1).split()), m.group(2)
    return f"{kind}* {name} = reinterpret_cast<{kind}*>(cuemu::rt.dyn_smem.data());"


@dataclass
class Run:
    """One run of a runner under its checker: the runner's exit status and output, and the
    checker's decision (``report``: passed, cases, failures)."""

    rc: int
    output: str
    report: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.rc == 0 and bool(self.report.get("passed"))


FLAGS = ["-std=c++17", "-O1", "-w", "-D__CUDACC__", "-x", "c++"]


def _cache() -> Path:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / "cuemu-objects"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _compile(workdir: Path, source: str, headers: str, extra: tuple[str, ...] = ()) -> Path:
    """One translation unit to an object, cached by its text, the headers and the flags."""
    text = (workdir / source).read_text()
    flags = [*FLAGS, *extra]
    key = hashlib.sha256("\0".join([text, headers, *flags]).encode()).hexdigest()[:32]
    obj = _cache() / f"{key}.o"
    if not obj.exists():
        tmp = obj.with_suffix(f".{os.getpid()}.tmp")
        cmd = [
            "g++", *flags, "-I", str(HERE / "include"), "-I", str(workdir / "include"),
            "-include", str(HERE / "cuemu.h"), "-c", "-o", str(tmp), str(workdir / source),
        ]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=600)
        tmp.replace(obj)
    return obj


def build(
    files: dict[str, str], workdir: Path, *, sources: list[str], flags: tuple[str, ...] = ()
) -> Path:
    """Write ``files`` (workspace paths) under ``workdir``, rewrite the ``.cu`` ones and link
    ``sources`` into ``workdir/test.out``; a failed build raises CalledProcessError. Objects
    are cached, so the harness compiles once for all the solutions it is linked with.
    ``flags`` go to every compile (``-D__CUDACC__`` gives a split runner its CUDA helpers)."""
    for rel, text in files.items():
        path = workdir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rewrite_launches(text) if rel.endswith(".cu") else text)
    emu = "".join(p.read_text() for p in sorted(HERE.rglob("*.h")))
    headers = emu + "".join(t for r, t in sorted(files.items()) if r.endswith(".h"))
    objects = [str(_compile(workdir, s, headers, flags)) for s in sources]
    out = workdir / "test.out"
    subprocess.run(["g++", "-o", str(out), *objects], check=True, capture_output=True, text=True)
    return out


def run(binary: Path, *args: str, timeout: float = 600) -> Run:
    """The binary in its folder (a split runner reads its IO folder there); no checker."""
    env = {**os.environ, "CUDAENV_IO": IO}
    try:
        done = subprocess.run(
            [str(binary), *args], cwd=binary.parent, env=env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Run(124, "timed out")
    return Run(done.returncode, done.stdout + done.stderr)


class Checked:
    """A problem's checker in its own folder: ``gen`` once per (stage, seed), then any number
    of runners judged on those inputs, as the grader does per run."""

    def __init__(self, problem: Problem, root: Path) -> None:
        self.checker = CheckerDir(problem, root)
        self.inputs: dict[tuple[str, int], Path] = {}

    def run(self, binary: Path, stage: str = "test", seed: int = 20261202) -> Run:
        key = (stage, seed)
        if key not in self.inputs:
            self.inputs[key] = self.checker.gen(stage, seed)
        io = binary.parent / IO
        shutil.rmtree(io, ignore_errors=True)
        shutil.copytree(self.inputs[key], io / "in")
        (io / "out").mkdir()
        done = run(binary, *(["--perf"] if stage == "perf" else []))
        if done.rc != 0:
            return done
        report = self.checker.verify(stage, seed, self.inputs[key], io / "out")
        return Run(done.rc, done.output, report)
