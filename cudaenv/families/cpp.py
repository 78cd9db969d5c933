"""Shared pieces of the generated cuda_cpp problems: element types, the context header and the
prompt's closing paragraphs (the runner is :mod:`cudaenv.families.runners`' and the expected
values are the checker's, :mod:`cudaenv.families.refs`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CType:
    """One element type as the kernels and the prompts spell it."""

    key: str  # f32 | f64 | f16 | i32
    dev: str  # the device type in the interface
    acc: str  # the accumulation type the problem asks for
    label: str  # for prompts
    size: int  # bytes
    eps: float  # unit roundoff of ``acc``
    include: str  # extra header the interface needs

    def to_acc(self, expr: str) -> str:
        """Device code: ``expr`` (a ``dev`` value) as ``acc``."""
        return f"__half2float({expr})" if self.key == "f16" else expr

    def from_acc(self, expr: str) -> str:
        """Device code: an ``acc`` value rounded to ``dev``."""
        return f"__float2half_rn({expr})" if self.key == "f16" else expr


CTYPES: dict[str, CType] = {
    "f32": CType("f32", "float", "float", "float", 4, 2.0**-24, ""),
    "f64": CType("f64", "double", "double", "double", 8, 2.0**-53, ""),
    "f16": CType("f16", "__half", "float", "half (`__half`)", 2, 2.0**-24, "cuda_fp16.h"),
}

#: 32-bit integers (exact work: permutations, scans, histograms)
INT32 = CType("i32", "int", "int", "int", 4, 0.0, "")


def header_file(declaration: str, comment: str, *, includes: list[str]) -> str:
    """The context header: the declaration and its contract as a comment."""
    inc = "".join(f"#include <{i}>\n" for i in includes if i)
    lines = "".join(f"// {ln}".rstrip() + "\n" for ln in comment.strip("\n").splitlines())
    return f"#pragma once\n{inc}\n{lines}{declaration};\n"


def closing(header: str) -> str:
    """The prompt's last paragraph: where the code goes and what it may not use."""
    return (
        f"Put your implementation in `solution.cu` (it must include `{header.split('/')[-1]}`). "
        "Write the "
        "kernels yourself: no cuBLAS, cuDNN, Thrust, CUB, CUTLASS or other libraries. Issue "
        "the work on the default stream; you may return before it finishes (the caller "
        "synchronizes and checks for errors). Scratch memory is allowed if it stays bounded "
        "(allocate it once and reuse it)."
    )


FORBIDDEN = ["libraries"]  # the prompt's "write the kernels yourself"


__all__ = ["CTYPES", "FORBIDDEN", "INT32", "CType", "closing", "header_file"]
