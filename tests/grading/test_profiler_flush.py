"""The grader's L2 flush before timed ranges (issue 20, timing hygiene).

CPU: the size rule (the C++ block compiled with g++ beside its Python mirror), the grader's
setting, the variables the benchmark path hands the profiled process (through ``measure`` in a
real local sandbox), the profile's ``l2_flush`` record, the Timing's ``l2_flush_bytes``, and
the baseline cache key. GPU (``gpu`` marker): a real program's profile reports the flush.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cudaenv import toolkit
from cudaenv.errors import SpecError
from cudaenv.grading.baseline_cache import baseline_key
from cudaenv.grading.profiler import (
    L2FlushRecord,
    build_profiler,
    flush_env,
    flush_setting,
    flush_size,
    flushed_bytes,
    load_profile,
    new_nonce,
    profiler_env,
)
from cudaenv.grading.profiler import build as profiler_build
from cudaenv.grading.profiler.flush import (
    EXCLUDE_ENV,
    INCLUDE_ENV,
    MIN_FLUSH_BYTES,
    REQUEST_ENV,
    SETTING_ENV,
    common_flush,
    parse_request,
)
from cudaenv.grading.timing import measure, record_timings
from cudaenv.grading.verdict import Verdict
from cudaenv.problems import load_suite
from cudaenv.problems.model import GpuTiming, KernelsTiming, ProcessTiming, RegionTiming
from cudaenv.sandbox.base import ExecResult
from cudaenv.toolkit import GpuInfo
from tests.conftest import write_problem
from tests.grading.local_box import LocalBox

MIB = 1 << 20
REGION = RegionTiming(include=["bench_region", "bench_*"], exclude=["bench_setup"])
needs_nvcc = pytest.mark.skipif(toolkit.cuda_home() is None, reason="no CUDA toolkit (nvcc)")

# ---- the size rule: C++ and Python -----------------------------------------------------------

SIZE_CASES = [(1, 0), (1, 32 * MIB), (1, 33 * MIB), (1, 50 * MIB), (1, 60 * MIB), (0, 60 * MIB),
              (12345, 60 * MIB), (2, 0), (1 << 40, 1)]  # fmt: skip
REQUEST_CASES = ["", "0", "1", "134217728", "-1", " 1", "1x", "0x10", "1844674407370955160",
                 "18446744073709551615", "99999999999999999999"]  # fmt: skip
SIZE_MAIN = r"""
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
  // argv: "size" request l2 ... | "request" text ...
  for (int i = 2; i < argc; ++i) {
    if (argv[1][0] == 's') {
      const uint64_t request = strtoull(argv[i], nullptr, 10), l2 = strtoull(argv[++i], nullptr, 10);
      printf("%llu\n", (unsigned long long)l2_flush_size(request, l2));
    } else {
      printf("%llu\n", (unsigned long long)l2_flush_request(argv[i]));
    }
  }
  return 0;
}
"""


def test_size_rule() -> None:
    assert flush_size(1, 0) == MIN_FLUSH_BYTES == 64 * MIB
    assert flush_size(1, 32 * MIB) == 64 * MIB
    assert flush_size(1, 50 * MIB) == 100 * MIB  # an H100's 50 MiB L2: twice it
    assert flush_size(1, 60 * MIB) == 120 * MIB
    assert flush_size(12345, 60 * MIB) == 12345  # an explicit byte count is taken as given
    assert flush_size(0, 60 * MIB) == 0


def test_request_parsing() -> None:
    assert [parse_request(t) for t in ("", "0", "1", "4096", "-1", " 1", "1x", "٣")] == [
        0, 0, 1, 4096, 0, 0, 0, 0,
    ]  # fmt: skip
    assert parse_request("18446744073709551615") == 0  # would overflow in the C++: off


def _cpp_block() -> str:
    text = profiler_build._source_text()
    match = re.search(r"// ---- l2 flush size.*?\n(.*?)// ---- end l2 flush size", text, re.S)
    assert match, "the pure size block's markers are gone from cupti_inject.cpp"
    return match.group(1)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_cpp_size_rule_matches_python(tmp_path: Path) -> None:
    """The library's own functions, compiled alone with g++, agree with the Python mirror."""
    src = tmp_path / "size.cpp"
    src.write_text("#include <cstdint>\n" + _cpp_block() + SIZE_MAIN)
    exe = tmp_path / "size"
    proc = subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    args = [str(v) for case in SIZE_CASES for v in case]
    sizes = subprocess.run([str(exe), "size", *args], capture_output=True, text=True, check=True)
    assert [int(x) for x in sizes.stdout.split()] == [flush_size(r, l2) for r, l2 in SIZE_CASES]
    got = subprocess.run([str(exe), "request", *REQUEST_CASES], capture_output=True, text=True)
    assert [int(x) for x in got.stdout.split()] == [parse_request(t) for t in REQUEST_CASES]


