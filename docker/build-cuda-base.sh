#!/usr/bin/env bash
# Assemble a local CUDA "devel" base image without a registry, idempotently:
#   cudaenv-base:bookworm (docker/build-test-image.sh, run first when missing)
#   + this host's CUDA toolkit (CUDA_SRC, default /usr/local/cuda, symlinks resolved)
#   + the environment of nvidia/cuda:<v>-devel (CUDA_VERSION, PATH, LD_LIBRARY_PATH, ld.so.conf,
#     NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, ...) and g++ for nvcc
#   -> cudaenv-cuda-base:<release> (e.g. cudaenv-cuda-base:13.0), see docker/Dockerfile.cuda-base.
# The toolkit directory is the build context, so nothing is staged on disk. The image records a
# fingerprint of the toolkit (file names, sizes, times): a rerun with the same toolkit does
# nothing, a changed toolkit rebuilds, FORCE=1 rebuilds without the layer cache.
# Prints the image name on stdout (logs go to stderr), for docker/build-cuda-images.sh.
# Environment: CUDA_SRC, CUDA_BASE_IMAGE (the tag to build), BASE_IMAGE (the Debian base).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE_IMAGE="${BASE_IMAGE:-cudaenv-base:bookworm}"
CUDA_SRC="${CUDA_SRC:-/usr/local/cuda}"

log() { echo "[build-cuda-base] $*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

TOOLKIT="$(readlink -f "$CUDA_SRC")"
[[ -x "$TOOLKIT/bin/nvcc" ]] || { log "no CUDA toolkit at $CUDA_SRC (bin/nvcc missing)"; exit 1; }
# "Cuda compilation tools, release 13.0, V13.0.88" -> 13.0 and 13.0.88
NVCC_LINE="$("$TOOLKIT/bin/nvcc" --version | grep -E 'release [0-9]+\.[0-9]+, V[0-9.]+' || true)"
[[ -n "$NVCC_LINE" ]] || { log "cannot read the toolkit version from $TOOLKIT/bin/nvcc"; exit 1; }
CUDA_RELEASE="$(sed -E 's/.*release ([0-9]+\.[0-9]+),.*/\1/' <<<"$NVCC_LINE")"
CUDA_VERSION="$(sed -E 's/.*, V([0-9.]+).*/\1/' <<<"$NVCC_LINE")"
CUDA_DIR="$(basename "$TOOLKIT")"
[[ "$CUDA_DIR" == cuda-* ]] || CUDA_DIR="cuda-$CUDA_RELEASE"
CUDA_BASE_IMAGE="${CUDA_BASE_IMAGE:-cudaenv-cuda-base:$CUDA_RELEASE}"

# Names, sizes, modification times and link targets of every file in the toolkit.
FINGERPRINT="$(cd "$TOOLKIT" && find . -printf '%P %s %T@ %l\n' | LC_ALL=C sort | sha256sum \
  | cut -c1-16)"

if [[ "${FORCE:-0}" != 1 ]] && have_image "$CUDA_BASE_IMAGE"; then
  built="$(docker image inspect -f '{{index .Config.Labels "org.cudaenv.cuda-base.fingerprint"}}' \
    "$CUDA_BASE_IMAGE")"
  if [[ "$built" == "$FINGERPRINT" ]]; then
    log "$CUDA_BASE_IMAGE exists (toolkit $CUDA_VERSION, fingerprint $FINGERPRINT); nothing to do"
    echo "$CUDA_BASE_IMAGE"
    exit 0
  fi
  log "$CUDA_BASE_IMAGE was built from another toolkit (fingerprint ${built:-none}); rebuilding"
fi

if ! have_image "$BASE_IMAGE"; then
  log "$BASE_IMAGE missing; running build-test-image.sh"
  BASE_IMAGE="$BASE_IMAGE" "$HERE/build-test-image.sh"
  have_image "$BASE_IMAGE" || { log "$BASE_IMAGE still missing (remove the test image, rerun)"; exit 1; }
fi

started=$SECONDS
args=(--network host -t "$CUDA_BASE_IMAGE" -f "$HERE/Dockerfile.cuda-base")
[[ "${FORCE:-0}" == 1 ]] && args+=(--no-cache)
log "docker build -> $CUDA_BASE_IMAGE (toolkit $TOOLKIT, CUDA $CUDA_VERSION, context $(du -sh "$TOOLKIT" | cut -f1))"
# Host networking: the build's apt-get reaches the mirror the way the host does.
docker build "${args[@]}" \
  --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  --build-arg "CUDA_VERSION=$CUDA_VERSION" \
  --build-arg "CUDA_RELEASE=$CUDA_RELEASE" \
  --build-arg "CUDA_DIR=$CUDA_DIR" \
  --build-arg "TOOLKIT_FINGERPRINT=$FINGERPRINT" \
  "$TOOLKIT" >&2
size="$(docker image inspect -f '{{.Size}}' "$CUDA_BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
log "$CUDA_BASE_IMAGE: $size, $((SECONDS - started)) s"

# What a real devel image has and this toolkit lacks: said once here, not discovered later.
[[ -e "$TOOLKIT/bin/compute-sanitizer" ]] \
  || log "NOTE: no compute-sanitizer in $TOOLKIT: images on $CUDA_BASE_IMAGE cannot run sanitizer stages"
compgen -G "$TOOLKIT/lib64/libcublas.so*" >/dev/null \
  || log "NOTE: no cuBLAS in $TOOLKIT: problems linking -lcublas need the nvidia-cublas wheel"
[[ -e "$TOOLKIT/lib64/stubs/libcuda.so" ]] \
  || log "NOTE: no lib64/stubs/libcuda.so in $TOOLKIT: -lcuda links only where a driver is mounted"
echo "$CUDA_BASE_IMAGE"
