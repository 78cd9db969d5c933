"""``python -m cudaenv.grading.profiler [--where]``: build the profiler now (if it is not
cached yet) and print its path, or with ``--where`` its location as JSON (see
:func:`cudaenv.grading.profiler.where`). Dockerfile.eval runs it so images carry the library
prebuilt; the grader runs ``--where`` inside an image to find it."""

from __future__ import annotations

import sys

from cudaenv.grading.profiler import build_profiler, where


def main() -> None:
    if "--where" in sys.argv[1:]:
        sys.stdout.write(where().model_dump_json() + "\n")
    else:
        sys.stdout.write(f"{build_profiler()}\n")


if __name__ == "__main__":
    main()