def test_library_reads_the_variables_python_sends_and_writes_the_fields_it_parses() -> None:
    text = profiler_build._source_text()
    for name in (REQUEST_ENV, INCLUDE_ENV, EXCLUDE_ENV):
        assert f'take_env("{name}")' in text, name
    body = text[text.index("void write_flush(") : text.index("// Build the whole document")]
    written = set(re.findall(r'json_(?:uint|key)\(out, "(\w+)"', body))
    assert written == set(L2FlushRecord.model_fields), written


@needs_nvcc
def test_built_library_takes_the_flush_variables(tmp_path: Path) -> None:
    """The compiled library (the profiler's own build) reads and erases the flush variables
    at start-up like its others; without a GPU it reports CUPTI's failure, no flush record."""
    if toolkit.has_gpu():
        pytest.skip("exercises the no-GPU start-up path")
    lib = build_profiler()
    out = tmp_path / "profile.json"
    script = textwrap.dedent(
        f"""
        import ctypes
        lib = ctypes.CDLL({str(lib)!r})
        assert lib.InitializeInjection() == 1
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        for name in {[REQUEST_ENV, INCLUDE_ENV, EXCLUDE_ENV]!r}:
            assert libc.getenv(name.encode()) is None, name
        assert b"secret_range" not in open("/proc/self/environ", "rb").read()
        """
    )
    env = {**os.environ, "CUDAENV_PROFILE_OUT": str(out), "CUDAENV_PROFILE_NONCE": "n",
           **flush_env(RegionTiming(include=["secret_range"]), 1)}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["error"] and "l2_flush" not in doc


# ---- the grader's setting and the benchmark process's variables -------------------------------


def test_flush_setting() -> None:
    assert flush_setting({}) == 1  # on by default
    assert [flush_setting({SETTING_ENV: v}) for v in ("1", "on", "0", "off", "No")] == [
        1,
        1,
        0,
        0,
        0,
    ]
    assert flush_setting({SETTING_ENV: "268435456"}) == 256 * MIB
    with pytest.raises(SpecError) as info:
        flush_setting({SETTING_ENV: "lots"})
    assert info.value.field == SETTING_ENV


def test_flush_env_only_for_region_timing() -> None:
    env = flush_env(REGION, 1)
    assert env == {
        REQUEST_ENV: "1",
        INCLUDE_ENV: "bench_region\nbench_*",
        EXCLUDE_ENV: "bench_setup",
    }
    assert flush_env(RegionTiming(), 1)[INCLUDE_ENV] == ""  # no include: every range is timed
    assert flush_env(REGION, 256 * MIB)[REQUEST_ENV] == str(256 * MIB)
    assert flush_env(REGION, 0) == {}
    for mode in (KernelsTiming(include=["k"]), GpuTiming(), ProcessTiming()):
        assert flush_env(mode, 1) == {}, mode


