#!/usr/bin/env bash
# Assemble a local CUDA "devel" base image without a registry, idempotently:
#   cudaenv-base:bookworm (docker/build-test-image.sh, run first when missing)
#   + this host's CUDA toolkit (CUDA_SRC, default /usr/local/cuda, symlinks resolved)
#   + cuBLAS where the toolkit lacks it, from NVIDIA's nvidia-cublas wheel at the version the
#     toolkit's CUDA release ships (headers, libcublas*.so and their links, as in a devel image)
#   + NVRTC likewise, from the nvidia-cuda-nvrtc wheel (nvrtc.h, libnvrtc*.so, libnvrtc-builtins*)
#   + cuFFT, cuRAND, cuSPARSE, cuSOLVER, nvJitLink, cuDNN and the cudnn-frontend headers likewise
#     (LIB_WHEELS), and a libcuda link-time stub made from cuda.h where lib64/stubs has none
#   + the environment of nvidia/cuda:<v>-devel (CUDA_VERSION, PATH, LD_LIBRARY_PATH, ld.so.conf,
#     NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, ...) and g++ for nvcc
#   -> cudaenv-cuda-base:<release> (e.g. cudaenv-cuda-base:13.0), see docker/Dockerfile.cuda-base.
# The toolkit directory is the build context, so nothing is staged on disk. The image records a
# fingerprint of its inputs (the toolkit's file names, sizes and times, the Dockerfile, the
# cuBLAS and NVRTC pins): a rerun with the same inputs does nothing, a changed one rebuilds, FORCE=1
# rebuilds without the layer cache. The cuBLAS wheel is downloaded by pip inside the build
# (host networking, like apt): an exact version from PyPI is the same bytes on any machine,
# where the host's own nvidia-cublas (the optional `cublas` extra, unpinned) may be missing or
# of another CUDA release. The label org.cudaenv.cuda-base.cublas says what the image has: the
# wheel's version, "toolkit" (the toolkit's own cuBLAS) or empty (none); likewise
# org.cudaenv.cuda-base.nvrtc for NVRTC (which libcublasLt loads at run time).
# Prints the image name on stdout (logs go to stderr), for docker/build-cuda-images.sh.
# Environment: CUDA_SRC, CUDA_BASE_IMAGE (the tag to build), BASE_IMAGE (the Debian base),
# CUBLAS_VERSION (overrides the pin; empty adds no cuBLAS), CUBLAS_PACKAGE (default
# nvidia-cublas; nvidia-cublas-cu12 for a CUDA 12 toolkit), NVRTC_VERSION / NVRTC_PACKAGE (the
# same for nvidia-cuda-nvrtc / nvidia-cuda-nvrtc-cu12), LIB_WHEELS (the other libraries' wheels,
# space-separated name==version; default: mathlibs_pins and cudnn_pins), EXTRA_CA_CERTS (as in
# docker/build-images.sh: the host's added CA certificates by default, trusted by that pip).
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

# The nvidia-cublas and nvidia-cuda-nvrtc versions each toolkit's CUDA release ships, keyed by
# nvcc's version: the pins of the cuda-toolkit==<release> wheel on PyPI (its `cublas` and `nvrtc`
# extras). Add a line for another toolkit, or set CUBLAS_VERSION / NVRTC_VERSION.
cublas_pin() {
  case "$1" in
    13.0.88) echo 13.1.0.3 ;;  # CUDA 13.0 Update 2 (cuda-toolkit==13.0.2)
  esac
}
nvrtc_pin() {
  case "$1" in
    13.0.88) echo 13.0.88 ;;  # CUDA 13.0 Update 2 (cuda-toolkit==13.0.2)
  esac
}
# The other libraries' wheels (cuFFT, cuRAND, cuSPARSE, cuSOLVER, nvJitLink at the release the
# cuda-toolkit==<release> wheel pins; cuDNN at the release ComputeEval's images use and the
# cudnn-frontend headers), the same pins as pyproject.toml's `mathlibs` and `cudnn` extras.
mathlibs_pins() {
  case "$1" in
    13.0.88) echo nvidia-cufft==12.0.0.61 nvidia-curand==10.4.0.35 nvidia-cusparse==12.6.3.3 \
      nvidia-cusolver==12.0.4.66 nvidia-nvjitlink==13.0.88 ;;  # cuda-toolkit==13.0.2
  esac
}
cudnn_pins() {
  case "$1" in
    13.0.88) echo nvidia-cudnn-cu13==9.20.0.48 nvidia-cudnn-frontend==1.22.1 ;;
  esac
}
CUBLAS_PACKAGE="${CUBLAS_PACKAGE:-nvidia-cublas}"
if compgen -G "$TOOLKIT/lib64/libcublas.so*" >/dev/null; then
  CUBLAS_VERSION="" CUBLAS_LABEL=toolkit
else
  [[ -n "${CUBLAS_VERSION+set}" ]] || CUBLAS_VERSION="$(cublas_pin "$CUDA_VERSION")"
  CUBLAS_LABEL="$CUBLAS_VERSION"
