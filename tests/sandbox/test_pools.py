"""``cudaenv.sandbox.make_pool``: a pool of fresh sandboxes for any backend."""

from __future__ import annotations

import pytest

from cudaenv.errors import SandboxClosedError, SpecError
from cudaenv.sandbox import make_pool


def test_a_local_pool_lends_a_new_sandbox_each_time() -> None:
    with make_pool("local", size=2) as pool:
        first, second = pool.acquire(), pool.acquire()
        try:
            assert first.fresh and second.fresh
            first.write_file("mine.txt", "first")
            assert first.exec("cat mine.txt", timeout=30).stdout == "first"
            assert "mine.txt" not in second.list_files()
        finally:
            first.close()
            second.close()
    with pytest.raises(SandboxClosedError):
        pool.acquire()


def test_pool_options_are_checked_like_a_sandboxs() -> None:
    with pytest.raises(SpecError, match="unknown sandbox backend 'nope'"):
        make_pool("nope")
    with pytest.raises(SpecError, match="'image' is not an option of the local sandbox"):
        make_pool("local", image="x")
