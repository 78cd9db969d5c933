"""The cccl problems' checkers without a GPU (cub-device-scan, cub-radix-sort-pairs,
cub-segmented-reduce, thrust-sort-by-key, thrust-transform-reduce, thrust-unique-count).

For each: the test stage's cases, answered by NumPy written here (not the checker's own
functions), pass ``verify``; every kind of wrong output fails it, each as its own case of one
``verify`` (tests/grading/split_mutants.py): a wrong value, a NaN, a write past the end, a
missing file, a wrong dtype or shape, and the problem's own mistakes (an unstable sort, an
inclusive or 32-bit scan, a shifted segment boundary, float accumulation, a modified input).
The runners call Thrust/CUB, which no CPU emulator runs: they build with nvcc
(test_split_library_build.py), and the baselines, plain kernels, run on cuemu
(test_split_library_emu.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cudaenv.problems import load_suite
from tests.grading.split_harness import CheckerDir, cases
from tests.grading.split_mutants import Run, only, passes, perf_checked, poison

SUITE = load_suite("builtin")
SEED = 20_261_129
FLT_LOWEST = np.float32(-3.4028234663852886e38)


def _run(task_id: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    return Run(SUITE[task_id], tmp_path_factory.mktemp(task_id), SEED)


# ---------------------------------------------------------------------------------------------
# cub-device-scan: out[i] = x[0] + ... + x[i-1] in 64 bits


def _scan(x: np.ndarray, n: int, guard: int) -> np.ndarray:
    total = np.add.accumulate(x[:n].astype(np.int64))
    return np.concatenate([np.zeros(min(n, 1), np.int64), total[:-1], poison(np.int64, guard)])


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run("cub-device-scan", tmp_path_factory)


def test_scan_cases_cover_the_edges_and_are_fresh_per_seed(scan: Run) -> None:
    sizes = {name: int(c["n"]) for name, c in scan.inputs.items()}
    assert {0, 1, 2, 1025, (1 << 24) + 7} <= set(sizes.values())
    for c in scan.inputs.values():
        assert c["x"].dtype == np.int32 and c["x"].size == int(c["n"]) + 1
    assert scan.inputs["all-zeros"]["x"][:-1].max() == 0
    assert scan.inputs["million-huge"]["x"].max() > 2**30  # sums overflow 32 bits at once
    other = cases(scan.box.gen("test", SEED + 1))
    assert not np.array_equal(other["small"]["x"], scan.inputs["small"]["x"])


def test_scan_independent_answerpasses(scan: Run) -> None:
    passes(scan, lambda c: {"out": _scan(c["x"], int(c["n"]), int(c["guard"]))})


def test_scan_mistakes_fail(scan: Run) -> None:
    case = "tile-plus-one"  # values up to INT_MAX
    c = scan.inputs[case]
    n, g = int(c["n"]), int(c["guard"])

    def inclusive(out, c):
        out["out"][:n] += c["x"][:n]

    def narrow(out, c):  # a 32-bit accumulator, widened only on the way out
        out["out"][:n] = out["out"][:n].astype(np.int32)

    def past_end(out, c):  # a scan over n + 1 elements
        out["out"][n] = out["out"][n - 1] + c["x"][n - 1]

    def wrong(out, c):
        out["out"][700] += 1

    def shape(out, c):
        out["out"] = out["out"][:n]

    def dtype(out, c):
        out["out"] = out["out"].astype(np.float64)

    def missing(out, c):
        del out["out"]

    def error(out, c):
        out["error.txt"] = "CUDA error: an illegal memory access"

    found = scan.mutants(
        case,
        {"out": _scan(c["x"], n, g)},
        {
            "inclusive": inclusive,
            "narrow": narrow,
            "past-end": past_end,
            "wrong": wrong,
            "shape": shape,
            "dtype": dtype,
            "missing": missing,
            "error": error,
        },
    )
    only(
        found,
        {
            "inclusive": f"out: {n} of {n} elements wrong; first at index 0",
            "narrow": "out: ",
            "past-end": "out past the end: 1 of 16 elements wrong; first at index 0",
            "wrong": f"out: 1 of {n} elements wrong; first at index 700",
            "shape": f"out: shape ({n},), expected ({n + g},)",
            "dtype": "out: dtype <f8, expected <i8",
            "missing": "out.npy is missing",
            "error": "the runner reported an error: CUDA error: an illegal memory access",
        },
    )
    assert "elements wrong" in found["narrow"][0]


@pytest.mark.slow  # 4 x 2^24 elements
def test_scan_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        return {f"out{r}": _scan(x, x.size, int(perf["guard"])) for r, x in enumerate(perf["x"])}

    def mutate(outs, perf):
        outs["out3"][-int(perf["guard"]) - 1] += 1  # the last element of the last call
        return "out3: 1 of"

    perf_checked(SUITE["cub-device-scan"], tmp_path, SEED, answer, mutate)


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


def test_radix_independent_answerpasses(radix: Run) -> None:
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
# cub-segmented-reduce: out[s] = max of segment s, -FLT_MAX when empty


def _maxima(vals: np.ndarray, offsets: np.ndarray, g: int) -> np.ndarray:
    segs = len(offsets) - 1
    lengths = np.diff(offsets.astype(np.int64))
    owner = np.repeat(np.arange(segs), lengths)
    out = np.full(segs, FLT_LOWEST, dtype=np.float32)
    np.maximum.at(out, owner, vals[offsets[0] : offsets[-1]])
    return np.concatenate([out, poison(np.float32, g)])


@pytest.fixture(scope="module")
def segmented(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run("cub-segmented-reduce", tmp_path_factory)


def test_segmented_cases_cover_the_edges(segmented: Run) -> None:
    inputs = segmented.inputs
    assert list(inputs["no-segments"]["offsets"]) == [0]
    assert list(inputs["one-empty-segment"]["offsets"]) == [3, 3]
    three = inputs["three-huge-offset-start"]
    assert three["offsets"][0] == 17 and (three["vals"][:17] == np.float32(1e30)).all()
    mixed = np.diff(inputs["mixed-sizes"]["offsets"])
    assert (mixed == 0).any() and mixed.max() >= 200000  # empty and huge segments
    assert len(inputs["million-tiny"]["offsets"]) == (1 << 20) + 1


def test_segmented_independent_answerpasses(segmented: Run) -> None:
    passes(segmented, lambda c: {"out": _maxima(c["vals"], c["offsets"], int(c["guard"]))})


def test_segmented_mistakes_fail(segmented: Run) -> None:
    case = "small-segments"
    c = segmented.inputs[case]
    vals, offsets, g = c["vals"], c["offsets"], int(c["guard"])
    segs = len(offsets) - 1
    empty = int(np.flatnonzero(np.diff(offsets) == 0)[0])
    # a segment whose maximum is its first value, and whose previous segment is not empty
    lengths = np.diff(offsets)
    maxima = _maxima(vals, offsets, 0)
    shift = next(
        s
        for s in range(1, segs)
        if lengths[s] > 1
        and lengths[s - 1] > 0
        and vals[offsets[s]] > vals[offsets[s] + 1 : offsets[s + 1]].max()
        and vals[offsets[s]] > maxima[s - 1]
    )

    def boundary(out, c):  # the value at offsets[s] counted in segment s - 1
        out["out"][shift - 1] = vals[offsets[shift]]
        out["out"][shift] = vals[offsets[shift] + 1 : offsets[shift + 1]].max()

    def empty_zero(out, c):
        out["out"][empty] = 0.0

    def read_poison(out, c):  # the poison after the last segment read
        out["out"][segs - 1] = np.float32(1e30)

    def guard(out, c):
        out["out"][segs] = 1.0

    def dtype(out, c):
        out["out"] = out["out"].astype(np.float64)

    found = segmented.mutants(
        case,
        {"out": _maxima(vals, offsets, g)},
        {
            "boundary": boundary,
            "empty-zero": empty_zero,
            "read-poison": read_poison,
            "guard": guard,
            "dtype": dtype,
        },
    )
    only(
        found,
        {
            "boundary": f"out (bits): 2 of {segs} elements wrong; first at index {shift - 1}",
            "empty-zero": f"out (bits): 1 of {segs} elements wrong; first at index {empty}",
            "read-poison": f"out (bits): 1 of {segs} elements wrong; first at index {segs - 1}",
            "guard": f"out past the end: 1 of {g} elements wrong; first at index 0",
            "dtype": "out: dtype <f8, expected <f4",
        },
    )


@pytest.mark.slow  # two benchmark draws
def test_segmented_perf_layout_is_the_declared_work(tmp_path: Path) -> None:
    """The benchmark's segments are the hash layout bench_work.py counts, every round the
    same; only the values are drawn per run."""
    from tests.grading.bench_work import segmented_values

    box = CheckerDir(SUITE["cub-segmented-reduce"], tmp_path)
    perf = cases(box.gen("perf", SEED))["perf"]
    other = cases(box.gen("perf", SEED + 1))["perf"]
    for r in range(int(perf["timed"])):
        offsets = perf[f"offsets{r}"]
        assert len(offsets) == 100001 and offsets[0] == 0
        assert int(offsets[-1]) == segmented_values(100000, 61 + r)
        assert np.array_equal(offsets, other[f"offsets{r}"])
    assert not np.array_equal(perf["vals0"], other["vals0"])


@pytest.mark.slow  # 5 x 18 million values
def test_segmented_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        return {
            f"out{r}": _maxima(perf[f"vals{r}"], perf[f"offsets{r}"], int(perf["guard"]))
            for r in range(int(perf["timed"]))
        }

    def mutate(outs, perf):
        outs["out2"][99999] = np.float32(1e30)
        return "out2 (bits): 1 of"

    perf_checked(SUITE["cub-segmented-reduce"], tmp_path, SEED, answer, mutate)


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


def test_sort_by_key_independent_answerpasses(sort_by_key: Run) -> None:
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
# thrust-transform-reduce: mean and population variance within 1e-8 relative (+1e-12)


def _moments(x: np.ndarray) -> tuple[np.float64, np.float64]:
    if x.size == 0:
        return np.float64(0.0), np.float64(0.0)
    return x.mean(dtype=np.float64), x.var(dtype=np.float64)


def _moments_out(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    mean, var = _moments(c["x"][: int(c["n"])])
    return {"mean": np.array(mean), "variance": np.array(var)}


@pytest.fixture(scope="module")
def moments(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return _run("thrust-transform-reduce", tmp_path_factory)


def test_moments_independent_answerpasses(moments: Run) -> None:
    big = moments.inputs["large-mean"]["x"][:-1]
    assert abs(big.mean() - 1000) < 0.01 and 0.4 < big.std() < 0.6
    assert moments.inputs["odd-large"]["x"][-1] == np.float32(1e30)  # poison past the values
    passes(moments, _moments_out)


def test_moments_mistakes_and_tolerance_edges(moments: Run) -> None:
    case = "large-mean"
    c = moments.inputs[case]
    x = c["x"][:-1]
    answer = _moments_out(c)
    mean, var = float(answer["mean"]), float(answer["variance"])

    def within(out, c):  # half the tolerance off: still right
        out["mean"] = np.array(mean * (1 + 0.5e-8))
        out["variance"] = np.array(var * (1 - 0.5e-8))

    def mean_over(out, c):
        out["mean"] = np.array(mean * (1 + 2e-8))

    def variance_over(out, c):
        out["variance"] = np.array(var * (1 - 2e-8))

    def float_accumulation(out, c):  # one pass in float32: E[x^2] - E[x]^2
        m = x.sum(dtype=np.float32) / np.float32(x.size)
        sq = (x * x).sum(dtype=np.float32) / np.float32(x.size)
        out["variance"] = np.array(np.float64(sq - m * m))

    def read_poison(out, c):  # the element past the end included
        out["mean"], out["variance"] = (np.array(v) for v in _moments(c["x"]))

    def nan(out, c):
        out["variance"] = np.array(np.nan)

    def unwritten(out, c):  # the runner's -1
        out["mean"] = np.array(-1.0)

    def float32(out, c):
        out["mean"] = out["mean"].astype(np.float32)

    found = moments.mutants(
        case,
        answer,
        {
            "within": within,
            "mean-over": mean_over,
            "variance-over": variance_over,
            "float-accumulation": float_accumulation,
            "read-poison": read_poison,
            "nan": nan,
            "unwritten": unwritten,
            "float32": float32,
        },
    )
    assert found.pop("within") == []
    assert len(found["read-poison"]) == 2  # the mean and the variance
    found["read-poison"] = found["read-poison"][:1]
    only(
        found,
        {
            "mean-over": "mean: 1 of 1 elements wrong",
            "variance-over": "variance: 1 of 1 elements wrong",
            "float-accumulation": "variance: 1 of 1 elements wrong",
            "read-poison": "mean: 1 of 1",
            "nan": "variance: 1 of 1 elements wrong; first at index 0: got nan",
            "unwritten": "mean: 1 of 1 elements wrong; first at index 0: got -1.0",
            "float32": "mean: dtype <f4, expected <f8",
        },
    )


def test_moments_of_no_values_are_zero(moments: Run) -> None:
    right = {"mean": np.array(0.0), "variance": np.array(0.0)}
    found = moments.mutants(
        "empty", right, {"nan": lambda out, c: out.update(mean=np.array(np.nan))}
    )
    only(found, {"nan": "mean: 1 of 1 elements wrong; first at index 0: got nan"})


@pytest.mark.slow  # 3 x 2^25 values
def test_moments_every_timed_call_is_checked(tmp_path: Path) -> None:
    def answer(perf):
        pairs = [_moments(x) for x in perf["x"]]
        return {
            "mean": np.array([m for m, _ in pairs]),
            "variance": np.array([v for _, v in pairs]),
        }

    def mutate(outs, perf):
        outs["variance"][2] *= 1 + 1e-7
        return "call 2: variance: 1 of 1"

    perf_checked(SUITE["thrust-transform-reduce"], tmp_path, SEED, answer, mutate)


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


def test_unique_independent_answerpasses(unique: Run) -> None:
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
