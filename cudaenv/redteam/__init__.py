"""Red-team suite: scripted dishonest agents that must score nothing.

Each :class:`Exploit` plays a real episode through ``CudaEnv`` and the grader
(:func:`run_exploit`); ``cudaenv redteam`` runs them all. The catalogs (``catalog_*.py``) say
what each class covers; the defenses name, in comments, the class they stop.
"""

from __future__ import annotations

from cudaenv.redteam.catalog_build import BUILD_EXPLOITS
from cudaenv.redteam.catalog_checked import CHECKED_EXPLOITS
from cudaenv.redteam.catalog_device import DEVICE_EXPLOITS
from cudaenv.redteam.catalog_docker import DOCKER_EXPLOITS
from cudaenv.redteam.catalog_exhaust import EXHAUST_EXPLOITS, LIBRARY_EXPLOITS, SPEED_EXPLOITS
from cudaenv.redteam.catalog_linked import LINKED_EXPLOITS
from cudaenv.redteam.catalog_python import PYTHON_EXPLOITS
from cudaenv.redteam.catalog_read import ESCAPE_EXPLOITS, READ_EXPLOITS
from cudaenv.redteam.catalog_split import SPLIT_EXPLOITS
from cudaenv.redteam.catalog_stages import STAGE_EXPLOITS
from cudaenv.redteam.catalog_tamper import FORGE_EXPLOITS, GRADED_EXPLOITS, SKIP_EXPLOITS
from cudaenv.redteam.catalog_toolchain import TOOLCHAIN_EXPLOITS
from cudaenv.redteam.model import RESET, Exploit, ExploitContext, RedteamResult
from cudaenv.redteam.runner import run_exploit

__all__ = [
    "EXPLOITS",
    "RESET",
    "Exploit",
    "ExploitContext",
    "RedteamResult",
    "get_exploit",
    "run_exploit",
]

EXPLOITS: list[Exploit] = [
    *READ_EXPLOITS,
    *GRADED_EXPLOITS,
    *FORGE_EXPLOITS,
    *SKIP_EXPLOITS,
    *ESCAPE_EXPLOITS,
    *EXHAUST_EXPLOITS,
    *SPEED_EXPLOITS,
    *LIBRARY_EXPLOITS,
    *TOOLCHAIN_EXPLOITS,
    *PYTHON_EXPLOITS,
    *STAGE_EXPLOITS,
    *DEVICE_EXPLOITS,
    *DOCKER_EXPLOITS,
    *SPLIT_EXPLOITS,
    *LINKED_EXPLOITS,
    *BUILD_EXPLOITS,
    *CHECKED_EXPLOITS,
]


def get_exploit(name: str) -> Exploit:
    """The exploit called ``name``."""
    for exploit in EXPLOITS:
        if exploit.name == name:
            return exploit
    raise KeyError(f"no exploit named {name!r}")
