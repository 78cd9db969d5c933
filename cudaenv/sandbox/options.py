"""Typed options of each sandbox backend and their union, :data:`SandboxOptions`.

Why apart from the backends: a config, a CLI or a caller validates options (and asks what a
sandbox made with them could do: ``gpu_access``, ``network``) before any sandbox exists, and
without importing a backend. Each backend's constructor takes exactly its model's fields (less
``backend``); :func:`cudaenv.sandbox.sandbox_options` picks the model by backend name.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cudaenv.errors import SpecError
from cudaenv.sandbox.base import SandboxLimits

__all__ = [
    "EVAL_IMAGE",
    "MODELS",
    "DockerOptions",
    "LocalOptions",
    "SandboxOptions",
    "isolation_name",
    "spec_error",
    "validated",
]

EVAL_IMAGE = "cudaenv-eval:latest"
ISOLATIONS = ("bubblewrap", "rlimits")


def _paths(value: Any) -> Any:
    """Host paths as strings (``Path`` objects are accepted too); None is no paths."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [os.fspath(p) if isinstance(p, os.PathLike) else p for p in value]
    return value


def isolation_name(value: Any) -> str:
    """``value`` if it names a local isolation, else the one SpecError saying the choices."""
    if value not in ISOLATIONS:
        raise SpecError(
            f"unknown isolation {value!r}; choose 'bubblewrap' (the default) or 'rlimits'",
            field="isolation",
        )
    return str(value)


class _Options(BaseModel):
    """What every backend's options share: the kwargs view and the capabilities."""

    model_config = ConfigDict(extra="forbid")

    network: bool = Field(default=False, description="False: no network at all")
    extra_ro_binds: list[str] = Field(
        default_factory=list, description="host directories mounted read-only, same path inside"
    )
    extra_rw_binds: list[str] = Field(
        default_factory=list,
        description="host directories mounted writable, same path inside (the grader's "
        "compiler cache, only in a sandbox that runs nothing but the compiler)",
    )

    ro_mounts: list[tuple[str, str]] = Field(
        default_factory=list,
        description="host path -> absolute path inside (under /run or /tmp), read-only: a "
        "socket or file the sandbox needs without the network (the model gateway's); a "
        "{host: inside} mapping is accepted too",
    )

    @field_validator("extra_ro_binds", "extra_rw_binds", mode="before")
    @classmethod
    def _host_paths(cls, value: Any) -> Any:
        return _paths(value)

    @field_validator("ro_mounts", mode="before")
    @classmethod
    def _mount_pairs(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, dict):
            value = list(value.items())
        if isinstance(value, list | tuple):
            return [tuple(os.fspath(p) for p in pair) for pair in value]
        return value

    @field_validator("ro_mounts")
    @classmethod
    def _absolute_inside(cls, value: list[tuple[str, str]]) -> list[tuple[str, str]]:
        for host, inside in value:
            if not (os.path.isabs(host) and os.path.isabs(inside)):
                raise ValueError(f"ro_mounts paths must be absolute, got {host!r} -> {inside!r}")
        return value

    def as_kwargs(self) -> dict[str, Any]:
        """The backend constructor's keyword arguments (``make_sandbox(backend, **these)``);
        nested models stay models."""
        return {name: getattr(self, name) for name in type(self).model_fields if name != "backend"}

    @property
    def gpu_access(self) -> bool:
        """Whether a sandbox made with these options sees the host's GPUs."""
        return True


class LocalOptions(_Options):
    """How a LocalSandbox isolates its commands (see :class:`cudaenv.sandbox.local.LocalSandbox`)."""

    backend: Literal["local"] = "local"
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    isolation: Literal["bubblewrap", "rlimits"] = Field(
        default="bubblewrap",
        description="bubblewrap namespaces, or rlimits only (NO filesystem or network isolation)",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="base environment of every command, over a default"
    )

    @field_validator("isolation", mode="before")
    @classmethod
    def _known_isolation(cls, value: Any) -> Any:
        return isolation_name(value)

    @field_validator("limits", "env", mode="before")
    @classmethod
    def _none_is_default(cls, value: Any, info: Any) -> Any:
        if value is None:
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)
        return value


class DockerOptions(_Options):
    """How a DockerSandbox container is started (units in the names)."""

    backend: Literal["docker"] = "docker"
    image: str = EVAL_IMAGE
    gpus: int | list[int | str] | None = Field(
        default=None, description="None: no GPU; int: that many (-1 all); list: device ids"
    )
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    cpus: float | None = Field(default=None, gt=0, description="CPU quota (nano_cpus)")
    workspace_mb: int = Field(default=4096, gt=0, description="tmpfs size of /workspace")
    tmp_mb: int = Field(default=1024, gt=0, description="tmpfs size of /tmp")
    environment: dict[str, str] = Field(default_factory=dict)
    base_url: str | None = Field(default=None, description="engine URL; None: DOCKER_HOST")
    start_timeout_s: float = Field(default=60.0, gt=0)
    pool: str = Field(default="", description="value of the cudaenv.pool label")

    @staticmethod
    def requests_gpus(gpus: int | list[int | str] | None) -> bool:
        """Whether ``gpus`` asks for any device (a container sees no GPU otherwise)."""
        return gpus not in (None, 0, [])

    @property
    def gpu_access(self) -> bool:
        """Only with device requests (``gpus``): a container sees no GPU otherwise."""
        return self.requests_gpus(self.gpus)


#: the options of any backend, told apart by ``backend``
SandboxOptions = Annotated[LocalOptions | DockerOptions, Field(discriminator="backend")]


#: backend name -> its options model
MODELS: dict[str, type[_Options]] = {
    m.model_fields["backend"].default: m for m in get_args(get_args(SandboxOptions)[0])
}


def _field(model: type[BaseModel] | None, loc: list[str]) -> list[str]:
    """The field names along ``loc`` (the union members' names pydantic adds are dropped)."""
    names: list[str] = []
    for part in loc:
        fields = model.model_fields if model is not None else {}
        if part not in fields:
            break
        names.append(part)
        kind = fields[part].annotation
        model = kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None
    return names


def spec_error(exc: ValidationError, backend: str) -> SpecError:
    """One line naming the first bad field (an option the backend does not have, or a bad
    value); a SpecError raised by a validator is passed on as it is."""
    err = exc.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, SpecError):
        return cause
    loc = [str(p) for p in err.get("loc", ())]
    if loc and loc[0] == backend:  # the union's tag
        loc = loc[1:]
    names = _field(MODELS.get(backend), loc)
    if err.get("type") == "extra_forbidden" and len(loc) > len(names):
        field = ".".join([*names, loc[len(names)]])
        return SpecError(f"{field!r} is not an option of the {backend} sandbox", field=field)
    field = ".".join(names or loc[:1]) or "backend"
    more = f" (+{exc.error_count() - 1} more errors)" if exc.error_count() > 1 else ""
    return SpecError(f"{backend} sandbox option {field}: {err.get('msg')}{more}", field=field)


def validated(model: type[_Options], options: dict[str, Any]) -> Any:
    """``model(**options)``, or a :class:`SpecError` naming the bad field."""
    try:
        return model(**options)
    except ValidationError as exc:
        backend = model.model_fields["backend"].default
        raise spec_error(exc, backend) from exc
