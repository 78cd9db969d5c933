"""For the fault tests: real small filesystems (a tmpfs to fill, a read-only one) and a suite
of distinct CPU problems (graded for real, no outcome shared between them)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CPU_HEADER, CPU_SOLUTION, CPU_TEST, write_problem


def cpu_suite(root: Path, n: int) -> Path:
    """``n`` CPU problems ``cpu-add-<i>`` that differ in their test file, so no grading of one
    is an outcome-cache hit for another and each episode is still grading when a signal comes."""
    for i in range(n):
        write_problem(
            root,
            f"cpu-add-{i}",
            spec={
                "build_command": "g++ -O1 -I include -o test.out solution.cpp test/test_main.cpp",
                "metadata": {"requires_gpu": False},
            },
            files={
                "context/include/add.h": CPU_HEADER,
                "test/test_main.cpp": f"// problem {i}\n{CPU_TEST}",
                "solution/solution.cpp": CPU_SOLUTION,
            },
        )
    return root


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """``mount_tmpfs(size_kb, read_only=False)``: a fresh tmpfs, unmounted afterwards; the test
    is skipped (with the reason) where this process may not mount."""
    mounted: list[Path] = []

    def mount(size_kb: int, read_only: bool = False) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root")
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        opts = f"size={size_kb}k" + (",ro" if read_only else "")
        res = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)
