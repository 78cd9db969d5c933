"""``bench/bench_harbor.py`` runs to its end (issue 32's bench smoke; the other benches are in
``tests/bench/test_bench_smoke.py``): one run per side, both must score reward 1, the report
printed. No timing asserted. Here for this directory's harbor venv fixture."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.docker
@pytest.mark.slow
def test_bench_harbor_runs_to_its_end(
    harbor_python: str, eval_cpu_image: str, tmp_path: Path
) -> None:
    image = eval_cpu_image
    harbor = Path(harbor_python).parent / "harbor"
    res = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_harbor.py"), "--runs", "1",
         "--image", image, "--harbor", str(harbor)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CUDAENV_CACHE_DIR": str(tmp_path / "c")},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "harbor run (CLI, end to end)" in out and "cudaenv docker episode" in out, out
