"""The families, by name: one line each (``name: "module:Class"``), imported when first used,
so adding a family touches this table and its own module only."""

from __future__ import annotations

import functools
import importlib

from cudaenv.errors import SpecError
from cudaenv.families.base import Family

FAMILIES: dict[str, str] = {
    "reduce-axis": "cudaenv.families.reduce_axis:ReduceAxis",
    "py-reduce-axis": "cudaenv.families.py_reduce_axis:PyReduceAxis",
    "elementwise": "cudaenv.families.elementwise:Elementwise",
    "py-elementwise": "cudaenv.families.py_elementwise:PyElementwise",
    "rownorm": "cudaenv.families.rownorm:RowNorm",
    "py-rownorm": "cudaenv.families.py_rownorm:PyRowNorm",
    "permute": "cudaenv.families.permute:Permute",
    "py-permute": "cudaenv.families.py_permute:PyPermute",
    "stencil": "cudaenv.families.stencil:Stencil",
    "py-stencil": "cudaenv.families.py_stencil:PyStencil",
    "scan": "cudaenv.families.scan:Scan",
    "py-scan": "cudaenv.families.py_scan:PyScan",
    "matmul": "cudaenv.families.matmul:Matmul",
    "indexing": "cudaenv.families.index:Indexing",
}


@functools.cache
def get_family(name: str) -> Family:
    """The family registered as ``name``; a SpecError lists the known ones."""
    target = FAMILIES.get(name)
    if target is None:
        raise SpecError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}", field="families")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()


def family_names() -> list[str]:
    return list(FAMILIES)


__all__ = ["FAMILIES", "family_names", "get_family"]
