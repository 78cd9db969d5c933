"""The GPU images (docker/Dockerfile.eval, docker/Dockerfile.agent) against a real Docker engine.

Built without a registry by docker/build-cuda-images.sh (``cudaenv-eval:local`` and
``cudaenv-agent:local`` on a base holding the host's CUDA toolkit), or pointed at any build of
the two Dockerfiles with CUDAENV_CUDA_EVAL_IMAGE / CUDAENV_CUDA_AGENT_IMAGE. Checks: the
toolkit works as the sandbox user, the profiler baked in at build time is found without
compiling, bundled CUDA problems' reference solutions grade in the image (compiled, GPU stages
skipped without a GPU; passed with one), the cublas problems too where the image has cuBLAS
(a local base adds it from the nvidia-cublas wheel and names its version in the label
org.cudaenv.cuda-base.cublas), NVRTC links, loads and compiles where the image has it (likewise
from the nvidia-cuda-nvrtc wheel, label org.cudaenv.cuda-base.nvrtc), our per-group library
fixtures build (cuFFT ... cuDNN from their wheels, label org.cudaenv.cuda-base.libs; -lcuda
through a stub), and the agent CLIs are there at their pinned versions.
Skipped when the images are missing: too heavy to build in CI.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator

import pytest

pytest.importorskip("docker", reason="the docker extra is not installed")

import cudaenv
from cudaenv.agents.recipes import load_recipe
from cudaenv.errors import SandboxError
from cudaenv.grading.timing import sandbox_profiler
from cudaenv.sandbox.docker import DockerSandbox, docker_client
from cudaenv.toolkit import has_gpu

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EVAL_IMAGE = os.environ.get("CUDAENV_CUDA_EVAL_IMAGE", "cudaenv-eval:local")
AGENT_IMAGE = os.environ.get("CUDAENV_CUDA_AGENT_IMAGE", "cudaenv-agent:local")
# One reference solution per group that the image's toolkit alone must build (no cuBLAS).
PROBLEMS = ["fused-axpby", "thrust-transform-reduce"]
# The bundled problems whose build links -lcublas: cuBLAS headers and libraries in the toolkit.
CUBLAS_PROBLEMS = [
    "cublas-axpy-dot",
    "cublas-batched-gemm",
    "cublas-gemv-rows",
    "cublas-sgemm-bias",
]
# docker/build-cuda-base.sh: the nvidia-cublas version added, "toolkit", or "" (no cuBLAS).
CUBLAS_LABEL = "org.cudaenv.cuda-base.cublas"
# The same for NVRTC (nvidia-cuda-nvrtc), which libcublasLt also dlopens at run time.
NVRTC_LABEL = "org.cudaenv.cuda-base.nvrtc"
# The other libraries' wheels the local base laid out (name==version, space-separated; "" none).
LIBS_LABEL = "org.cudaenv.cuda-base.libs"
# Our per-group fixtures (tests/data/computeeval_groups/) that link a library beyond cuBLAS;
# the nvrtc one links -lcuda through the image's libcuda stub.
LIBRARY_FIXTURES = [
    "cudnn-frontend-relu",
    "mathlibs-cufft-forward",
    "mathlibs-curand-uniform",
    "mathlibs-cusolver-cholesky",
    "mathlibs-cusparse-spmv",
    "runtime-nvrtc-driver",
]

# Headers, the link-time name and the loader: prints the library's version, no GPU needed.
CUBLAS_VERSION_CHECK = textwrap.dedent(
    """
    #include <cstdio>
    #include <cublas_v2.h>

    int main() {
      int major = 0, minor = 0, patch = 0;
      if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
          cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
          cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
        return 1;
      }
      std::printf("%d.%d.%d\\n", major, minor, patch);
      return 0;
    }
    """
)

# nvrtc.h, -lnvrtc and the loader: prints NVRTC's version, then compiles a kernel to PTX (which
# loads libnvrtc-builtins); neither needs a GPU.
NVRTC_CHECK = textwrap.dedent(
    """
    #include <cstdio>
    #include <nvrtc.h>

    int main() {
      int major = 0, minor = 0;
      if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 1;
      std::printf("%d.%d\\n", major, minor);
      const char *src = "extern \\"C\\" __global__ void k(float *x) { x[threadIdx.x] *= 2; }";
      const char *opts[] = {"--gpu-architecture=compute_80"};
      nvrtcProgram prog;
      size_t ptx = 0;
      if (nvrtcCreateProgram(&prog, src, "k.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return 2;
      nvrtcResult res = nvrtcCompileProgram(prog, 1, opts);
      if (res != NVRTC_SUCCESS) {
        std::printf("%s\\n", nvrtcGetErrorString(res));
        return 3;
      }
      if (nvrtcGetPTXSize(prog, &ptx) != NVRTC_SUCCESS || ptx == 0) return 4;
      nvrtcDestroyProgram(&prog);
      std::printf("ptx\\n");
      return 0;
    }
    """
)

# Fails if build_profiler() would compile: the library must come from the image's cache.
PROFILER_CHECK = textwrap.dedent(
    """
    import cudaenv.grading.profiler as profiler
    import cudaenv.grading.profiler.build as profiler_build

    def no_compile(command):
        raise SystemExit("build_profiler() compiled: " + " ".join(command))

    profiler_build._run_nvcc = no_compile
    print(profiler.build_profiler())
    """
)


def _image_labels(image: str) -> dict[str, str]:
    try:
        client = docker_client()
    except SandboxError as exc:
        pytest.skip(f"Docker engine unreachable: {exc}")
    import docker

    try:
        return client.images.get(image).labels or {}
    except docker.errors.ImageNotFound:
        pytest.skip(f"image {image} missing; build it with docker/build-cuda-images.sh")


@pytest.fixture(scope="module")
def eval_labels() -> dict[str, str]:
    return _image_labels(EVAL_IMAGE)


@pytest.fixture(scope="module")
def cublas_version(eval_labels: dict[str, str]) -> str | None:
    """The cuBLAS version the image's label names ("toolkit" when its toolkit had its own;
    None for an image on a real nvidia/cuda devel base, which has cuBLAS); skips when the image
    was built without cuBLAS."""
    if CUBLAS_LABEL in eval_labels:
        if not eval_labels[CUBLAS_LABEL]:
            pytest.skip(
                f"{EVAL_IMAGE} has no cuBLAS (label {CUBLAS_LABEL}=''): its base toolkit has none "
                "and docker/build-cuda-base.sh had no nvidia-cublas pin for it (CUBLAS_VERSION)"
            )
        return eval_labels[CUBLAS_LABEL]
    if "org.cudaenv.cuda-base.version" in eval_labels:
        pytest.skip(
            f"{EVAL_IMAGE} is on a local CUDA base built before it carried cuBLAS (no label "
            f"{CUBLAS_LABEL}); rebuild it with docker/build-cuda-images.sh"
        )
    return None


@pytest.fixture(scope="module")
def nvrtc_version(eval_labels: dict[str, str]) -> str | None:
    """The NVRTC version the image's label names ("toolkit" when its toolkit had its own; None
    for an image on a real nvidia/cuda devel base, which has NVRTC); skips when the image was
    built without NVRTC."""
    if NVRTC_LABEL in eval_labels:
        if not eval_labels[NVRTC_LABEL]:
            pytest.skip(
                f"{EVAL_IMAGE} has no NVRTC (label {NVRTC_LABEL}=''): its base toolkit has none "
                "and docker/build-cuda-base.sh had no nvidia-cuda-nvrtc pin for it (NVRTC_VERSION)"
            )
        return eval_labels[NVRTC_LABEL]
    if "org.cudaenv.cuda-base.version" in eval_labels:
        pytest.skip(
            f"{EVAL_IMAGE} is on a local CUDA base built before it carried NVRTC (no label "
            f"{NVRTC_LABEL}); rebuild it with docker/build-cuda-images.sh"
        )
    return None


@pytest.fixture(scope="module")
def eval_box(eval_labels: dict[str, str]) -> Iterator[DockerSandbox]:
    with DockerSandbox(image=EVAL_IMAGE) as box:
        yield box


@pytest.fixture(scope="module")
def agent_box() -> Iterator[DockerSandbox]:
    _image_labels(AGENT_IMAGE)
    with DockerSandbox(image=AGENT_IMAGE) as box:
        yield box


def test_toolkit_runs_as_the_sandbox_user(eval_box: DockerSandbox) -> None:
    res = eval_box.exec('id -u; echo "$CUDA_HOME"; nvcc --version', timeout=60)
    assert res.ok, res
    uid, cuda_home, *nvcc = res.stdout.splitlines()
    assert uid == "1000" and cuda_home == "/usr/local/cuda"
    assert any("Cuda compilation tools, release" in line for line in nvcc), res.stdout


def test_sanitizer_matches_the_image_label(
    eval_box: DockerSandbox, eval_labels: dict[str, str]
) -> None:
    """An image built with REQUIRE_SANITIZER=1 (the default) has compute-sanitizer; one built
    without it says so in its label instead of differing silently."""
    res = eval_box.exec("command -v compute-sanitizer", timeout=30)
    if eval_labels.get("org.cudaenv.require-sanitizer", "1") == "1":
        assert res.ok, f"{EVAL_IMAGE} has no compute-sanitizer though its label requires it"
    else:
        assert not res.ok, res


def test_profiler_is_prebuilt(eval_box: DockerSandbox) -> None:
    """Found in $CUDAENV_CACHE_DIR under the same key at run time: nothing compiles, and
    the grader's ``--where`` question gets that library."""
    eval_box.write_file("profiler_check.py", PROFILER_CHECK)
    res = eval_box.exec("python profiler_check.py", timeout=120)
    assert res.ok, res
    path = res.stdout.strip()
    assert path.startswith("/opt/cudaenv/cache/profiler/"), path
    assert path.endswith("/libcudaenv_inject.so"), path
    res = eval_box.exec("python -m cudaenv.grading.profiler", timeout=120)
    assert res.ok and res.stdout.strip() == path, res
    # What the grader's benchmarks load in this image: the same library and the image's CUPTI.
    found = sandbox_profiler(eval_box)
    assert found.library == path
    assert found.ld_library_path.startswith("/usr/local/cuda/"), found  # the image's libcupti


