#!/usr/bin/env bash
# CI: install the coding-agent CLIs that tests/agents/test_installed.py drives.
# Node.js from Debian (apt `nodejs npm`) when `node` is missing, then the CLIs globally under
# /usr/local at the versions pinned in agents/*/recipe.yaml (the LocalSandbox hides /root, so a
# per-user npm prefix would be invisible inside it). Idempotent: a CLI already at its pinned
# version is left alone.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${CUDAENV_AGENTS_PREFIX:-/usr/local}"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "agents-setup: installing nodejs and npm (apt)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm ca-certificates >/dev/null
fi
echo "agents-setup: node $(node --version), npm $(npm --version)" >&2

# "package version binary" per recipe, read from the recipe files (the single source of pins)
pins() {
  for recipe in "$ROOT"/agents/*/recipe.yaml; do
    awk '/^npm_package:/{p=$2} /^version:/{v=$2} /^binary:/{b=$2} END{gsub(/"/,"",p); gsub(/"/,"",v); gsub(/"/,"",b); print p, v, b}' "$recipe"
  done
}

pins | while read -r pkg version binary; do
  [ -n "$pkg" ] && [ -n "$version" ] || continue
  have="$(npm ls -g --prefix "$PREFIX" --depth=0 --json 2>/dev/null \
    | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{const j=JSON.parse(s);const d=(j.dependencies||{})[process.argv[1]];process.stdout.write(d&&d.version||"")}catch(e){}})' "$pkg")"
  if [ "$have" = "$version" ] && [ -x "$PREFIX/bin/$binary" ]; then
    echo "agents-setup: $pkg@$version already installed" >&2
    continue
  fi
  echo "agents-setup: npm install -g $pkg@$version (prefix $PREFIX)" >&2
  npm install -g --prefix "$PREFIX" --no-fund --no-audit --loglevel=error "$pkg@$version" >&2
  "$PREFIX/bin/$binary" --version >&2
done
