"""CUDA inside the local sandbox (GPU only): the device nodes are bound in, the memory limit
(RLIMIT_DATA, not RLIMIT_AS, which CUDA's large virtual reservations would break) lets a
context start, and CUDA_VISIBLE_DEVICES passes through."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cudaenv.sandbox.local import LocalSandbox
from cudaenv.toolkit import has_gpu, toolkit_env

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU visible (has_gpu() is False)"),
]

PROGRAM = r"""
#include <cstdio>
__global__ void twice(int* x) { x[threadIdx.x] *= 2; }
int main() {
    int n = -1;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) { printf("devices: error %s\n", cudaGetErrorString(err)); return 0; }
    printf("devices: %d\n", n);
    if (n == 0) return 0;
    int host[32], *dev = nullptr;
    for (int i = 0; i < 32; ++i) host[i] = i;
    cudaMalloc(&dev, sizeof host);
    cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
    twice<<<1, 32>>>(dev);
    cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost);
    printf("kernel: %s\n", host[31] == 62 ? "ok" : "wrong");
    return 0;
}
"""


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    work = tmp_path_factory.mktemp("gpu-bin")
    (work / "probe.cu").write_text(PROGRAM)
    env = {**os.environ, **toolkit_env()}
    subprocess.run(["nvcc", "-o", str(work / "probe"), str(work / "probe.cu")], check=True, env=env)
    return Path(work / "probe").read_bytes()


def _run(binary: bytes, env: dict[str, str] | None = None) -> str:
    with LocalSandbox() as box:
        box.write_file("probe", binary)
        res = box.exec("chmod +x probe && ./probe", timeout=120, env=env)
        assert res.exit_code == 0, res
        return f"{box.isolation}\n{res.stdout}"


def test_a_kernel_runs_in_the_sandbox(binary: bytes) -> None:
    out = _run(binary)
    assert "kernel: ok" in out, out


def test_cuda_visible_devices_reaches_the_program(binary: bytes) -> None:
    out = _run(binary, {"CUDA_VISIBLE_DEVICES": ""})
    assert "devices: 0" in out or "no CUDA-capable device" in out, out