def _grade_reference_solution(task_id: str) -> None:
    problem = cudaenv.load_suite("builtin")[task_id]
    options: dict[str, object] = {"image": EVAL_IMAGE}
    if has_gpu():
        options["gpus"] = 1
    verdict = cudaenv.grade(
        problem, problem.solution, sandbox="docker", sandbox_options=options, build_cache=False
    )
    assert verdict.stages["build"].status == "ok", verdict
    assert verdict.compiled is True
    if has_gpu():
        assert verdict.passed is True, verdict
    else:
        assert verdict.passed is None and verdict.failure is None, verdict
        assert verdict.reason == "compiled; GPU stages skipped (no GPU)"
        assert verdict.stages["test"].status == "skipped"


@pytest.mark.parametrize("task_id", PROBLEMS)
def test_reference_solution_grades_in_the_image(eval_labels: dict[str, str], task_id: str) -> None:
    _grade_reference_solution(task_id)


@pytest.mark.parametrize("task_id", CUBLAS_PROBLEMS)
def test_cublas_reference_solution_grades_in_the_image(
    cublas_version: str | None, task_id: str
) -> None:
    """Builds with the problem's own command (``nvcc ... -lcublas``) and the image's toolkit."""
    _grade_reference_solution(task_id)


def test_cublas_links_and_loads(eval_box: DockerSandbox, cublas_version: str | None) -> None:
    """cublas_v2.h on nvcc's include path, libcublas.so where it links, libcublas.so.<major>
    and libcublasLt.so.<major> where the loader finds them (ld.so.conf, no LD_LIBRARY_PATH),
    at the version the image's label names."""
    eval_box.write_file("cublas_version.cu", CUBLAS_VERSION_CHECK)
    res = eval_box.exec(
        "nvcc -o cublas_version cublas_version.cu -lcublas && ./cublas_version", timeout=180
    )
    assert res.ok, res
    loaded = res.stdout.strip()
    if cublas_version not in (None, "toolkit"):
        assert f"{cublas_version}.".startswith(f"{loaded}."), (loaded, cublas_version)


