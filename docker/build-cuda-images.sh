#!/usr/bin/env bash
# Build the GPU evaluation and agent images from the repository root, without a registry:
#   cudaenv-cuda-base:<release>  docker/build-cuda-base.sh: the debootstrap base + this host's
#                                CUDA toolkit + cuBLAS and NVRTC from their pip wheels where the
#                                toolkit has none (stands in for nvidia/cuda:<v>-devel)
#   cudaenv-eval:local           docker/Dockerfile.eval  on that base
#   cudaenv-agent:local          docker/Dockerfile.agent on cudaenv-eval:local
# Heavy (about 2 GB, minutes): a script people run, not part of CI. Idempotent like
# docker/build-images.sh: the layer cache makes a rerun with unchanged sources take seconds;
# FORCE=1 rebuilds everything without the cache. Prints each image's size and build seconds.
# The host toolkit usually has no compute-sanitizer: the eval image is then built with
# REQUIRE_SANITIZER=0 and says so loudly (set REQUIRE_SANITIZER=1 to make that an error).
# Environment: CUDA_SRC (the toolkit, default /usr/local/cuda), EVAL_IMAGE, AGENT_IMAGE,
# EXTRA_CA_CERTS (as in docker/build-images.sh: the host's added CA certificates by default),
# CUBLAS_VERSION / CUBLAS_PACKAGE, NVRTC_VERSION / NVRTC_PACKAGE (see docker/build-cuda-base.sh).
# Check the result with: python -m pytest tests/sandbox/test_cuda_images.py
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
EVAL_IMAGE="${EVAL_IMAGE:-cudaenv-eval:local}"
AGENT_IMAGE="${AGENT_IMAGE:-cudaenv-agent:local}"

log() { echo "[build-cuda-images] $*" >&2; }
size_mb() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

if [[ -z "${EXTRA_CA_CERTS+set}" ]]; then
  EXTRA_CA_CERTS=""
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt)"
  fi
fi

summary=()
started=$SECONDS
CUDA_BASE_IMAGE="$(EXTRA_CA_CERTS="$EXTRA_CA_CERTS" "$HERE/build-cuda-base.sh")"
summary+=("$CUDA_BASE_IMAGE: $(size_mb "$CUDA_BASE_IMAGE"), $((SECONDS - started)) s")

if [[ -z "${REQUIRE_SANITIZER:-}" ]]; then
  REQUIRE_SANITIZER=0
  docker run --rm --entrypoint sh "$CUDA_BASE_IMAGE" -c 'command -v compute-sanitizer' \
    >/dev/null 2>&1 && REQUIRE_SANITIZER=1
fi

build() {  # build IMAGE DOCKERFILE BUILD_ARG...
  local image=$1 dockerfile=$2 started=$SECONDS
  shift 2
  local args=(--network host -t "$image" -f "$dockerfile")
  [[ "${FORCE:-0}" == 1 ]] && args+=(--no-cache)
  for arg in "$@"; do args+=(--build-arg "$arg"); done
  log "docker build -> $image ($*)"
  # Host networking: apt, pip and npm reach their mirrors the way the host does.
  docker build "${args[@]}" --build-arg "EXTRA_CA_CERTS=$EXTRA_CA_CERTS" "$ROOT" >&2
  summary+=("$image: $(size_mb "$image"), $((SECONDS - started)) s")
  log "${summary[-1]}"
}

build "$EVAL_IMAGE" "$HERE/Dockerfile.eval" \
  "BASE_IMAGE=$CUDA_BASE_IMAGE" "REQUIRE_SANITIZER=$REQUIRE_SANITIZER"
build "$AGENT_IMAGE" "$HERE/Dockerfile.agent" "EVAL_IMAGE=$EVAL_IMAGE"

log "built in $((SECONDS - started)) s:"
for line in "${summary[@]}"; do log "  $line"; done
cublas="$(docker image inspect -f '{{index .Config.Labels "org.cudaenv.cuda-base.cublas"}}' \
  "$EVAL_IMAGE")"
if [[ -z "$cublas" ]]; then
  log "WARNING: $EVAL_IMAGE and $AGENT_IMAGE have NO cuBLAS: cublas problems do not build in them"
else
  log "cuBLAS in $EVAL_IMAGE and $AGENT_IMAGE: $cublas"
fi
nvrtc="$(docker image inspect -f '{{index .Config.Labels "org.cudaenv.cuda-base.nvrtc"}}' \
  "$EVAL_IMAGE")"
if [[ -z "$nvrtc" ]]; then
  log "WARNING: $EVAL_IMAGE and $AGENT_IMAGE have NO NVRTC: nvrtc users (and cuBLASLt paths) fail"
else
  log "NVRTC in $EVAL_IMAGE and $AGENT_IMAGE: $nvrtc"
fi
if [[ "$REQUIRE_SANITIZER" != 1 ]]; then
  log "WARNING: $EVAL_IMAGE and $AGENT_IMAGE have NO compute-sanitizer (the host toolkit lacks it)"
fi
