"""One output capper: the local capture, the container server's capture and a whole stream
give the same text for any stream, cap and chunking; one liveness check for host pids."""

from __future__ import annotations

import base64
import os
import random
import subprocess
import sys

import pytest

from cudaenv.sandbox import _strays, pid_alive
from cudaenv.sandbox._docker_sandbox import _decode
from cudaenv.sandbox._exec_server import Capped
from cudaenv.sandbox._supervisor import Capture
from cudaenv.sandbox.base import cap_output


def _chunks(rng: random.Random, data: bytes) -> list[bytes]:
    cuts = sorted(rng.sample(range(len(data) + 1), k=min(len(data) + 1, rng.randint(0, 6))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@pytest.mark.parametrize("seed", range(40))
def test_every_capture_gives_the_whole_streams_text(seed: int) -> None:
    rng = random.Random(seed)
    cap = rng.choice([1, 2, 3, 10, 64, 101])
    size = rng.choice([0, 1, cap - 1, cap, cap + 1, 2 * cap, 2 * cap + 1, 7 * cap + 3])
    alphabet = "aé\n€x".encode()  # multi-byte characters split by the cuts
    data = bytes(rng.choice(alphabet) for _ in range(max(0, size)))
    expected = cap_output(data, cap)
    local, server = Capture(cap), Capped(cap)
    for chunk in _chunks(rng, data):
        local.feed(chunk)
        server.add(chunk)
    assert local.text() == expected
    wire = {
        k: v if k == "total" else base64.b64encode(v).decode()
        for k, v in server.__dict__.items()
        if k != "cap"
    }
    assert _decode(wire, cap) == expected
    text, truncated = expected
    assert truncated == (len(data) > cap)
    if truncated:
        assert f"[... {len(data) - 2 * (cap // 2)} bytes truncated ...]" in text


def test_cap_output_keeps_head_and_tail() -> None:
    data = b"".join(b"%d\n" % i for i in range(1000))
    text, truncated = cap_output(data, 20)
    assert truncated and text.startswith("0\n1\n2\n3\n") and text.endswith("\n998\n999\n")
    assert cap_output(b"short", 20) == ("short", False)


def test_pid_alive_is_one_check_false_for_zombies_and_the_gone() -> None:
    assert pid_alive is _strays.pid_alive
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while True:  # exited, not yet reaped: a zombie
        with open(f"/proc/{child.pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
    assert not pid_alive(child.pid) and _strays.alive([os.getpid(), child.pid]) == [os.getpid()]
    child.wait()
    assert not pid_alive(child.pid)