def test_nvrtc_links_loads_and_compiles(eval_box: DockerSandbox, nvrtc_version: str | None) -> None:
    """nvrtc.h on nvcc's include path, libnvrtc.so where it links, libnvrtc.so.<major> (what
    libcublasLt dlopens) and libnvrtc-builtins where the loader finds them (ld.so.conf), at the
    version the image's label names; NVRTC compiles a kernel to PTX without a GPU."""
    eval_box.write_file("nvrtc_check.cu", NVRTC_CHECK)
    res = eval_box.exec(
        "nvcc -o nvrtc_check nvrtc_check.cu -lnvrtc && ./nvrtc_check"
        " && python3 -c 'import ctypes; ctypes.CDLL(\"libnvrtc.so.13\")'"
        " && ldd /usr/local/cuda/lib64/libcublasLt.so.13",
        timeout=180,
    )
    assert res.ok, res
    loaded, compiled, *ldd = res.stdout.splitlines()
    assert compiled == "ptx", res.stdout
    assert not any("not found" in line for line in ldd), res.stdout
    if nvrtc_version not in (None, "toolkit"):
        assert f"{nvrtc_version}.".startswith(f"{loaded}."), (loaded, nvrtc_version)


@pytest.mark.parametrize("fixture", LIBRARY_FIXTURES)
def test_library_fixture_builds_and_links_in_the_image(
    eval_labels: dict[str, str], fixture: str, tmp_path
) -> None:
    """cuFFT, cuRAND, cuSPARSE, cuSOLVER, cuDNN with the cudnn-frontend headers, NVRTC with the
    driver API: each fixture's known-good solution builds with the problem's own command in
    the image (compiled; the static rules' verdict on it is not this test's business)."""
    from cudaenv.problems import load_suite
    from tests.grading.computeeval_fixtures import FIXTURES, write_pack

    if eval_labels.get(LIBS_LABEL) == "":
        pytest.skip(f"{EVAL_IMAGE} was built without the libraries (label {LIBS_LABEL}='')")
    suite = load_suite(str(write_pack(tmp_path / "fixture.tar.gz", [FIXTURES / fixture])))
    problem = suite[suite.ids[0]]
    verdict = cudaenv.grade(
        problem,
        problem.baseline_solution,
        sandbox="docker",
        sandbox_options={"image": EVAL_IMAGE},
        build_cache=False,
    )
    assert verdict.compiled is True and verdict.stages["build"].status == "ok", verdict


