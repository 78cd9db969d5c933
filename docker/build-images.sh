#!/usr/bin/env bash
# Build the CPU evaluation and agent images from the repository root, without a registry:
#   cudaenv-eval-cpu:latest   docker/Dockerfile.eval-cpu  on cudaenv-base:bookworm
#   cudaenv-agent-cpu:latest  docker/Dockerfile.agent-cpu on cudaenv-eval-cpu:latest
#   cudaenv-repo-cpu:latest   docker/Dockerfile.repo-cpu  on cudaenv-eval-cpu:latest
#                             (repository tasks: cmake, ninja, g++, git, ccache)
# The base comes from docker/build-test-image.sh (run first when it is missing). Idempotent:
# `docker build` reuses its layer cache, so a rerun with unchanged sources takes seconds and a
# cudaenv source edit reinstalls only cudaenv itself. FORCE=1 rebuilds without the cache.
# The host's locally added CA certificates (/usr/local/share/ca-certificates/*.crt, e.g. a
# TLS-intercepting egress proxy's) are passed as the EXTRA_CA_CERTS build argument so pip and
# npm can reach their registries; see docker/with-build-ca.sh. EXTRA_CA_CERTS= disables it.
# The GPU images (Dockerfile.eval, Dockerfile.agent) come from docker/build-cuda-images.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BASE_IMAGE="${BASE_IMAGE:-cudaenv-base:bookworm}"
EVAL_IMAGE="${EVAL_IMAGE:-cudaenv-eval-cpu:latest}"
AGENT_IMAGE="${AGENT_IMAGE:-cudaenv-agent-cpu:latest}"
REPO_IMAGE="${REPO_IMAGE:-cudaenv-repo-cpu:latest}"

log() { echo "[build-images] $*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }
size_mb() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

if [[ -z "${EXTRA_CA_CERTS+set}" ]]; then
  EXTRA_CA_CERTS=""
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt)"
  fi
fi

if ! have_image "$BASE_IMAGE"; then
  log "$BASE_IMAGE missing; running build-test-image.sh"
  BASE_IMAGE="$BASE_IMAGE" "$HERE/build-test-image.sh"
fi

build() {  # build IMAGE DOCKERFILE BUILD_ARG...
  local image=$1 dockerfile=$2 started=$SECONDS
  shift 2
  local args=(--network host -t "$image" -f "$dockerfile")
  [[ "${FORCE:-0}" == 1 ]] && args+=(--no-cache)
  for arg in "$@"; do args+=(--build-arg "$arg"); done
  log "docker build -> $image"
  # Host networking: apt, pip and npm reach their mirrors the way the host does.
  docker build "${args[@]}" --build-arg "EXTRA_CA_CERTS=$EXTRA_CA_CERTS" "$ROOT" >&2
  log "$image: $(size_mb "$image"), $((SECONDS - started)) s"
}

build "$EVAL_IMAGE" "$HERE/Dockerfile.eval-cpu" "BASE_IMAGE=$BASE_IMAGE"
build "$AGENT_IMAGE" "$HERE/Dockerfile.agent-cpu" "EVAL_IMAGE=$EVAL_IMAGE"
build "$REPO_IMAGE" "$HERE/Dockerfile.repo-cpu" "BASE_IMAGE=$EVAL_IMAGE"
