#!/usr/bin/env bash
# CI: make `docker compose` (Compose v2) work on Debian bookworm, which does not package it.
# Harbor's docker environment drives `docker compose`; Debian trixie packages it as a Go
# binary that only needs libc6 >= 2.34 (bookworm has 2.36). Compose 2.26 builds through the
# daemon's own BuildKit (or the classic builder with DOCKER_BUILDKIT=0), local base images
# included, so the buildx plugin is not needed; COMPOSE_SETUP_PLUGINS="compose buildx" adds
# it (with it a Docker >= 23 CLI turns every `docker build` into `docker buildx build`).
#
# The .debs come from the Debian mirror the host's apt already uses, through a throwaway
# apt configuration (its own lists, cache and a trixie-only source in a temporary
# directory), so the host's sources, package lists and installed packages stay bookworm.
# Only the plugin binaries are unpacked, into $PLUGIN_DIR (default
# /usr/local/lib/docker/cli-plugins, where the docker CLI looks for plugins).
#
# Idempotent: a plugin that already answers `docker <plugin> version` is left alone.
# Set COMPOSE_SETUP_FORCE=1 to reinstall, COMPOSE_SETUP_SUITE to take another suite.
set -euo pipefail

PLUGIN_DIR="${PLUGIN_DIR:-/usr/local/lib/docker/cli-plugins}"
SUITE="${COMPOSE_SETUP_SUITE:-trixie}"
FORCE="${COMPOSE_SETUP_FORCE:-0}"
read -r -a PLUGINS <<<"${COMPOSE_SETUP_PLUGINS:-compose}"

log() { echo "compose-setup: $*" >&2; }

command -v docker >/dev/null || { log "the docker CLI is not installed"; exit 1; }

# plugin name -> Debian package
declare -A PACKAGE=([compose]=docker-compose [buildx]=docker-buildx)
need=()
for plugin in "${PLUGINS[@]}"; do
  [ -n "${PACKAGE[$plugin]:-}" ] || { log "unknown plugin $plugin (compose, buildx)"; exit 1; }
  if [ "$FORCE" != 1 ] && docker "$plugin" version >/dev/null 2>&1; then
    log "docker $plugin already works: $(docker "$plugin" version 2>/dev/null | head -n 1)"
  else
    need+=("$plugin")
  fi
done
if [ "${#need[@]}" -eq 0 ]; then
  exit 0
fi

# The mirror of the host's first Debian source (deb822 .sources or a one-line .list entry).
mirror_uri() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri="$(awk 'tolower($1)=="uris:" && $2 ~ /\/debian\/?$/ {print $2; exit}' "$f")"
    [ -n "$uri" ] && { echo "${uri%/}"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri="$(awk '$1=="deb" {for (i=2; i<=NF; i++) if ($i ~ /^[a-z+]+:\/\/.*\/debian\/?$/) {print $i; exit}}' "$f")"
    [ -n "$uri" ] && { echo "${uri%/}"; return; }
  done
  echo "http://deb.debian.org/debian"
}
MIRROR="$(mirror_uri)"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || { log "$KEYRING is missing (package debian-archive-keyring)"; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/sources" "$WORK/debs"
cat >"$WORK/sources/$SUITE.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE
Components: main
Signed-By: $KEYRING
EOF
APT=(
  -o "Dir::State::Lists=$WORK/lists"
  -o "Dir::Cache=$WORK/cache"
  -o "Dir::Etc::SourceList=/dev/null"
  -o "Dir::Etc::SourceParts=$WORK/sources"
  -o "APT::Architectures=$(dpkg --print-architecture)"
  -o "Acquire::Languages=none"
  # _apt cannot write into the root-only temporary directory; apt still checks the signatures
  -o "APT::Sandbox::User=root"
)

log "fetching ${need[*]} from $MIRROR $SUITE (apt state kept in a temporary directory)"
apt-get "${APT[@]}" -qq update
packages=()
for plugin in "${need[@]}"; do packages+=("${PACKAGE[$plugin]}"); done
(cd "$WORK/debs" && apt-get "${APT[@]}" -qq download "${packages[@]}")

mkdir -p "$PLUGIN_DIR"
for plugin in "${need[@]}"; do
  deb="$(ls "$WORK/debs/${PACKAGE[$plugin]}"_*.deb)"
  dpkg-deb -x "$deb" "$WORK/root-$plugin"
  bin="$WORK/root-$plugin/usr/libexec/docker/cli-plugins/docker-$plugin"
  [ -x "$bin" ] || { log "$(basename "$deb") has no cli-plugins/docker-$plugin"; exit 1; }
  install -m 0755 "$bin" "$PLUGIN_DIR/docker-$plugin.new"
  mv -f "$PLUGIN_DIR/docker-$plugin.new" "$PLUGIN_DIR/docker-$plugin"
  log "installed $(basename "$deb") as $PLUGIN_DIR/docker-$plugin"
done

for plugin in "${need[@]}"; do
  if ! out="$(docker "$plugin" version 2>&1)"; then
    log "docker $plugin version fails after the install:"
    echo "$out" >&2
    exit 1
  fi
  log "$(echo "$out" | head -n 1)"
done
