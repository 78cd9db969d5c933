"""``precision-half-behind-padding`` (cudaenv/redteam/catalog_device.py) against its defence,
on and off: the device-code report reads every matching line of the whole PTX file, so the
half-precision kernel after 500 empty ones is found; with the report's old bounded read (the
first 400 filtered lines) put back, the same solution passes the toolchain stage unflagged
(a GPU would then time it)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from cudaenv import grade
from cudaenv.grading import static_cpp_script
from cudaenv.problems import load_suite
from cudaenv.redteam.catalog_device import PADDED_HALF_SGEMM

#: what the report kept before issue 27: declarations and narrow-type lines, the first 400
OLD_FILTER = r"^\s*(\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b|\.(f16|f16x2|bf16)\b"


def _bounded_ptx_lines(file_expr: str) -> str:
    return f"grep -E {shlex.quote(OLD_FILTER)} {file_expr} | head -n 400"


@pytest.mark.slow  # two nvcc builds of sgemm-tiled, each with a cold cache
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_half_precision_behind_500_empty_kernels_is_read_only_by_the_whole_file_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a cache of its own for each side: the toolchain check caches its answer by content
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "on"))
    problem = load_suite("builtin")["sgemm-tiled"]
    files = {"solution.cu": PADDED_HALF_SGEMM}
    v = grade(problem, files, mode="optimize", build_cache=False)
    assert v.passed is False and any("reduced precision" in s for s in v.suspected_hack), v
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setattr(static_cpp_script, "ptx_lines", _bounded_ptx_lines)
    off = grade(problem, files, mode="optimize", build_cache=False)
    assert off.stages["toolchain"].status == "ok" and off.suspected_hack == [], off
