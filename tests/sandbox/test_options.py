"""Typed sandbox options: validation by backend name, errors that name the field, capabilities
known before any sandbox exists, and the constructors taking the same fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudaenv.errors import SpecError
from cudaenv.sandbox import (
    BACKENDS,
    DockerOptions,
    LocalOptions,
    SandboxLimits,
    gpu_access,
    make_sandbox,
    sandbox_options,
)
from cudaenv.sandbox.options import MODELS


def test_each_backend_has_an_options_model_with_its_name() -> None:
    assert set(MODELS) == set(BACKENDS)
    for name, model in MODELS.items():
        assert model().backend == name
        assert isinstance(sandbox_options(name), model)


@pytest.mark.parametrize(
    ("backend", "options", "field", "text"),
    [
        ("local", {"image": "x"}, "image", "'image' is not an option of the local sandbox"),
        ("local", {"gpus": 1}, "gpus", "'gpus' is not an option of the local sandbox"),
        ("docker", {"isolation": "rlimits"}, "isolation", "not an option of the docker sandbox"),
        ("local", {"isolation": "auto"}, "isolation", "unknown isolation 'auto'"),
        ("local", {"limits": {"memory_mb": -1}}, "limits.memory_mb", "greater than 0"),
        ("docker", {"limits": {"bogus": 1}}, "limits.bogus", "'limits.bogus' is not an option"),
        ("docker", {"gpus": "two"}, "gpus", "docker sandbox option gpus"),
        ("docker", {"workspace_mb": 0}, "workspace_mb", "greater than 0"),
        ("local", {"backend": "docker"}, "backend", "given for 'local'"),
        ("nope", {}, "sandbox", "unknown sandbox backend 'nope'"),
        ("local", "image=x", "options", "must be a mapping"),
    ],
)
def test_a_bad_option_is_a_spec_error_naming_the_field(
    backend: str, options: object, field: str, text: str
) -> None:
    with pytest.raises(SpecError, match=text) as info:
        sandbox_options(backend, options)  # type: ignore[arg-type]
    assert info.value.field == field and isinstance(info.value, ValueError)


def test_valid_options_become_the_backends_model() -> None:
    local = sandbox_options("local", {"isolation": "rlimits", "extra_ro_binds": [Path("/usr")]})
    assert isinstance(local, LocalOptions)
    assert (local.isolation, local.extra_ro_binds, local.network) == ("rlimits", ["/usr"], False)
    docker = sandbox_options("docker", {"image": "img", "gpus": [0, "1"], "network": True})
    assert isinstance(docker, DockerOptions) and docker.network
    assert (docker.image, docker.gpus) == ("img", [0, "1"])
    assert sandbox_options("docker", docker) is docker  # already validated
    with pytest.raises(SpecError, match="'image' is not an option of the local sandbox"):
        sandbox_options("local", docker)  # another backend's model: its set fields re-checked


def test_none_means_the_default_for_local_options() -> None:
    opts = LocalOptions(limits=None, env=None, extra_ro_binds=None)  # type: ignore[arg-type]
    assert opts.limits == SandboxLimits(memory_mb=opts.limits.memory_mb)
    assert (opts.env, opts.extra_ro_binds) == ({}, [])


@pytest.mark.parametrize(
    ("backend", "options", "expected"),
    [
        ("local", {}, True),
        ("local", {"isolation": "rlimits"}, True),
        ("docker", {}, False),
        ("docker", {"gpus": 0}, False),
        ("docker", {"gpus": []}, False),
        ("docker", {"gpus": -1}, True),
        ("docker", {"gpus": ["0"]}, True),
    ],
)
def test_gpu_access_is_known_from_the_options(
    backend: str, options: dict[str, object], expected: bool
) -> None:
    assert sandbox_options(backend, options).gpu_access is expected
    assert gpu_access(backend, **options) is expected


def test_as_kwargs_are_the_constructors_arguments() -> None:
    limits = SandboxLimits(output_cap_bytes=123)
    opts = sandbox_options("local", {"isolation": "rlimits", "limits": limits, "env": {"A": "b"}})
    kwargs = opts.as_kwargs()
    assert "backend" not in kwargs and kwargs["limits"] is limits
    with make_sandbox(opts) as box:
        assert (box.isolation, box.output_cap_bytes) == ("rlimits", 123)
        assert box.exec("echo $A", timeout=30).stdout == "b\n"
    with make_sandbox(opts, env={"A": "c"}) as box:  # keywords override the model's fields
        assert box.exec("echo $A", timeout=30).stdout == "c\n"
    with make_sandbox(**opts.model_dump()) as box:  # a dumped model (limits as a dict) too
        assert box.output_cap_bytes == 123


def test_the_local_constructor_checks_its_arguments_as_its_model_does() -> None:
    from cudaenv.sandbox.local import LocalSandbox

    with pytest.raises(SpecError) as info:
        LocalSandbox(limits={"memory_mb": 0})  # type: ignore[arg-type]
    assert info.value.field == "limits.memory_mb"
    with pytest.raises(TypeError):
        LocalSandbox(image="x")  # type: ignore[call-arg]


def test_docker_options_and_pool_still_import_from_the_backend_module() -> None:
    from cudaenv.sandbox.docker import EVAL_IMAGE, DockerSandboxPool
    from cudaenv.sandbox.docker import DockerOptions as FromBackend
    from cudaenv.sandbox.docker_pool import DockerSandboxPool as Pool

    assert FromBackend is DockerOptions and DockerOptions().image == EVAL_IMAGE
    assert DockerSandboxPool is Pool


def test_ro_mounts_accept_a_mapping_and_want_absolute_paths() -> None:
    opts = sandbox_options("local", {"ro_mounts": {"/etc/hostname": "/run/x/hostname"}})
    assert opts.ro_mounts == [("/etc/hostname", "/run/x/hostname")]
    assert sandbox_options("docker", {"ro_mounts": None}).ro_mounts == []
    with pytest.raises(SpecError, match="ro_mounts") as err:
        sandbox_options("local", {"ro_mounts": [("etc/hostname", "/run/x")]})
    assert err.value.field == "ro_mounts"


def test_ro_mounts_are_read_only_at_their_inside_path_without_network(tmp_path: Path) -> None:
    secret = tmp_path / "note.txt"
    secret.write_text("through the mount\n")
    box = make_sandbox("local", ro_mounts={str(secret): "/run/cudaenv-test/note.txt"})
    try:
        if box.isolation != "bubblewrap":
            pytest.skip("bubblewrap is not available here")
        assert not box.network
        res = box.exec("cat /run/cudaenv-test/note.txt", timeout=30)
        assert res.ok and res.stdout == "through the mount\n"
        res = box.exec("echo x > /run/cudaenv-test/note.txt", timeout=30)
        assert not res.ok
        res = box.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1", timeout=30)
        assert res.stdout.split() == ["lo"]  # the network is still unshared
        sibling = box.compile_sibling(rw_binds=[], ro_binds=[])
        assert sibling is not None
        try:
            assert not sibling.exec("test -e /run/cudaenv-test/note.txt", timeout=30).ok
        finally:
            sibling.close()
    finally:
        box.close()
    assert secret.read_text() == "through the mount\n"


@pytest.mark.docker
def test_docker_ro_mounts_are_read_only_and_the_network_stays_off(
    tmp_path: Path, eval_cpu_image: str
) -> None:
    note = tmp_path / "note.txt"
    note.write_text("through the mount\n")
    note.chmod(0o644)
    box = make_sandbox(
        "docker", image=eval_cpu_image, ro_mounts={str(note): "/run/cudaenv-test/note.txt"}
    )
    try:
        assert not box.network
        res = box.exec("cat /run/cudaenv-test/note.txt", timeout=60)
        assert res.ok and res.stdout == "through the mount\n", res.stderr
        assert not box.exec("echo x > /run/cudaenv-test/note.txt", timeout=60).ok
        res = box.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1", timeout=60)
        assert res.stdout.split() == ["lo"]
    finally:
        box.close()
    assert note.read_text() == "through the mount\n"
