"""``python -m cudaenv.grading.profiler``: build the profiler now (if it is not cached yet) and
print its path; Dockerfile.eval runs it so images carry the library prebuilt."""

from __future__ import annotations

import sys

from cudaenv.grading.profiler import build_profiler


def main() -> None:
    sys.stdout.write(f"{build_profiler()}\n")


if __name__ == "__main__":
    main()
