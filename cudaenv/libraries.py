"""The GPU libraries a build command may link, where each is found, and which are missing.

One table (:data:`LIBRARIES`) says, per library, the ``-l`` names and headers it answers, the
NVIDIA wheel that ships it at the supported toolkit's release and the cudaenv extra that
installs that wheel. A library is found in the CUDA toolkit first, else in its wheel (through
the wheel's own file list, wherever pip put it). The CUDA driver API (``-lcuda``) is the driver's
own library, absent without a driver: a link-time stub stands in for it
(:mod:`cudaenv.driver_stub`).

Why here and not in the grader: a problem that needs a library which is not installed cannot be
graded on this machine at all, so that is the machinery's failure (infrastructure, masked),
decided from what the *problem* asks for (its build command's ``-l`` flags, the headers its own
files include), never from what a solution includes.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class GpuLibrary(BaseModel):
    """One library a ComputeEval-style build may use."""

    model_config = ConfigDict(frozen=True)

    name: str  # as people write it: "cuFFT"
    links: tuple[str, ...]  # the ``-l`` names it answers (``-lcufft`` -> "cufft")
    headers: tuple[str, ...]  # headers a problem may include; the first marks its include dir
    distribution: str | None = None  # the pip distribution that ships it (None: a stub)
    extra: str | None = None  # the cudaenv extra that installs the distribution
    stub: bool = False  # a link-time stand-in (the driver's libcuda), never loaded at run time
    #: extra build seconds a translation unit including it may take: the cudnn-frontend's
    #: header-only templates take ~30 s to compile on an idle core, minutes on a busy machine
    build_allowance_s: float = 0.0

    @property
    def install_hint(self) -> str:
        if self.extra:
            return f"pip install 'cudaenv[{self.extra}]'"
        return "install a C compiler (gcc) so cudaenv can make the link-time stub"


#: every library ComputeEval 2026-1's build commands link beside the CUDA runtime and libc
#: (``-lcudart``, ``-lcudadevrt``, ``-ldl``, ``-lpthread`` come with the toolkit or the system)
LIBRARIES: tuple[GpuLibrary, ...] = (
    GpuLibrary(
        name="cuBLAS",
        links=("cublas", "cublasLt"),
        headers=("cublas_v2.h", "cublas.h", "cublasLt.h", "cublasXt.h", "cublas_api.h"),
        distribution="nvidia-cublas",
        extra="cublas",
    ),
    GpuLibrary(
        name="NVRTC",
        links=("nvrtc",),
        headers=("nvrtc.h",),
        distribution="nvidia-cuda-nvrtc",
        extra="cublas",
    ),
    GpuLibrary(
        name="cuFFT",
        links=("cufft", "cufftw"),
        headers=("cufft.h", "cufftXt.h", "cufftw.h"),
        distribution="nvidia-cufft",
        extra="mathlibs",
    ),
    GpuLibrary(
        name="cuRAND",
        links=("curand",),
        headers=("curand.h", "curand_kernel.h"),
        distribution="nvidia-curand",
        extra="mathlibs",
    ),
    GpuLibrary(
        name="cuSPARSE",
        links=("cusparse",),
        headers=("cusparse.h", "cusparse_v2.h"),
        distribution="nvidia-cusparse",
        extra="mathlibs",
    ),
    GpuLibrary(
        name="cuSOLVER",
        links=("cusolver", "cusolverMg"),
        headers=("cusolverDn.h", "cusolverSp.h", "cusolverRf.h", "cusolverMg.h"),
        distribution="nvidia-cusolver",
        extra="mathlibs",
    ),
    GpuLibrary(
        name="nvJitLink",
        links=("nvJitLink",),
        headers=("nvJitLink.h",),
        distribution="nvidia-nvjitlink",
        extra="mathlibs",
    ),
    GpuLibrary(
        name="cuDNN",
        links=("cudnn",),
        headers=("cudnn.h", "cudnn_graph.h", "cudnn_ops.h", "cudnn_cnn.h", "cudnn_adv.h"),
        distribution="nvidia-cudnn-cu13",
        extra="cudnn",
    ),
    GpuLibrary(
        name="cudnn-frontend",
        links=(),
        headers=("cudnn_frontend.h",),
        distribution="nvidia-cudnn-frontend",
        extra="cudnn",
        build_allowance_s=300.0,
    ),
    GpuLibrary(
        name="the CUDA driver API (libcuda)",
        links=("cuda",),
        headers=("cuda.h",),
        stub=True,
    ),
)

BY_LINK: dict[str, GpuLibrary] = {name: lib for lib in LIBRARIES for name in lib.links}
#: a header means its library only where the header is the library's own (cuda.h is the
#: toolkit's: including it for its types needs no libcuda)
BY_HEADER: dict[str, GpuLibrary] = {
    h: lib for lib in LIBRARIES if not lib.stub for h in lib.headers
}


class Located(BaseModel):
    """Where one library's headers and shared objects are (None: not shipped that way)."""

    include: Path | None = None
    lib: Path | None = None


