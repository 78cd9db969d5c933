"""The cccl sorting problems' checkers without a GPU (cub-radix-sort-pairs,
thrust-sort-by-key, thrust-unique-count).

For each: the test stage's cases, answered by NumPy written here (not the checker's own
functions), pass ``verify``; every kind of wrong output fails it, each as its own case of one
``verify`` (tests/grading/split_mutants.py): a wrong value, a NaN, a write past the end, a
missing file, a wrong dtype or shape, and the problem's own mistakes (an unstable or
descending sort, ids left behind, -0.0 for +0.0, an input sorted in place, a sentinel
overwritten, an off-by-one count). The runners call Thrust/CUB, which no CPU emulator runs:
they build with nvcc (test_split_library_build.py), and the baselines, plain kernels, run on
cuemu (test_split_library_emu.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_mutants import Run, only, passes, perf_checked, poison

SUITE = load_suite("builtin")
SEED = 20_261_129


def _run(task_id: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(SUITE[task_id], tmp_path_factory.mktemp(task_id), SEED)


# ---------------------------------------------------------------------------------------------
# cub-radix-sort-pairs: (score, id) sorted by score, descending, stable


def _ranked(c: dict[str, np.ndarray], n: int, g: int, r: int | str = "") -> dict[str, np.ndarray]:
    scores, ids = c["scores"], c["ids"]
    if r != "":
        scores, ids = scores[int(r)], ids[int(r)]
    order = np.lexsort((np.arange(n), -scores[:n].astype(np.float64)))  # ties: input order
    return {
        f"scores_out{r}": np.concatenate([scores[order], poison(np.float32, g)]),
        f"ids_out{r}": np.concatenate([ids[order], poison(np.int32, g)]),
        f"scores_in{r}": scores.copy(),
        f"ids_in{r}": ids.copy(),
    }


@pytest.fixture(scope="module")
def radix(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run("cub-radix-sort-pairs", tmp_path_factory)


def test_radix_independent_answer_passes(radix: Run) -> None:
    c = radix.inputs["all-equal-zero"]
    assert not np.signbit(c["scores"][:-1]).any() and (c["scores"][:-1] == 0).all()
    assert c["scores"][-1:].view(np.uint32)[0] == 0x7F7F7F7F  # the sentinel past the pairs
    passes(radix, lambda c: _ranked(c, int(c["n"]), int(c["guard"])))


def test_radix_mistakes_fail(radix: Run) -> None:
    case = "few-distinct"  # 7 distinct scores over 4097 pairs: ties everywhere
    c = radix.inputs[case]
    n, g = int(c["n"]), int(c["guard"])
    first_tie = int(np.flatnonzero(np.diff(_ranked(c, n, g)["scores_out"][:n]) == 0)[0])

    def unstable(out, c):  # two pairs of equal score swapped
        ids = out["ids_out"]
        ids[first_tie], ids[first_tie + 1] = ids[first_tie + 1], ids[first_tie]

    def ascending(out, c):
        out["scores_out"][:n] = out["scores_out"][:n][::-1].copy()

    def negative_zero(out, c):
        zero = int(np.flatnonzero(out["scores_out"][:n] == 0)[0])
        out["scores_out"][zero] = np.float32(-0.0)

    def ids_guard(out, c):
        out["ids_out"][n + 3] = 7

    def modified(out, c):  # sorted in place
        out["scores_in"][:n] = out["scores_out"][:n]

    def sentinel(out, c):
        out["ids_in"][n] = 0

    def nan(out, c):
        out["scores_out"][5] = np.nan

    found = radix.mutants(
        case,
        _ranked(c, n, g),
        {
            "unstable": unstable,
            "ascending": ascending,
            "negative-zero": negative_zero,
            "ids-guard": ids_guard,
            "modified": modified,
            "sentinel": sentinel,
            "nan": nan,
        },
    )
    only(
        found,
        {
            "unstable": f"ids_out: 2 of {n} elements wrong; first at index {first_tie}",
            "ascending": "scores_out (bits): ",
            "negative-zero": "scores_out (bits): 1 of",
            "ids-guard": f"ids_out past the end: 1 of {g} elements wrong; first at index 3",
            "modified": "scores_in (modified by the call): ",
            "sentinel": f"ids_in (modified by the call): 1 of {n + 1} elements wrong; first at "
            f"index {n}",
            "nan": f"scores_out (bits): 1 of {n} elements wrong; first at index 5",
        },
    )


@pytest.mark.slow  # 5 x 2^22 pairs
def test_radix_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        timed, padded = perf["scores"].shape
        g = int(perf["guard"])
        return {k: v for r in range(timed) for k, v in _ranked(perf, padded - 1, g, r).items()}

    def mutate(outs, perf):
        outs["ids_out4"][0] += 1
        return "ids_out4: 1 of"

    perf_checked(SUITE["cub-radix-sort-pairs"], tmp_path, SEED, answer, mutate)


# ---------------------------------------------------------------------------------------------
# thrust-sort-by-key: (cell, id) sorted in place by cell, stable


def _sorted_pairs(cell: np.ndarray, ids: np.ndarray, n: int, suffix: str = "") -> dict:
    order = np.lexsort((np.arange(n), cell[:n]))
    return {
        f"cell{suffix}": np.concatenate([cell[order], cell[n:]]),
        f"id{suffix}": np.concatenate([ids[order], ids[n:]]),
    }


@pytest.fixture(scope="module")
def sort_by_key(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run("thrust-sort-by-key", tmp_path_factory)


def test_sort_by_key_independent_answer_passes(sort_by_key: Run) -> None:
    assert (sort_by_key.inputs["all-equal"]["cell"][:-1] == 0).all()
    passes(sort_by_key, lambda c: _sorted_pairs(c["cell"], c["id"], int(c["n"])))


def test_sort_by_key_mistakes_fail(sort_by_key: Run) -> None:
    case = "sixteen-cells"
    c = sort_by_key.inputs[case]
    n = int(c["n"])
    answer = _sorted_pairs(c["cell"], c["id"], n)

    def unstable(out, c):
        out["id"][0], out["id"][1] = out["id"][1], out["id"][0]  # both in cell 0

    def keys_only(out, c):  # the keys sorted, the ids left where they were
        out["id"][:n] = c["id"][:n]

    def sentinel(out, c):
        out["cell"][n] = 0

    def descending(out, c):
        out["cell"][:n] = out["cell"][:n][::-1].copy()
        out["id"][:n] = out["id"][:n][::-1].copy()

    def missing(out, c):
        del out["id"]

    assert answer["cell"][0] == answer["cell"][1] == 0
    found = sort_by_key.mutants(
        case,
        answer,
        {
            "unstable": unstable,
            "keys-only": keys_only,
            "sentinel": sentinel,
            "descending": descending,
            "missing": missing,
        },
    )
    assert found["descending"][0].startswith("cell: ") and len(found["descending"]) == 2
    found["descending"] = found["descending"][:1]
    only(
        found,
        {
            "unstable": f"id: 2 of {n} elements wrong; first at index 0",
            "keys-only": "id: ",
            "sentinel": "cell past the end: 1 of 1 elements wrong; first at index 0",
            "descending": "cell: ",
            "missing": "id.npy is missing",
        },
    )


@pytest.mark.slow  # 5 x 2^22 pairs
def test_sort_by_key_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        timed, n = perf["cell"].shape
        return {
            k: v
            for r in range(timed)
            for k, v in _sorted_pairs(perf["cell"][r], perf["id"][r], n, str(r)).items()
        }

    def mutate(outs, perf):
        outs["id4"][-1] += 1
        return "id4: 1 of"

    perf_checked(SUITE["thrust-sort-by-key"], tmp_path, SEED, answer, mutate)


# ---------------------------------------------------------------------------------------------
# thrust-unique-count: the number of distinct values among the first n


def _distinct(values: np.ndarray, n: int) -> dict[str, np.ndarray]:
    ordered = np.sort(values[:n])
    distinct = int((ordered[1:] != ordered[:-1]).sum()) + min(n, 1)
    return {"count": np.array(distinct, dtype=np.int32), "values": values}


@pytest.fixture(scope="module")
def unique(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run("thrust-unique-count", tmp_path_factory)


def test_unique_cases_cover_the_edges(unique: Run) -> None:
    inputs = unique.inputs
    assert list(inputs["extremes"]["values"][:-1]) == [-(2**31), 2**31 - 1, 0, -1, -(2**31)]
    few = inputs["few-distinct"]["values"][:-1]
    assert len(set(few.tolist())) == 17 and few.min() < 0 < few.max()
    half = inputs["half-distinct"]["values"][:-1]
    assert 390000 < len(set(half.tolist())) <= 500000
    sentinel = -(2**31) + 12345
    assert all(c["values"][-1] == sentinel for c in inputs.values())
    assert all(sentinel not in c["values"][:-1] for c in inputs.values())


def test_unique_independent_answer_passes(unique: Run) -> None:
    passes(unique, lambda c: _distinct(c["values"], int(c["n"])))


def test_unique_mistakes_fail(unique: Run) -> None:
    case = "few-distinct"
    c = unique.inputs[case]
    n = int(c["n"])

    def off_by_one(out, c):
        out["count"] = out["count"] + np.int32(1)

    def sorted_in_place(out, c):
        out["values"] = np.concatenate([np.sort(c["values"][:n]), c["values"][n:]])

    def int64(out, c):
        out["count"] = out["count"].astype(np.int64)

    def array(out, c):
        out["count"] = out["count"].reshape(1)

    found = unique.mutants(
        case,
        _distinct(c["values"], n),
        {"off-by-one": off_by_one, "sorted": sorted_in_place, "int64": int64, "array": array},
    )
    only(
        found,
        {
            "off-by-one": "count: 1 of 1 elements wrong; first at index 0: got 18, expected 17",
            "sorted": "values (modified by the call): ",
            "int64": "count: dtype <i8, expected <i4",
            "array": "count: shape (1,), expected ()",
        },
    )


@pytest.mark.slow  # 5 x 2^23 values
def test_unique_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        counts = [_distinct(v, v.size - 1)["count"] for v in perf["values"]]
        return {
            "count": np.array(counts, dtype=np.int32),
            **{f"values{r}": v for r, v in enumerate(perf["values"])},
        }

    def mutate(outs, perf):
        outs["count"][4] -= 1
        return "call 4: count: 1 of 1"

    perf_checked(SUITE["thrust-unique-count"], tmp_path, SEED, answer, mutate)
