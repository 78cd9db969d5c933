"""Two independent paths for the Python questions: the numba-cuda simulator runs the family's
own kernels (references and mutants) and must write exactly what the host reference semantics
and the mutant models say; it records what the host code launches, and the shared arrays each
kernel declares are read from its source: both must equal the closed forms. ``bench/questions_check.py`` runs
the same checks over whole question sets."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="the simulator comes with the python extra (numba-cuda)")

from cudaenv.questions import adapter, cases, launches, mutants, semantics
from cudaenv.questions.generate import generate_questions
from cudaenv.questions.kinds_code import case_from_record
from cudaenv.questions.kinds_launch import py_shapes
from cudaenv.questions.simulate import SimJob, SimResult, run_jobs, shared_arrays

PY = ["py-reduce-axis", "py-elementwise", "py-scan", "py-stencil", "py-permute"]
EXEC = generate_questions(count=6, seed=21, kinds=["exec-output"], families=PY)
LAUNCH = generate_questions(count=6, seed=21, kinds=["launch"], families=[*PY, "py-rownorm"])


def _mutant_jobs() -> list[tuple[str, str, np.ndarray, SimJob]]:
    """Every modelled mutant of one parameter set per Python family, on one exact case."""
    out = []
    for fam in PY:
        rng = random.Random(f"mutants:{fam}")
        while True:
            r = adapter.render(fam, adapter.draw_params(fam, rng))
            case = cases.draw_case(r, rng)
            if case is None:
                continue
            try:
                semantics.expected(r, case)
            except semantics.NotExact:
                continue
            models = [(v, mutants.mutant_output(r, v, case)) for v in r.mutants()]
            if sum(m is not None for _, m in models) >= 2:
                break
        args = [p.name for p in r.interface.params]
        for v, model in [m for m in models if m[1] is not None][:3]:
            if model is not None:
                job = SimJob(
                    v.source,
                    r.interface.function,
                    args,
                    {k: a.copy() for k, a in case.arrays.items()},
                    case.output,
                )
                out.append((fam, v.name, model, job))
    return out


@functools.cache
def _simulated() -> tuple[
    list[SimResult], list[tuple[str, str, np.ndarray, SimJob]], list[SimResult]
]:
    """One simulator process for every check of this module."""
    exec_jobs = []
    for q in EXEC:
        r = adapter.render(q.family, q.metadata["params"])
        v = (
            r.reference
            if q.variant == "reference"
            else next(m for m in r.mutants() if m.name == q.variant)
        )
        case = case_from_record(q.metadata["case"])
        exec_jobs.append(
            SimJob(
                v.source, r.interface.function, q.metadata["case"]["args"], case.arrays, case.output
            )
        )
    mut = _mutant_jobs()
    launch_jobs = []
    for q in LAUNCH:
        r = adapter.render(q.family, q.metadata["params"])
        shapes = py_shapes(r, q.metadata["sizes"])
        arrays = {n: np.zeros(s, dtype=cases.dtype_of(r, n)) for n, s in shapes.items()}
        launch_jobs.append(SimJob(r.reference.source, r.interface.function, list(shapes), arrays,
                                  r.interface.outputs()[0], record_launches=True, run_kernels=False))  # fmt: skip
    results = run_jobs(exec_jobs + [j for *_, j in mut] + launch_jobs)
    n, m = len(exec_jobs), len(mut)
    return (
        results[:n],
        list(zip([x[:3] for x in mut], results[n : n + m], strict=True)),
        results[n + m :],
    )  # type: ignore[return-value]


def test_python_exec_output_answers_are_what_the_simulator_computes() -> None:
    assert {q.variant for q in EXEC} - {"reference"}, "the sample holds mutants too"
    for q, res in zip(EXEC, _simulated()[0], strict=True):
        assert res.error is None, (q.task_id, res.error)
        assert res.output is not None and res.output.tolist() == np.array(q.expected).tolist(), (
            q.task_id
        )


def test_every_python_mutant_model_agrees_with_the_simulator() -> None:
    checked = _simulated()[1]
    assert {fam for (fam, _, _), _ in checked} == set(PY)
    for (fam, name, model), res in checked:
        assert res.error is None, (fam, name, res.error)
        assert res.output is not None and res.output.dtype == model.dtype, (fam, name)
        assert np.array_equal(res.output, model), (fam, name, res.output.tolist(), model.tolist())


def test_launch_closed_forms_are_what_the_host_code_launches() -> None:
    for q, res in zip(LAUNCH, _simulated()[2], strict=True):
        assert res.error is None, (q.task_id, res.error)
        plan = launches.plan(q.family, q.metadata["params"], q.metadata["sizes"])
        got = [(x["kernel"], tuple(x["grid"]), tuple(x["block"])) for x in res.launches]
        assert got == [(la.kernel, la.grid, la.block) for la in plan.launches], q.task_id


@pytest.mark.parametrize("family", [*PY, "py-rownorm"])
def test_shared_memory_closed_forms_are_what_the_kernels_declare(family: str) -> None:
    rng = random.Random(f"shared:{family}")
    for _ in range(4):
        r = adapter.render(family, adapter.draw_params(family, rng))
        declared = shared_arrays(r.reference.source)
        sizes = {"rows": 3, "cols": 5, "n": 40, "batch": 2, **{f"d{i}": 2 + i for i in range(4)}}
        for launch in launches.plan(family, r.params, sizes).launches:
            assert declared[launch.kernel] == launch.shared_bytes, (family, r.params, launch.kernel)