def linked_names(build_command: str) -> list[str]:
    """The ``-l`` names of a shell build command (``-lcufft`` and ``-l cufft`` alike)."""
    try:
        words = shlex.split(build_command, comments=False)
    except ValueError:
        words = build_command.split()
    names: list[str] = []
    for i, word in enumerate(words):
        if word == "-l" and i + 1 < len(words):
            names.append(words[i + 1])
        elif word.startswith("-l") and len(word) > 2:
            names.append(word[2:])
    return list(dict.fromkeys(names))


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def included_headers(texts: Iterable[str]) -> list[str]:
    """The header names ``#include``d by ``texts`` (file names only, in first-seen order)."""
    found: list[str] = []
    for text in texts:
        found += [Path(h).name for h in _INCLUDE.findall(text)]
    return list(dict.fromkeys(found))


def required(build_command: str | None, problem_texts: Iterable[str]) -> list[GpuLibrary]:
    """The libraries a problem needs: those its build command links and those its own
    (context and test) files include. A solution's includes never count: a header the
    problem does not provide is the solution's business."""
    libs = [BY_LINK[n] for n in linked_names(build_command or "") if n in BY_LINK]
    libs += [BY_HEADER[h] for h in included_headers(problem_texts) if h in BY_HEADER]
    return list(dict.fromkeys(libs))


def build_allowance_s(build_command: str | None, texts: Iterable[str]) -> float:
    """Extra build time for the heaviest library ``build_command`` links or ``texts`` include
    (the problem's and the solution's files alike: a build that includes the cudnn-frontend
    compiles its templates, whoever asked for them)."""
    return max((lib.build_allowance_s for lib in required(build_command, texts)), default=0.0)


@functools.cache
def _dist_files(distribution: str) -> tuple[Path, ...]:
    """The installed files of a pip distribution (absolute), or () when it is not installed."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(Path(str(dist.locate_file(f))) for f in dist.files or ())


def in_wheel(lib: GpuLibrary) -> Located:
    """Where ``lib``'s wheel put its headers and libraries (empty when not installed)."""
    if lib.distribution is None:
        return Located()
    files = _dist_files(lib.distribution)
    marker = lib.headers[0] if lib.headers else None
    include = next((f.parent for f in files if marker and f.name == marker), None)
    stems = tuple(f"lib{n}.so" for n in lib.links)
    libdir = next((f.parent for f in files if f.name.split(".so")[0] + ".so" in stems), None)
    return Located(include=include, lib=libdir)


def in_toolkit(lib: GpuLibrary, home: Path | None) -> Located:
    """Where the CUDA toolkit at ``home`` has ``lib`` (its own cuBLAS, NVRTC, stubs, ...)."""
    if home is None:
        return Located()
    include = next(
        (
            d
            for d in _toolkit_dirs(home, "include")
            if lib.headers and (d / lib.headers[0]).exists()
        ),
        None,
    )
    libdir = None
    sub = "lib64/stubs" if lib.stub else "lib64"
    for d in _toolkit_dirs(home, sub):
        if lib.links and any(d.glob(f"lib{lib.links[0]}.so*")):
            libdir = d
            break
    return Located(include=include, lib=libdir)


def _toolkit_dirs(home: Path, sub: str) -> list[Path]:
    """``home/sub`` and its ``targets/<arch>/`` twin (a toolkit laid out either way)."""
    plain = sub.replace("lib64", "lib")
    return [home / sub, *sorted(home.glob(f"targets/*/{plain}"))]


def installed_in_toolkit(lib: GpuLibrary, home: Path | None) -> bool:
    """Whether the toolkit itself has ``lib`` (then its wheel, if any, is not used)."""
    found = in_toolkit(lib, home)
    return found.lib is not None if lib.links else found.include is not None


def installed(lib: GpuLibrary, home: Path | None, stub_dir: Path | None) -> bool:
    """Whether a build here finds ``lib``: its headers (if it has any a problem includes) and
    its shared object, from the toolkit, its wheel or (the driver) the link-time stub."""
    if lib.stub:
        return in_toolkit(lib, home).lib is not None or stub_dir is not None
    tk, wheel = in_toolkit(lib, home), in_wheel(lib)
    has_headers = tk.include is not None or wheel.include is not None
    has_lib = not lib.links or tk.lib is not None or wheel.lib is not None
    return has_headers and has_lib


def missing_reason(libs: Iterable[GpuLibrary]) -> str | None:
    """The infrastructure reason for ``libs`` missing here (None: none missing), e.g.
    "cuFFT is not installed here (pip install 'cudaenv[mathlibs]')"."""
    libs = list(libs)
    if not libs:
        return None
    names = " and ".join(lib.name for lib in libs)
    hints = "; ".join(dict.fromkeys(lib.install_hint for lib in libs))
    verb = "is" if len(libs) == 1 else "are"
    return f"{names} {verb} not installed here ({hints})"
