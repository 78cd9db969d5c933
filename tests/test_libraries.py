"""The GPU library table, where each library is found (toolkit or wheel), and the libcuda
link-time stub made from the toolkit's own cuda.h."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cudaenv import libraries, toolkit
from cudaenv.driver_stub import driver_functions, make_stub, stub_source
from cudaenv.problems.python_runtimes import imported_modules, needs_real_gpu


def test_linked_names_reads_both_spellings_and_keeps_order() -> None:
    cmd = "nvcc -I include -o t.out a.cu -lcudnn -l cuda -lnvrtc -lcudnn -ldl && ./t.out -lx"
    assert libraries.linked_names(cmd) == ["cudnn", "cuda", "nvrtc", "dl", "x"]
    assert libraries.linked_names("echo 'unterminated") == []


def test_required_comes_from_the_command_and_the_problems_own_includes() -> None:
    need = libraries.required(
        "nvcc -o t t.cu -lcusolver -lcublas -ldl -lpthread",
        ['#include "mine.h"\n#  include <cudnn_frontend.h>\n', "#include <curand_kernel.h>"],
    )
    assert [lib.name for lib in need] == ["cuSOLVER", "cuBLAS", "cudnn-frontend", "cuRAND"]
    assert libraries.required(None, []) == []
    # cuda.h is the toolkit's own header: including it for its types needs no libcuda
    assert libraries.required("nvcc -o t t.cu", ["#include <cuda.h>"]) == []
    assert libraries.required("nvcc -o t t.cu -lcuda", []) == [libraries.BY_LINK["cuda"]]


def test_missing_reason_names_each_library_and_its_extra() -> None:
    cufft, cudnn = libraries.BY_LINK["cufft"], libraries.BY_LINK["cudnn"]
    assert libraries.missing_reason([cufft]) == (
        "cuFFT is not installed here (pip install 'cudaenv[mathlibs]')"
    )
    both = libraries.missing_reason([cufft, cudnn])
    assert both is not None and both.startswith("cuFFT and cuDNN are not installed here")
    assert "cudaenv[mathlibs]" in both and "cudaenv[cudnn]" in both
    assert libraries.missing_reason([]) is None


def test_a_wheel_is_found_through_its_file_list(monkeypatch, tmp_path: Path) -> None:
    """Wherever pip put it: the headers' and libraries' directories come from the files the
    distribution records."""
    inc, lib = tmp_path / "nvidia" / "cu13" / "include", tmp_path / "nvidia" / "cu13" / "lib"
    inc.mkdir(parents=True)
    lib.mkdir(parents=True)
    files = (inc / "cufft.h", inc / "cufftXt.h", lib / "libcufft.so.12", lib / "libcufftw.so.12")
    monkeypatch.setattr(
        libraries, "_dist_files", lambda name: files if name == "nvidia-cufft" else ()
    )
    found = libraries.in_wheel(libraries.BY_LINK["cufft"])
    assert found.include == inc and found.lib == lib
    assert libraries.in_wheel(libraries.BY_LINK["curand"]) == libraries.Located()


def test_links_cover_every_versioned_library_without_a_link_of_its_own(tmp_path: Path) -> None:
    first, second = tmp_path / "cu13", tmp_path / "cudnn"
    for d, names in ((first, ["libcufft.so.12", "libcurand.so.10", "libnvrtc.so.13",
                              "libnvrtc.so"]), (second, ["libcudnn.so.9", "libcufft.so.11"])):  # fmt: skip
        d.mkdir()
        for n in names:
            (d / n).write_bytes(b"")
    made = toolkit.link_dir_for([first, second], tmp_path / "cache")
    assert sorted(p.name for p in made.iterdir()) == ["libcudnn.so", "libcufft.so", "libcurand.so"]
    # the first directory's cuFFT wins (the linker's search order); libnvrtc.so needs no link
    assert (made / "libcufft.so").resolve() == (first / "libcufft.so.12").resolve()


def test_python_runtimes_without_a_simulator_need_a_gpu() -> None:
    assert imported_modules("import cuda.tile as ct\nfrom torch import nn\n") == {
        "cuda.tile",
        "torch",
    }
    assert imported_modules("from . import x\nimport numba.cuda") == {"numba.cuda"}
    assert imported_modules("import torch\ndef broken(:\n") == {"torch"}  # read by regex
    assert needs_real_gpu([("test/t.py", "import torch")])
    assert needs_real_gpu([("solution_test.py", "from cuda.tile import kernel")])
    assert not needs_real_gpu([("t.py", "from numba import cuda\nimport numpy")])
    assert not needs_real_gpu([("README.md", "import torch")])  # not Python


needs_toolkit = pytest.mark.skipif(
    toolkit.cuda_home() is None, reason="needs the CUDA toolkit (cuda.h)"
)


@needs_toolkit
def test_the_driver_stub_exports_what_cuda_h_declares(tmp_path: Path) -> None:
    include = libraries.in_toolkit(libraries.BY_LINK["cuda"], toolkit.cuda_home()).include
    assert include is not None
    names = driver_functions(include)
    # the names calls compile to: versioned (_v2), per-thread (_ptsz), and the plain ones
    for name in ("cuInit", "cuLaunchKernel", "cuMemAlloc_v2", "cuModuleLoadData",
                 "cuLaunchKernel_ptsz", "cuGetProcAddress_v2", "cuProfilerStart"):  # fmt: skip
        assert name in names, name
    assert "int cuInit(void) { return 34; }" in stub_source(names)
    stub = make_stub(include, tmp_path)
    assert stub is not None and make_stub(include, tmp_path) == stub  # made once per header
    so = stub / "libcuda.so"
    dynamic = subprocess.run(["readelf", "-dW", str(so)], capture_output=True, text=True).stdout
    assert "[libcuda.so.1]" in dynamic  # binaries record the driver's soname
    exported = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                              text=True).stdout  # fmt: skip
    assert " T cuLaunchKernel\n" in exported and " T cuMemAlloc_v2\n" in exported


@needs_toolkit
def test_a_driver_api_program_links_without_a_driver(tmp_path: Path) -> None:
    """-lcuda through the grader's environment, on a machine with or without a driver."""
    src = tmp_path / "d.cu"
    src.write_text("#include <cuda.h>\nint main() { return cuInit(0) == CUDA_SUCCESS ? 0 : 1; }\n")
    env = dict(toolkit.toolkit_env())
    proc = subprocess.run(
        ["nvcc", "-o", str(tmp_path / "d"), str(src), "-lcuda"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    dynamic = subprocess.run(["readelf", "-d", str(tmp_path / "d")], capture_output=True,
                             text=True).stdout  # fmt: skip
    assert "[libcuda.so.1]" in dynamic
    stub = toolkit.stub_dir()
    assert stub is not None
    assert str(stub) not in env["LD_LIBRARY_PATH"].split(":")  # never what loads at run time


def test_the_cudnn_frontend_gets_its_build_allowance() -> None:
    """Its header-only templates take far longer to compile than a kernel: a build that
    includes it gets more time before its timeout is the solution's failure."""
    heavy = libraries.build_allowance_s("nvcc -o t t.cpp -lcudnn", ["#include <cudnn_frontend.h>"])
    assert heavy == 300.0
    assert (
        libraries.build_allowance_s("nvcc -o t t.cu -lcufft -lcudnn", ["#include <cudnn.h>"]) == 0
    )
