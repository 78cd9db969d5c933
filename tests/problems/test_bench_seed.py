"""Benchmark inputs are fresh each round for every bundled problem.

A fixed benchmark input could be recognised by a solution and answered from memory. A token
harness draws its inputs from the grader's per-round ``CUDAENV_BENCH_SEED`` (the contract in
AUTHORING.md; the grader side: tests/grading/test_pristine_stages.py); a split harness's
trusted checker draws every run's inputs itself and no seed reaches the runner
(tests/grading/test_split_grading.py). Every bundled benchmarked cuda_cpp problem is split now,
so none depends on the seed contract.
"""

from __future__ import annotations

from cudaenv.problems import load_suite


def test_every_benchmarked_bundled_problem_draws_fresh_inputs_in_its_checker() -> None:
    suite = load_suite("builtin")
    benchmarked = {p.task_id for p in suite if p.has_benchmark}
    assert benchmarked, "the bundled suite has benchmarked problems"
    token = sorted(p.task_id for p in suite if p.task_id in benchmarked and not p.split)
    assert token == [], f"benchmarked on the completion-token harness: {token}"


def test_no_bundled_runner_reads_the_bench_seed() -> None:
    """The seed is the token harness's contract; a split runner that read it would be reading
    something the checker never sees."""
    for p in load_suite("builtin"):
        for f in p.test_files:
            assert "CUDAENV_BENCH_SEED" not in f.content, (p.task_id, f.path)