def test_profiler_env_carries_the_flush(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    lib = tmp_path / "lib.so"
    monkeypatch.delenv(SETTING_ENV, raising=False)
    env = profiler_env(tmp_path / "p.json", "n", lib, "/x", timing_mode=REGION)
    assert env[REQUEST_ENV] == "1" and env[INCLUDE_ENV] == "bench_region\nbench_*"
    assert env["CUDAENV_PROFILE_OUT"] == str(tmp_path / "p.json")
    assert REQUEST_ENV not in profiler_env(tmp_path / "p.json", "n", lib, "/x")
    monkeypatch.setenv(SETTING_ENV, "0")  # the A/A switch
    assert REQUEST_ENV not in profiler_env(tmp_path / "p.json", "n", lib, "/x", timing_mode=REGION)
    env = profiler_env(tmp_path / "p.json", "n", lib, "/x", timing_mode=REGION, l2_flush=4096)
    assert env[REQUEST_ENV] == "4096"


class EnvRecorder(LocalBox):
    """A real local sandbox that keeps the variables of every command it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.envs: dict[str, dict[str, str]] = {}

    def after(self, command: str, env: Mapping[str, str], res: ExecResult) -> ExecResult:
        self.envs[command] = dict(env)
        return res


def _region_problem(root: Path) -> Any:
    write_problem(
        root,
        "flush-env",
        spec={
            "build_command": "true",
            "benchmark_command": "true --bench",
            "timing_mode": {"type": "region", "include": ["bench_region"], "time_type": "kernel"},
        },
        files={"solution/solution.cu": "void f() {}\n"},
    )
    return load_suite(root)["flush-env"]


@needs_nvcc
def test_benchmark_path_sets_the_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``measure`` (the grader's timed run) hands the profiled process the flush variables
    (no GPU here: the run writes no profile, which is the measurement's failure, not this
    test's); ``CUDAENV_L2_FLUSH=0`` on the grader takes them away."""
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(SETTING_ENV, raising=False)
    problem = _region_problem(tmp_path / "suite")
    box = EnvRecorder()
    try:
        m = measure(box, problem, env={}, timeout=60, token=None)
        assert m.ms is None and m.l2_flush_bytes is None
        env = box.envs["true --bench"]
        assert env[REQUEST_ENV] == "1" and env[INCLUDE_ENV] == "bench_region"
        assert env["CUDA_INJECTION64_PATH"]
        monkeypatch.setenv(SETTING_ENV, "0")
        measure(box, problem, env={}, timeout=60, token=None)
        assert REQUEST_ENV not in box.envs["true --bench"]
    finally:
        box.inner.close()


def test_baseline_key_tells_flushed_from_unflushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = GpuInfo(name="NVIDIA H200", driver="580", toolkit="13.0")
    problem = _region_problem(tmp_path / "suite")
    monkeypatch.delenv(SETTING_ENV, raising=False)
    flushed = baseline_key(problem, gpu)
    monkeypatch.setenv(SETTING_ENV, "0")
    assert baseline_key(problem, gpu) != flushed
    process = problem.model_copy(update={"timing_mode": ProcessTiming()})
    unflushed = baseline_key(process, gpu)
    monkeypatch.delenv(SETTING_ENV)
    assert baseline_key(process, gpu) == unflushed  # no flush in that mode: key unchanged


# ---- the profile's record and the Timing ---------------------------------------------------


def _profile(tmp_path: Path, **doc: Any) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"version": 1, "nonce": "n", **doc}))
    return path


def test_profile_reports_the_flush(tmp_path: Path) -> None:
    record = {"request": 1, "bytes": 120 * MIB, "l2_bytes": 60 * MIB, "count": 2, "skipped": 0,
              "failures": 0, "gpu_count": 2, "gpu_ns": 60_000}  # fmt: skip
    p = load_profile(_profile(tmp_path, l2_flush=record), "n")
    assert p.l2_flush == L2FlushRecord(**record)
    assert flushed_bytes(p) == 120 * MIB
    failed = {**record, "failures": 1, "error": "cuMemAlloc(125829120) failed: CUresult 2"}
    assert flushed_bytes(load_profile(_profile(tmp_path, l2_flush=failed), "n")) is None
    none_done = {**record, "count": 0, "skipped": 1}
    assert flushed_bytes(load_profile(_profile(tmp_path, l2_flush=none_done), "n")) is None
    assert flushed_bytes(load_profile(_profile(tmp_path), "n")) is None  # not asked for
    from cudaenv.errors import GradingError

    with pytest.raises(GradingError, match="corrupt"):
        load_profile(_profile(tmp_path, l2_flush={**record, "bytes": -1}), "n")