def test_a_library_missing_from_the_image_is_infrastructure(
    eval_labels: dict[str, str], tmp_path
) -> None:
    """The image's linker cannot find a library the problem links: infrastructure, confirmed
    by a probe build in the container (no host-side discovery sees into an image)."""
    from cudaenv.problems import load_suite
    from tests.conftest import write_problem
    from tests.grading.test_toolchain_gaps import HEADER, SOLUTION, TEST

    build = "nvcc -I include -o test.out solution.cu test/*.cu -lcudaenv_absent_library"
    files = {"context/include/twice.h": HEADER, "test/test_main.cu": TEST}
    problem = load_suite(write_problem(tmp_path, "gap", spec={"build_command": build}, files=files))
    verdict = cudaenv.grade(
        problem["gap"],
        {"solution.cu": SOLUTION},
        sandbox="docker",
        sandbox_options={"image": EVAL_IMAGE},
        build_cache=False,
    )
    assert verdict.failure == "infrastructure", verdict
    assert "-lcudaenv_absent_library" in verdict.reason


@pytest.mark.parametrize("name", ["claude-code", "opencode"])
def test_agent_cli_has_its_pinned_version(agent_box: DockerSandbox, name: str) -> None:
    recipe = load_recipe(name)
    res = agent_box.exec(f"id -u; {recipe.binary} --version", timeout=60)
    assert res.ok, res
    uid, version = res.stdout.split("\n", 1)
    assert uid == "1000"
    assert recipe.version in version, res


def test_agent_image_keeps_the_toolkit(agent_box: DockerSandbox) -> None:
    """Removing npm after installing the CLIs must not take the compiler with it."""
    agent_box.write_file("k.cu", "__global__ void k() {}\nint main() { k<<<1, 1>>>(); }\n")
    res = agent_box.exec("nvcc -o k k.cu && test -x k", timeout=120)
    assert res.ok, res


def test_compiler_cache_in_build_containers(
    eval_box: DockerSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """Builds in containers use the image's ccache like local builds use the host's: the
    hidden harness of a problem is compiled once, in a build-only container that mounts the
    cache; the container that runs the tests does not even see it."""
    from cudaenv.grading import ccache
    from cudaenv.grading.build import sandbox_factory

    if not eval_box.exec("command -v ccache", timeout=30).ok:
        pytest.skip(f"{EVAL_IMAGE} has no ccache (built before it was added): rebuild it")
    if ccache.ccache_binary() is None:
        pytest.skip("the host has no ccache to read the cache's counters with")
    monkeypatch.setenv("CUDAENV_CACHE_DIR", str(tmp_path / "cache"))
    problem = cudaenv.load_suite("builtin")["atomic-minmax"]
    ref = {f.path: f.content for f in problem.solution.files}
    options = {"image": EVAL_IMAGE}
    for i in range(3):  # plain first build; then the harness stored; then reused
        files = {
            path: text + f"\nstatic int cudaenv_variant_{i} = {i};\n" for path, text in ref.items()
        }
        v = cudaenv.grade(problem, files, sandbox="docker", sandbox_options=options)
        assert v.compiled is True, v.stages["build"].output_tail
        assert v.reason == "compiled; GPU stages skipped (no GPU)" or has_gpu()
    counters = ccache.stats(ccache.container_cache_root())
    assert counters["cache_miss"] == 1 and counters["direct_cache_hit"] == 1, counters
    with sandbox_factory("docker", options)() as box:
        res = box.exec(f"ls {ccache.container_cache_root()}", timeout=30)
        assert not res.ok and "No such file or directory" in res.stderr