fi
NVRTC_PACKAGE="${NVRTC_PACKAGE:-nvidia-cuda-nvrtc}"
if compgen -G "$TOOLKIT/lib64/libnvrtc.so*" >/dev/null; then
  NVRTC_VERSION="" NVRTC_LABEL=toolkit
else
  [[ -n "${NVRTC_VERSION+set}" ]] || NVRTC_VERSION="$(nvrtc_pin "$CUDA_VERSION")"
  NVRTC_LABEL="$NVRTC_VERSION"
fi
# LIB_WHEELS overrides both lists (empty: no other libraries); a library the toolkit has
# itself (lib64/libcufft.so* ...) is taken from the toolkit, its wheel left out.
if [[ -z "${LIB_WHEELS+set}" ]]; then
  LIB_WHEELS=""
  for pin in $(mathlibs_pins "$CUDA_VERSION") $(cudnn_pins "$CUDA_VERSION"); do
    case "$pin" in
      nvidia-cufft==*) stem=libcufft ;; nvidia-curand==*) stem=libcurand ;;
      nvidia-cusparse==*) stem=libcusparse ;; nvidia-cusolver==*) stem=libcusolver ;;
      nvidia-nvjitlink==*) stem=libnvJitLink ;; nvidia-cudnn-cu*==*) stem=libcudnn ;;
      *) stem="" ;;
    esac
    if [[ -n "$stem" ]] && compgen -G "$TOOLKIT/lib64/$stem.so*" >/dev/null; then continue; fi
    LIB_WHEELS="${LIB_WHEELS:+$LIB_WHEELS }$pin"
  done
