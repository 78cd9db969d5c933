"""Real small filesystems for the store's fault tests: a tmpfs (full-disk) or a read-only one."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


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