def test_timing_records_the_flush_when_every_sample_had_it() -> None:
    assert common_flush([120 * MIB, 120 * MIB]) == 120 * MIB
    assert common_flush([120 * MIB, None]) is None and common_flush([]) is None
    v = Verdict(task_id="t")
    record_timings(
        v, [1.0, 1.1, 0.9], [2.0, 2.2, 2.1], None, "region",
        solution_flush=[120 * MIB] * 3, baseline_flush=[120 * MIB, 120 * MIB, None],
    )  # fmt: skip
    assert v.solution_timing is not None and v.solution_timing.l2_flush_bytes == 120 * MIB
    assert v.baseline_timing is not None and v.baseline_timing.l2_flush_bytes is None
    plain = Verdict(task_id="t")
    record_timings(plain, [1.0], [], None, "region")
    assert plain.solution_timing is not None and plain.solution_timing.l2_flush_bytes is None


# ---- on a GPU --------------------------------------------------------------------------------

FLUSH_PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void add_kernel(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

int main() {
  const int n = 1 << 20, blocks = (n + 255) / 256;
  int l2 = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) return 2;
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  cudaDeviceSynchronize();
  nvtxRangePushA("setup");  // not timed: no flush
  add_kernel<<<blocks, 256>>>(y, x, n);
  cudaDeviceSynchronize();
  nvtxRangePop();
  for (int round = 0; round < 2; ++round) {
    nvtxRangePushA("bench_region");
    add_kernel<<<blocks, 256>>>(y, x, n);
    nvtxRangePushA("bench_region");  // nested inside a timed range: not flushed again
    add_kernel<<<blocks, 256>>>(y, x, n);
    cudaDeviceSynchronize();
    nvtxRangePop();
    nvtxRangePop();
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 4;
  printf("l2 %d\ndone\n", l2);
  return 0;
}
"""


@pytest.fixture(scope="module")
def flush_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not toolkit.has_gpu():
        pytest.skip("no NVIDIA GPU visible (cudaenv.toolkit.has_gpu() is False)")
    d = tmp_path_factory.mktemp("flush")
    (d / "flush.cu").write_text(FLUSH_PROGRAM)
    nvcc = str(toolkit.cuda_home() / "bin" / "nvcc")  # type: ignore[operator]
    proc = subprocess.run(
        [nvcc, "-O2", "-o", str(d / "flush"), str(d / "flush.cu"), "-ldl"],
        capture_output=True,
        text=True,
        env={**os.environ, **toolkit.toolkit_env()},
    )
    assert proc.returncode == 0, proc.stderr
    return d / "flush"


def _run(binary: Path, tmp_path: Path, l2_flush: int) -> tuple[Any, int]:
    out, nonce = tmp_path / f"profile-{l2_flush}.json", new_nonce()
    mode = RegionTiming(include=["bench_region"])
    env = {**os.environ, **toolkit.toolkit_env(),
           **profiler_env(out, nonce, timing_mode=mode, l2_flush=l2_flush)}  # fmt: skip
    proc = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    l2 = int(re.search(r"^l2 (\d+)$", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    return load_profile(out, nonce), l2


@pytest.mark.gpu
def test_gpu_profile_reports_the_l2_flush(flush_binary: Path, tmp_path: Path) -> None:
    p, l2 = _run(flush_binary, tmp_path, 1)
    f = p.l2_flush
    assert f is not None and f.error is None and f.failures == 0, f
    assert f.l2_bytes == l2 > 0
    assert f.bytes >= 2 * l2 and f.bytes >= MIN_FLUSH_BYTES and f.bytes == flush_size(1, l2)
    assert f.count == 2 and f.skipped == 0  # each outer bench_region; not setup, not nested
    p.model_dump()  # the record survives a dump (the gate writes it)
    memsets = [m for m in p.memcpy if m.kind == "memset"]
    assert [(m.count, m.bytes) for m in memsets] == [(2, 2 * (4 << 20))]  # the program's own
    assert f.gpu_count == 2  # CUPTI saw both flushes, on the flush's own stream
    assert flushed_bytes(p) == f.bytes
    assert len([r for r in p.ranges if r.name == "bench_region"]) == 4
    off, _ = _run(flush_binary, tmp_path, 0)
    assert off.l2_flush is None and flushed_bytes(off) is None