fi
# Where the wheels' files land (cuBLAS and NVRTC alike), relative to the toolkit root with
# symlinks resolved (the directories nvcc's -I/-L, lib64 and ld.so.conf reach, whatever the
# toolkit's layout).
toolkit_dir() {
  local dir
  dir="$(readlink -f "$TOOLKIT/$1")"
  [[ -d "$dir" && "$dir" == "$TOOLKIT"/* ]] \
    || { log "$TOOLKIT/$1 is not a directory inside the toolkit"; exit 1; }
  echo "${dir#"$TOOLKIT"/}"
}
CUBLAS_INCLUDE_DIR="$(toolkit_dir include)"
CUBLAS_LIB_DIR="$(toolkit_dir lib64)"

if [[ -z "${EXTRA_CA_CERTS+set}" ]]; then
  EXTRA_CA_CERTS=""
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt)"
  fi
fi

# Names, sizes, modification times and link targets of every file in the toolkit, the cuBLAS
# and NVRTC wheels added and the Dockerfile's instructions (comment lines aside: editing them
# rebuilds nothing, where a new base image would rebuild the eval and agent images on it).
FINGERPRINT="$({
  (cd "$TOOLKIT" && find . -printf '%P %s %T@ %l\n' | LC_ALL=C sort)
  echo "cublas: $CUBLAS_PACKAGE==$CUBLAS_VERSION -> $CUBLAS_INCLUDE_DIR $CUBLAS_LIB_DIR"
  echo "nvrtc: $NVRTC_PACKAGE==$NVRTC_VERSION -> $CUBLAS_INCLUDE_DIR $CUBLAS_LIB_DIR"
  echo "libs: $LIB_WHEELS -> $CUBLAS_INCLUDE_DIR $CUBLAS_LIB_DIR"
  grep -vE '^[[:space:]]*#' "$HERE/Dockerfile.cuda-base"
} | sha256sum | cut -c1-16)"

if [[ "${FORCE:-0}" != 1 ]] && have_image "$CUDA_BASE_IMAGE"; then
  built="$(docker image inspect -f '{{index .Config.Labels "org.cudaenv.cuda-base.fingerprint"}}' \
    "$CUDA_BASE_IMAGE")"
  if [[ "$built" == "$FINGERPRINT" ]]; then
    log "$CUDA_BASE_IMAGE exists (toolkit $CUDA_VERSION, fingerprint $FINGERPRINT); nothing to do"
    echo "$CUDA_BASE_IMAGE"
    exit 0
  fi
  log "$CUDA_BASE_IMAGE was built from another toolkit, Dockerfile or cuBLAS/NVRTC pin" \
    "(fingerprint ${built:-none}, now $FINGERPRINT); rebuilding"
fi

if ! have_image "$BASE_IMAGE"; then
  log "$BASE_IMAGE missing; running build-test-image.sh"
  BASE_IMAGE="$BASE_IMAGE" "$HERE/build-test-image.sh"
  have_image "$BASE_IMAGE" || { log "$BASE_IMAGE still missing (remove the test image, rerun)"; exit 1; }
fi

started=$SECONDS
args=(--network host -t "$CUDA_BASE_IMAGE" -f "$HERE/Dockerfile.cuda-base")
[[ "${FORCE:-0}" == 1 ]] && args+=(--no-cache)
log "docker build -> $CUDA_BASE_IMAGE (toolkit $TOOLKIT, CUDA $CUDA_VERSION," \
  "cuBLAS ${CUBLAS_LABEL:-none}, NVRTC ${NVRTC_LABEL:-none}, libraries: ${LIB_WHEELS:-none}," \
  "context $(du -sh "$TOOLKIT" | cut -f1))"
# Host networking: the build's apt-get and pip reach the mirrors the way the host does.
docker build "${args[@]}" \
  --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  --build-arg "CUDA_VERSION=$CUDA_VERSION" \
  --build-arg "CUDA_RELEASE=$CUDA_RELEASE" \
  --build-arg "CUDA_DIR=$CUDA_DIR" \
  --build-arg "TOOLKIT_FINGERPRINT=$FINGERPRINT" \
  --build-arg "CUBLAS_PACKAGE=$CUBLAS_PACKAGE" \
  --build-arg "CUBLAS_VERSION=$CUBLAS_VERSION" \
  --build-arg "CUBLAS_INCLUDE_DIR=$CUBLAS_INCLUDE_DIR" \
  --build-arg "CUBLAS_LIB_DIR=$CUBLAS_LIB_DIR" \
  --build-arg "CUBLAS_LABEL=$CUBLAS_LABEL" \
  --build-arg "NVRTC_PACKAGE=$NVRTC_PACKAGE" \
  --build-arg "NVRTC_VERSION=$NVRTC_VERSION" \
  --build-arg "NVRTC_INCLUDE_DIR=$CUBLAS_INCLUDE_DIR" \
  --build-arg "NVRTC_LIB_DIR=$CUBLAS_LIB_DIR" \
  --build-arg "NVRTC_LABEL=$NVRTC_LABEL" \
  --build-arg "LIB_WHEELS=$LIB_WHEELS" \
  --build-arg "LIBS_INCLUDE_DIR=$CUBLAS_INCLUDE_DIR" \
  --build-arg "LIBS_LIB_DIR=$CUBLAS_LIB_DIR" \
  --build-arg "EXTRA_CA_CERTS=$EXTRA_CA_CERTS" \
  "$TOOLKIT" >&2
size="$(docker image inspect -f '{{.Size}}' "$CUDA_BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
log "$CUDA_BASE_IMAGE: $size, $((SECONDS - started)) s"

# What a real devel image has and this toolkit lacks: said once here, not discovered later.
[[ -e "$TOOLKIT/bin/compute-sanitizer" ]] \
  || log "NOTE: no compute-sanitizer in $TOOLKIT: images on $CUDA_BASE_IMAGE cannot run sanitizer stages"
case "$CUBLAS_LABEL" in
  toolkit) ;;
  "") log "NOTE: no cuBLAS in $TOOLKIT and none added (no nvidia-cublas pin for CUDA" \
        "$CUDA_VERSION, or CUBLAS_VERSION empty): problems linking -lcublas do not build on" \
        "$CUDA_BASE_IMAGE" ;;
  *) log "cuBLAS $CUBLAS_VERSION added from the $CUBLAS_PACKAGE wheel (not in $TOOLKIT):" \
       "headers in /usr/local/cuda/$CUBLAS_INCLUDE_DIR, libcublas.so and libcublasLt.so in" \
       "/usr/local/cuda/$CUBLAS_LIB_DIR; no static libcublas_static.a (the wheel has none)" ;;
esac
case "$NVRTC_LABEL" in
  toolkit) ;;
  "") log "NOTE: no NVRTC in $TOOLKIT and none added (no nvidia-cuda-nvrtc pin for CUDA" \
        "$CUDA_VERSION, or NVRTC_VERSION empty): nvrtc users, and cuBLASLt kernels it compiles" \
        "at run time (it loads libnvrtc), fail on $CUDA_BASE_IMAGE" ;;
  *) log "NVRTC $NVRTC_VERSION added from the $NVRTC_PACKAGE wheel (not in $TOOLKIT): nvrtc.h in" \
       "/usr/local/cuda/$CUBLAS_INCLUDE_DIR, libnvrtc.so and libnvrtc-builtins.so in" \
       "/usr/local/cuda/$CUBLAS_LIB_DIR; no static libnvrtc_static.a (the wheel has none)" ;;
esac
[[ -n "$LIB_WHEELS" ]] \
  && log "libraries added from their wheels: $LIB_WHEELS (headers in" \
       "/usr/local/cuda/$CUBLAS_INCLUDE_DIR, libraries in /usr/local/cuda/$CUBLAS_LIB_DIR)"
[[ -e "$TOOLKIT/lib64/stubs/libcuda.so" ]] \
  || log "no lib64/stubs/libcuda.so in $TOOLKIT: the image has one made from cuda.h (-lcuda links" \
       "without a driver; binaries load the real driver at run time)"
echo "$CUDA_BASE_IMAGE"
