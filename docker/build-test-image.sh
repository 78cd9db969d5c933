#!/usr/bin/env bash
# Build the DockerSandbox test image without a registry, idempotently:
#   1. debootstrap a Debian bookworm minbase rootfs (same mirror as the host's apt sources),
#   2. `docker import` it as cudaenv-base:bookworm,
#   3. `docker build` docker/Dockerfile.sandbox-test on top as cudaenv-sandbox-test:latest.
# Each step is skipped when its image already exists; FORCE=1 rebuilds both.
set -euo pipefail

BASE_IMAGE="${BASE_IMAGE:-cudaenv-base:bookworm}"
TEST_IMAGE="${TEST_IMAGE:-cudaenv-sandbox-test:latest}"
SUITE="${SUITE:-bookworm}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { echo "[build-test-image] $*" >&2; }

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# The first Debian mirror named in the host's apt sources (deb822 or one-line format).
find_mirror() {
  local m=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    m="$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
          | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)"
  fi
  if [[ -z "$m" ]]; then
    m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
          | grep -E '^deb ' | sed -E 's/\[[^]]*\]//' | awk '{print $2}' \
          | grep -E '/debian/?$' | head -n1 || true)"
  fi
  echo "${m:-http://deb.debian.org/debian}"
}

if [[ "${FORCE:-0}" == 1 ]]; then
  docker image rm -f "$TEST_IMAGE" "$BASE_IMAGE" >/dev/null 2>&1 || true
fi

if have_image "$TEST_IMAGE"; then
  log "$TEST_IMAGE exists; nothing to do"
  exit 0
fi

if ! have_image "$BASE_IMAGE"; then
  command -v debootstrap >/dev/null || { log "debootstrap is not installed"; exit 1; }
  MIRROR="$(find_mirror)"
  ROOTFS="$(mktemp -d /tmp/cudaenv-rootfs.XXXXXX)"
  trap 'rm -rf "$ROOTFS"' EXIT
  log "debootstrap --variant=minbase $SUITE from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$ROOTFS" "$MIRROR" >/tmp/cudaenv-debootstrap.log 2>&1 \
    || { tail -n 30 /tmp/cudaenv-debootstrap.log >&2; exit 1; }
  # Let apt inside the image use the same mirror; drop caches to keep the layer small.
  echo "deb $MIRROR $SUITE main" >"$ROOTFS/etc/apt/sources.list"
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/cache/apt/*.bin \
    "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/log/* "$ROOTFS"/var/cache/debconf/*-old \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
    "$ROOTFS"/usr/share/locale/*
  log "docker import -> $BASE_IMAGE"
  tar -C "$ROOTFS" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$ROOTFS"
  trap - EXIT
fi

log "docker build -> $TEST_IMAGE"
# Host networking: the build's apt-get reaches the mirror the way the host does.
docker build --network host --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  -t "$TEST_IMAGE" -f "$HERE/Dockerfile.sandbox-test" "$HERE" >&2
log "done: $(docker image inspect -f '{{.Size}}' "$TEST_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
