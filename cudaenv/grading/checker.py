"""The trusted checker of a split harness: fresh inputs for every run, and the verdict on outputs.

A split problem (``Problem.checker``) has a RUNNER, built with (or importing) the solution, that
only turns inputs into outputs, and a CHECKER that never loads solution code and alone decides.
Per run of the solution (the test run, each sanitizer tool, each benchmark round):

1. ``gen`` in the checker's sandbox draws the run's inputs from a fresh 63-bit seed;
2. :meth:`Checker.lay` copies them into the solution's workspace as ``.cudaenv-io/in/`` (an
   empty ``out/`` beside), and the grader runs the stage's command with ``CUDAENV_IO`` set;
3. once every process of that run is dead (``pristine.settle``), :meth:`Checker.collect`
   copies ``.cudaenv-io/out/`` out: regular files only, named ``<case>/<name>``, never through
   a link, within a size budget; whatever else is there is refused and reported;
4. the workspace is re-laid from the build's snapshot (``.cudaenv-io`` goes as an added file);
5. ``verify`` in the checker's sandbox compares every output with its own reference;
   :meth:`Checker.judge` makes the stage ``ok`` only if the runner exited 0 and it passed.

The checker's sandbox and the test run's inputs are drawn while the solution builds
(:meth:`Checker.prefetch`: neither needs a solution file), and each later run's inputs (a
sanitizer tool's, a benchmark round's) while ``verify`` decides the run before it (the
solution's processes are all dead by then), so a grading waits for one Python start (``verify``)
per run and the file copies.

Why this closes the completion-token families (a solution that steals the secret, exits 0 from
a constructor, or interposes ``memcmp`` in the harness): no secret exists in the solution's
process, and nothing in it decides. The checker's sandbox is a fresh one from the grading
factory into which no solution file is ever written, and its commands start only after every
process of the solution's run was killed and confirmed dead: no process of the solution
exists while the checker runs, so none can signal or trace it (its sandbox also has its own
pid namespace, where the backend gives one). A checker that crashes, times out or prints no
decision is our fault: :class:`CheckerFault`, an infrastructure failure, never the solution's.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shlex
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from cudaenv.errors import CudaEnvError
from cudaenv.grading.gpu_work import Watch, judge_report
from cudaenv.grading.stages import TOKEN_PREFIX, StageInfrastructureFault
from cudaenv.grading.verdict import StageResult
from cudaenv.problems.model import Problem
from cudaenv.sandbox import Sandbox

Stage = Literal["test", "perf"]
IO_DIR = ".cudaenv-io"
IO_ENV = "CUDAENV_IO"
#: the most output bytes one run may hand the checker (bigger files are refused, not read)
MAX_OUTPUT_BYTES = 1 << 30
#: the least time each checker command gets (gen and verify of large cases take seconds)
MIN_CHECKER_TIMEOUT_S = 60.0
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_OUTPUT = re.compile(rf"{_NAME}/{_NAME}\Z")
_INPUT = re.compile(rf"(manifest\.txt|{_NAME}/{_NAME}\.npy)\Z")
# the listing of the outputs: type, size, path (NUL-separated); only if both folders are real
_LIST = (
    f"if [ -d {IO_DIR} ] && [ ! -L {IO_DIR} ] && [ -d {IO_DIR}/out ] && [ ! -L {IO_DIR}/out ]; "
    f"then find {IO_DIR}/out -mindepth 1 -maxdepth 3 -printf '%y %s %P\\0'; "
    "else echo REPLACED; fi"
)


class CheckerFault(StageInfrastructureFault):
    """The checker (trusted code) crashed, timed out or gave no decision: never the solution's."""


class CheckReport(BaseModel):
    """What ``verify`` decided (its last stdout line)."""

    model_config = ConfigDict(extra="forbid")
    passed: bool
    cases: int
    failures: list[str]


@dataclass
class CheckedRun:
    """One run of the solution under the checker: its seed, inputs and collected outputs."""

    stage: Stage
    seed: int
    folder: str  # the run's folder in the checker's sandbox
    inputs: dict[str, bytes]
    outputs: dict[str, bytes] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    # on a GPU, the profiler on the run (cudaenv.grading.gpu_work): its variables and report
    watch: Watch | None = None
    watch_env: dict[str, str] = field(default_factory=dict)
    report: bytes | None = None

    @property
    def env(self) -> dict[str, str]:
        """What the runner's command gets (no seed, no secret: the inputs carry everything)."""
        return {IO_ENV: IO_DIR, **self.watch_env}


def checker_digest(problem: Problem) -> str:
    """What the checker's decisions depend on (a test outcome's cache key takes it)."""
    if problem.checker is None:
        return ""
    files = sorted((f.path, f.content) for f in problem.check_files)
    blob = json.dumps([problem.checker.model_dump(mode="json"), files])
    return hashlib.sha256(blob.encode()).hexdigest()


