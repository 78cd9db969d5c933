"""Fixtures of the interop tests: a Python >= 3.12 with harbor installed."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock

HARBOR_VERSION = "0.25.0"


def _python312() -> str | None:
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python")))
    found += [p for p in (shutil.which("python3.12"), shutil.which("python3.13")) if p]
    return found[0] if found else None


@pytest.fixture(scope="session")
def harbor_python() -> str:
    """A Python >= 3.12 with harbor installed, cached across sessions in a stable directory."""
    venv = Path(
        os.environ.get("CUDAENV_HARBOR_VENV")
        or Path(tempfile.gettempdir()) / f"cudaenv-harbor-venv-{HARBOR_VERSION}"
    )
    py = venv / "bin" / "python"
    probe = [
        str(py),
        "-c",
        f"import harbor.models.task.task, importlib.metadata as m; assert m.version('harbor') == '{HARBOR_VERSION}'",
    ]
    venv.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(venv) + ".lock"):  # pytest-xdist workers share the venv
        if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
            return str(py)
        base = _python312()
        if base is None:
            pytest.skip(
                "harbor needs Python >= 3.12 and none was found (~/.pyenv/versions/3.12*, python3.12)"
            )
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"could not create a 3.12 virtualenv: {made.stderr[-500:]}")
        try:
            inst = subprocess.run(
                [
                    str(py),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    f"harbor=={HARBOR_VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(venv, ignore_errors=True)
            pytest.skip("pip install harbor timed out (offline?)")
        if inst.returncode != 0 or subprocess.run(probe, capture_output=True).returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            errors = "\n".join(ln for ln in inst.stderr.splitlines() if "is ignored" not in ln)
            pytest.skip(f"pip install harbor=={HARBOR_VERSION} failed (offline?): {errors[-500:]}")
    return str(py)
