#!/usr/bin/env bash
# CI: make a Docker engine available and build the DockerSandbox test image and the CPU images.
# Starts dockerd in the background when `docker info` fails (no systemd here), waits up to
# 60 s for it, then runs docker/build-test-image.sh (a no-op when the image exists) and
# docker/build-images.sh (cudaenv-eval-cpu, cudaenv-agent-cpu; cached layers on a rerun).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOG="${DOCKERD_LOG:-/tmp/dockerd.log}"

if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || { echo "docker-setup: dockerd is not installed" >&2; exit 1; }
  echo "docker-setup: starting dockerd (log: $LOG)" >&2
  nohup dockerd >"$LOG" 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "docker-setup: dockerd did not come up within 60 s; last log lines:" >&2
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
fi
echo "docker-setup: engine $(docker version --format '{{.Server.Version}}')" >&2
"$ROOT/docker/build-test-image.sh"
"$ROOT/docker/build-images.sh"
