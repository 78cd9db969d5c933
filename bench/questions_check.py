"""Check a whole question set against second paths, on the CPU (corpus scale; the tests run
samples of the same checks):

- every Python question with a call (exec-output, test-output, bug-locate indices): the
  numba-cuda simulator runs the family's kernel (reference or mutant) and must write the
  stored answer (for test-output and bug-locate: the reference, resp. the mutant);
- every Python launch question: the simulator records the host code's launches;
- C++ exec-output questions (``--cpp N`` of them): the question's kernel built with the CUDA
  emulator of ``tests/families/cuemu`` on the CPU must write the stored answer (not a GPU:
  C++ mutant questions stay unverified until ``scripts/questions_gpu.py`` has run on one).

    python bench/questions_check.py [--source questions:seed=2026,count=400] [--cpp 40] [--json OUT]

Prints one line per disagreement and a summary; exit 1 if anything disagreed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from cudaenv.problems.loader import load_suite  # noqa: E402
from cudaenv.questions import adapter, cases, launches  # noqa: E402
from cudaenv.questions.kinds_code import case_from_record  # noqa: E402
from cudaenv.questions.kinds_launch import py_shapes  # noqa: E402
from cudaenv.questions.model import Question  # noqa: E402
from cudaenv.questions.simulate import SimJob, run_jobs  # noqa: E402


def _variant_source(q: Question) -> str:
    r = adapter.render(q.family or "", q.metadata["params"])
    if q.kind == "test-output" or q.variant == "reference":
        return r.reference.source
    return next(v.source for v in r.mutants() if v.name == q.variant)


def _want(q: Question) -> np.ndarray | None:
    """The output the question's kernel must leave (None: the answer is not an output)."""
    if q.kind in ("exec-output", "test-output"):
        return np.array(q.expected, dtype=float).reshape(-1)
    return None


def check_python(questions: list[Question]) -> tuple[int, list[str]]:
    calls = [q for q in questions if q.language == "cuda_python" and "case" in q.metadata]
    runs = [q for q in questions if q.language == "cuda_python" and q.kind == "launch"]
    jobs = []
    for q in calls:
        case = case_from_record(q.metadata["case"])
        jobs.append(SimJob(_variant_source(q), q.metadata["case"]["function"], q.metadata["case"]["args"],
                           case.arrays, case.output))  # fmt: skip
    for q in runs:
        r = adapter.render(q.family or "", q.metadata["params"])
        shapes = py_shapes(r, q.metadata["sizes"])
        arrays = {n: np.zeros(s, dtype=cases.dtype_of(r, n)) for n, s in shapes.items()}
        jobs.append(SimJob(r.reference.source, r.interface.function, list(shapes), arrays,
                           r.interface.outputs()[0], record_launches=True, run_kernels=False))  # fmt: skip
    bad = []
    for q, res in zip(calls + runs, run_jobs(jobs), strict=True):
        if res.error:
            bad.append(f"{q.task_id}: simulator error {res.error}")
        elif q.kind == "launch":
            plan = launches.plan(q.family or "", q.metadata["params"], q.metadata["sizes"])
            got = [(x["kernel"], tuple(x["grid"]), tuple(x["block"])) for x in res.launches]
            if got != [(la.kernel, la.grid, la.block) for la in plan.launches]:
                bad.append(f"{q.task_id}: launches {got}")
        elif (want := _want(q)) is not None:
            if not np.array_equal(res.output.astype(float).reshape(-1), want):  # type: ignore[union-attr]
                bad.append(f"{q.task_id}: simulator wrote {res.output.tolist()}")  # type: ignore[union-attr]
        elif q.kind == "bug-locate":  # the stored indices are where the mutant differs
            r = adapter.render(q.family or "", q.metadata["params"])
            from cudaenv.questions import semantics

            ref = semantics.expected(r, case_from_record(q.metadata["case"])).reshape(-1)
            wrong = sorted(int(i) for i in np.flatnonzero(res.output.reshape(-1) != ref))  # type: ignore[union-attr]
            if wrong != sorted(q.expected):
                bad.append(f"{q.task_id}: the simulated mutant differs at {wrong}")
    return len(jobs), bad


def check_cpp(questions: list[Question], limit: int) -> tuple[int, list[str]]:
    from tests.questions.emulated import run_emulated

    picked = [q for q in questions if q.language == "cuda_cpp" and q.kind == "exec-output"][:limit]
    bad = []
    for q in picked:
        with tempfile.TemporaryDirectory(prefix="questions-emu-") as tmp:
            try:
                got = run_emulated(q, Path(tmp))
            except Exception as exc:  # a build failure is a disagreement worth reporting
                bad.append(f"{q.task_id}: emulator failed {str(exc)[:300]}")
                continue
        want = np.array(q.expected, dtype=float).reshape(-1)
        if got.shape != want.shape or not np.array_equal(got, want):
            bad.append(f"{q.task_id} ({q.variant}): emulator wrote {got.tolist()}")
    return len(picked), bad


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", default="questions:seed=2026,count=400,unverified=1")
    ap.add_argument("--cpp", type=int, default=40, help="C++ exec-output questions to emulate")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    started = time.monotonic()
    suite = list(load_suite(args.source))
    n_py, bad_py = check_python(suite)
    n_cpp, bad_cpp = check_cpp(suite, args.cpp)
    for line in bad_py + bad_cpp:
        print("DISAGREES", line)
    summary = {"source": args.source, "questions": len(suite), "python_checked": n_py,
               "python_disagreements": len(bad_py), "cpp_emulated": n_cpp,
               "cpp_disagreements": len(bad_cpp), "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps({**summary, "disagreements": bad_py + bad_cpp}, indent=1))
    sys.exit(1 if bad_py or bad_cpp else 0)


if __name__ == "__main__":
    main()
