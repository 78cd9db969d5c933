"""The cccl scan and reduction problems' checkers without a GPU (cub-device-scan,
cub-segmented-reduce, thrust-transform-reduce).

For each: the test stage's cases, answered by NumPy written here (not the checker's own
functions), pass ``verify``; every kind of wrong output fails it, each as its own case of one
``verify`` (tests/grading/split_mutants.py): a wrong value, a NaN, a write past the end, a
missing file, a wrong dtype or shape, the runner's error, and the problem's own mistakes (an
inclusive or 32-bit scan, a shifted segment boundary, an empty segment's maximum, a value read
outside the segments or past the end, float accumulation), with the tolerance's edges. The
runners call Thrust/CUB, which no CPU emulator runs: they build with nvcc
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


def test_scan_independent_answer_passes(scan: Run) -> None:
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


def test_segmented_independent_answer_passes(segmented: Run) -> None:
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


def test_moments_independent_answer_passes(moments: Run) -> None:
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