def imitations(stdout: str) -> list[str]:
    """forge_results: a split runner prints no completion line, so one in its output is the
    solution imitating the old harness (a flag only: the checker decides regardless)."""
    if TOKEN_PREFIX in stdout:
        return ["printed a completion line, which no split harness prints (forged)"]
    return []


class Checker:
    """The checker of one grading (or baseline pass): one fresh sandbox, many runs."""

    def __init__(
        self,
        problem: Problem,
        make_sandbox: Callable[[], Sandbox],
        env: Callable[[Sandbox], dict[str, str]],
        timeout: float,
    ) -> None:
        assert problem.checker is not None, "a split problem only"
        self.problem, self.spec = problem, problem.checker
        self._make, self._env = make_sandbox, env
        self.timeout = max(MIN_CHECKER_TIMEOUT_S, timeout)
        self._box: Sandbox | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._runs = 0
        self._ahead: Future[CheckedRun] | None = None  # the next run, drawn ahead

    def prefetch(self, stage: Stage) -> None:
        """Draw the next ``stage`` run's inputs in the background (the checker's sandbox and
        ``gen`` need no solution file, so they overlap the solution's build); one draw ahead
        at a time."""
        if self._ahead is not None:
            return
        future: Future[CheckedRun] = Future()

        def draw() -> None:
            try:
                future.set_result(self._start(stage))
            except BaseException as exc:  # delivered to start(), or dropped with the grading
                future.set_exception(exc)

        self._ahead = future
        threading.Thread(target=draw, name="cudaenv-checker-gen", daemon=True).start()

    def wait(self) -> None:
        """Let a background draw finish (before the sandboxes close); its errors are dropped."""
        if self._ahead is not None:
            wait([self._ahead])

    def close(self) -> None:
        """Close the checker's sandbox (closing twice is harmless). A draw still running is
        stopped with it: a grading that ends early (a failed build) does not wait for inputs
        it will never lay."""
        with self._lock:
            self._closed = True
            box, self._box = self._box, None
        if box is not None:
            box.close()
        self.wait()

    def _sandbox(self) -> Sandbox:
        """The checker's sandbox, made on first use: only the check files, built once."""
        if self._box is None:
            if self._closed:
                raise CheckerFault("the checker was closed")
            box = self._make()
            with self._lock:
                if self._closed:  # closed while it was being made
                    box.close()
                    raise CheckerFault("the checker was closed")
                self._box = box
            for f in self.problem.check_files:
                box.write_file(f.path, f.content)
            if self.spec.build_command:
                self._run(self.spec.build_command, "build", box)
            return box
        return self._box

    def _run(self, command: str, what: str, box: Sandbox | None = None) -> str:
        box = box or self._sandbox()
        res = box.exec(command, timeout=self.timeout, env=self._env(box))
        if res.timed_out or res.exit_code != 0:
            how = "timed out" if res.timed_out else f"exit code {res.exit_code}"
            tail = (res.stderr or res.stdout).strip()[-1500:]
            raise CheckerFault(f"the checker's {what} failed ({how}): {tail}")
        return res.stdout

    def _command(self, sub: str, run: CheckedRun) -> str:
        args = f"{sub} --stage {run.stage} --seed {run.seed} --dir {shlex.quote(run.folder)}/in"
        return f"{self.spec.command} {args}"

    def start(self, stage: Stage) -> CheckedRun:
        """A new run: a fresh seed, and the inputs ``gen`` drew from it (drawn ahead by
        :meth:`prefetch` where it was asked for this stage)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            run = ahead.result()  # its CheckerFault, if any, is raised here
            if run.stage == stage:
                return run
        return self._start(stage)

    def _start(self, stage: Stage) -> CheckedRun:
        box = self._sandbox()
        self._runs += 1
        run = CheckedRun(stage, secrets.randbits(63), f"runs/{self._runs}", {})
        self._run(self._command("gen", run), f"gen ({stage})", box)
        prefix = f"{run.folder}/in/"
        for rel in box.list_files():
            if rel.startswith(prefix):
                name = rel[len(prefix) :]
                if not _INPUT.match(name):
                    raise CheckerFault(f"the checker's gen wrote {name!r} (not an input name)")
                run.inputs[name] = box.read_file(rel)
        if "manifest.txt" not in run.inputs:
            raise CheckerFault(f"the checker's gen ({stage}) wrote no manifest.txt")
        return run

    @staticmethod
    def lay(box: Sandbox, run: CheckedRun) -> None:
        """Put the run's inputs into ``box`` (nothing of the solution runs now), an empty
        ``out/`` beside them."""
        res = box.exec(f"rm -rf ./{IO_DIR} && mkdir -p ./{IO_DIR}/out", timeout=60)
        if res.exit_code != 0:
            raise StageInfrastructureFault(f"cannot lay the inputs: {res.stderr.strip()[-300:]}")
        for name, data in run.inputs.items():
            box.write_file(f"{IO_DIR}/in/{name}", data)

    @staticmethod
    def collect(box: Sandbox, run: CheckedRun) -> None:
        """Take the outputs out of ``box``: call only when every process of the run is dead.
        Regular files named ``<case>/<name>`` are read (within :data:`MAX_OUTPUT_BYTES`); a
        link, a special file, a deeper path or an odd name is refused and listed."""
        if run.watch is not None:  # the profiler's report, before the re-lay removes it
            try:
                run.report = box.read_file(run.watch.report)
            except (OSError, CudaEnvError):
                run.report = None
        res = box.exec(_LIST, timeout=60)
        if res.stdout.strip() == "REPLACED":
            run.refused.append(f"{IO_DIR}/out: replaced by something that is not a folder")
            return
        if res.truncated:
            run.refused.append("the outputs: too many entries to list")
            return
        budget = MAX_OUTPUT_BYTES  # read at call time (a test may lower it)
        for entry in filter(None, res.stdout.split("\0")):
            kind, size, rel = entry.split(" ", 2) if entry.count(" ") >= 2 else ("?", "0", entry)
            if kind == "d" and "/" not in rel:
                continue  # a case's folder
            why = None
            if kind != "f":
                why = "a link" if kind == "l" else "not a regular file"
            elif not _OUTPUT.match(rel):
                why = "not <case>/<name>"
            elif int(size) > budget:
                why = f"{size} bytes: over the output budget"
            if why:
                run.refused.append(f"{rel!r}: {why}")
                continue
            budget -= int(size)
            run.outputs[rel] = box.read_file(f"{IO_DIR}/out/{rel}")
        box.exec(f"rm -rf ./{IO_DIR}", timeout=60)

    def verify(self, run: CheckedRun) -> CheckReport:
        """The checker's decision on the run's outputs."""
        box = self._sandbox()
        for rel, data in run.outputs.items():
            box.write_file(f"{run.folder}/out/{rel}", data)
        folder = shlex.quote(run.folder)
        verify = f"{self._command('verify', run)} --outputs {folder}/out"
        # one command: the (maybe empty) outputs folder, the decision, the run's files gone
        text = self._run(
            f"mkdir -p {folder}/out && {{ {verify}; }}; rc=$?; rm -rf {folder}; exit $rc",
            f"verify ({run.stage})",
            box,
        )
        lines = text.strip().splitlines()
        try:
            return CheckReport.model_validate(json.loads(lines[-1]))
        except (IndexError, ValueError, ValidationError) as exc:
            raise CheckerFault(f"the checker's verify gave no decision: {text[-500:]!r}") from exc

    def judge(self, stage: StageResult, run: CheckedRun, ahead: Stage | None = None) -> StageResult:
        """The stage's result: ``ok`` only if the runner exited 0 and the checker passed every
        output (verify is skipped for a runner that failed: it already decided the stage).

        ``ahead``: the stage of the run that follows a pass, drawn (:meth:`prefetch`) while
        ``verify`` runs. Call only when every process of the solution's run is dead: the
        checker then runs alongside nothing of the solution."""
        notes = [f"[outputs refused] {r}" for r in run.refused]
        seeds = [*stage.seeds, run.seed]
        if stage.status != "ok":
            tail = "\n".join([stage.output_tail, *notes])
            return stage.model_copy(update={"seeds": seeds, "output_tail": tail[-4000:]})
        if ahead is not None:
            self.prefetch(ahead)
        report = self.verify(run)
        lines = [f"[checker] {run.stage}: {report.cases} case(s), seed {run.seed}"]
        lines += [f"[checker] {m}" for m in report.failures]
        tail = "\n".join([stage.output_tail, *notes, *lines])[-4000:]
        off_gpu = judge_report(run.report, run.watch) if run.watch and report.passed else []
        if report.passed and not off_gpu:
            return stage.model_copy(update={"seeds": seeds, "output_tail": tail})
        if off_gpu:  # right outputs, but not computed by the GPU
            reason = f"work not on the GPU: {off_gpu[0]}"
            tail = "\n".join([tail, *(f"[gpu work] {m}" for m in off_gpu)])[-4000:]
            update = {"status": "failed", "reason": reason, "seeds": seeds, "output_tail": tail}
            return stage.model_copy(update=update)
        first = report.failures[0] if report.failures else "outputs rejected"
        more = f" (+{len(report.failures) - 1} more)" if len(report.failures) > 1 else ""
        return stage.model_copy(
            update={
                "status": "failed",
                "reason": f"wrong outputs: {first}{more}",
                "seeds": seeds,
                "output_tail": tail,
            }
        )


__all__ = [
    "IO_DIR",
    "IO_ENV",
    "CheckReport",
    "CheckedRun",
    "Checker",
    "CheckerFault",
    "checker_digest",
    "imitations",
]
