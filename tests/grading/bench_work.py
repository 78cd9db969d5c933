"""The work of every bundled benchmark, recomputed from its sizes (test_bench_work.py).

``FORMULAS[task_id](sizes)`` gives ``metadata.work`` from ``metadata.bench_sizes``, counted as
docs/AUTHORING.md ("Work and speed of light") says: ``bytes`` is the compulsory device-memory
traffic of the timed region with every call finding its data in DRAM, ``reuse_bytes`` the
part later calls re-read when one call's data fits in ``REUSE_LIMIT``, ``host_bytes`` the
host-link traffic in its busier direction, ``flops`` the floating-point operations of the
prompt's formula (an FMA is two; comparisons, min/max, conversions and integer work are not
counted). :func:`perf_constants` reads the sizes out of the benchmark's source.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

REUSE_LIMIT = 128 << 20  # at least the L2 of every device in the peak table
Sizes = Mapping[str, int]


def calls(count: int, per_call: int, shared: int = 0) -> dict[str, int]:
    """``count`` calls of ``per_call`` bytes each, ``shared`` of them the same data every call:
    re-read data counts once per call, and is ``reuse_bytes`` when a call fits the limit."""
    reuse = (count - 1) * shared if per_call <= REUSE_LIMIT else 0
    return {"bytes": count * per_call, "reuse_bytes": reuse}


def work(dtype: str, flops: int = 0, host_bytes: int = 0, **traffic: int) -> dict[str, Any]:
    out: dict[str, Any] = {"flops": flops, "bytes": traffic["bytes"], "dtype": dtype}
    if host_bytes:
        out["host_bytes"] = host_bytes
    if traffic.get("reuse_bytes"):
        out["reuse_bytes"] = traffic["reuse_bytes"]
    return out


def _mix(x: np.ndarray) -> np.ndarray:
    """The harnesses' 32-bit hash (``mix`` in cub-segmented-reduce's check/check.py)."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def segmented_values(segs: int, seed: int) -> int:
    """How many values cub-segmented-reduce's perf problem ``seed`` puts in its segments:
    its checker's ``hashed_lengths(segs, 64, 10000, 1 << 20, seed)`` regenerated."""
    max_small, huge_every, huge_min = 64, 10000, 1 << 20
    with np.errstate(over="ignore"):
        h = _mix(np.arange(segs, dtype=np.uint32) * np.uint32(2654435761) ^ np.uint32(seed))
        huge = huge_min + _mix(h) % np.uint32(huge_min)
        small = 1 + _mix(h ^ np.uint32(0x55)) % np.uint32(max_small)
    length = np.where((h >> np.uint32(3)) % np.uint32(huge_every) == 0, huge, small)
    return int(np.where(h % np.uint32(8) == 0, 0, length).astype(np.int64).sum())


def _segmented(s: Sizes) -> dict[str, Any]:
    values = sum(segmented_values(s["segs"], 61 + r) for r in range(s["timed"]))
    traffic = 4 * values + s["timed"] * (4 * (s["segs"] + 1) + 4 * s["segs"])
    return work("fp32", bytes=traffic)


def _gemm_batched(s: Sizes) -> dict[str, Any]:
    a, b, c = (
        4 * s["batch"] * x * y for x, y in ((s["m"], s["k"]), (s["k"], s["n"]), (s["m"], s["n"]))
    )
    flops = s["iters"] * 2 * s["m"] * s["n"] * s["k"] * s["batch"]
    return work("fp32", flops, **calls(s["iters"], a + b + c, shared=a + b))


def _matmul_py(s: Sizes) -> dict[str, Any]:
    a, b, c = 4 * s["M"] * s["K"], 4 * s["K"] * s["N"], 4 * s["M"] * s["N"]
    flops = s["iters"] * 2 * s["M"] * s["N"] * s["K"]
    return work("fp32", flops, **calls(s["iters"], a + b + c, shared=a + b))


def _taps(r: int) -> int:
    return 2 * r + 1


FORMULAS: dict[str, Callable[[Sizes], dict[str, Any]]] = {
    # cccl: every call has its own input buffers
    "cub-device-scan": lambda s: work("int64", **calls(s["timed"], 12 * s["n"])),
    "cub-radix-sort-pairs": lambda s: work("fp32", **calls(s["timed"], 16 * s["n"])),
    "cub-segmented-reduce": _segmented,
    "thrust-sort-by-key": lambda s: work("int32", **calls(s["timed"], 16 * s["n"])),
    "thrust-transform-reduce": lambda s: work(
        "fp64", s["timed"] * 3 * s["n"], 16 * s["timed"], **calls(s["timed"], 4 * s["n"])
    ),
    "thrust-unique-count": lambda s: work(
        "int32", 0, 4 * s["timed"], **calls(s["timed"], 4 * s["n"])
    ),
    # cublas: the same A (and B, x) every call, a fresh output each
    "cublas-batched-gemm": _gemm_batched,
    "cublas-gemv-rows": lambda s: work(
        "fp32",
        s["iters"] * 2 * s["rows"] * s["cols"],
        **calls(
            s["iters"],
            4 * (s["rows"] * s["cols"] + s["cols"] + s["rows"]),
            shared=4 * (s["rows"] * s["cols"] + s["cols"]),
        ),
    ),
    "cublas-sgemm-bias": lambda s: work(
        "fp32",
        s["iters"] * (2 * s["m"] * s["n"] * s["k"] + 2 * s["m"] * s["n"]),
        **calls(
            s["iters"],
            4 * (s["m"] * s["k"] + s["k"] * s["n"] + s["m"] + s["m"] * s["n"]),
            shared=4 * (s["m"] * s["k"] + s["k"] * s["n"] + s["m"]),
        ),
    ),
    # cuda-kernels
    "atomic-minmax": lambda s: work(
        "int32", **calls(s["timed"], 8 * s["n"] + 8 * s["g"], shared=8 * s["n"])
    ),
    "bitonic-sort": lambda s: work("int32", **calls(s["timed"], 8 * s["n"])),
    "box-blur-tiled": lambda s: work(
        "fp32",
        s["timed"] * 25 * s["w"] * s["h"],
        **calls(s["timed"], 8 * s["w"] * s["h"], shared=4 * s["w"] * s["h"]),
    ),
    # half the inputs are positive (uniform in [-100, 100]): the expected count is written
    "compact-positive": lambda s: work(
        "fp32", **calls(s["timed"], 4 * s["n"] + 4 * (s["n"] // 2) + 4, shared=4 * s["n"])
    ),
    "conv1d-constant": lambda s: work(
        "fp32",
        s["timed"] * (2 * _taps(s["r"]) - 1) * s["n"],
        **calls(s["timed"], 8 * s["n"] + 4 * _taps(s["r"]), shared=4 * s["n"]),
    ),
    # call r of these works on n - c*r elements (the harness's sub-ranges)
    "fused-axpby": lambda s: work(
        "fp32",
        sum(3 * (s["N"] - 5 * r) for r in range(s["R"])),
        bytes=sum(12 * (s["N"] - 5 * r) for r in range(s["R"])),
    ),
    "histogram-256": lambda s: work(
        "uint8", bytes=sum(s["N"] - 17 * r + 4 * 256 for r in range(s["R"]))
    ),
    "layernorm-rows": lambda s: work(
        "fp32",
        s["R"] * (8 * s["rows"] * s["cols"] + 2 * s["rows"]),
        **calls(s["R"], 8 * s["rows"] * s["cols"] + 8 * s["cols"]),
    ),
    "reduce-sum": lambda s: work(
        "fp32",
        sum(s["N"] - 8 * r - 1 for r in range(s["R"])),
        bytes=sum(4 * (s["N"] - 8 * r - 1) + 4 for r in range(s["R"])),
    ),
    "scan-inclusive": lambda s: work(
        "int32", bytes=sum(8 * (s["N"] - 7 * r) for r in range(s["R"]))
    ),
    "sgemm-tiled": lambda s: work(
        "fp32", s["R"] * 2 * s["S"] ** 3, **calls(s["R"], 12 * s["S"] ** 2, shared=8 * s["S"] ** 2)
    ),
    "softmax-rows": lambda s: work(
        "fp32",
        s["R"] * (4 * s["rows"] * s["cols"] + s["rows"]),
        **calls(s["R"], 8 * s["rows"] * s["cols"]),
    ),
    # rows hold rand_below(64) nonzeros: the expected nnz, 31.5 per row
    "spmv-csr": lambda s: work(
        "fp32",
        s["timed"] * 63 * s["n"],
        **calls(s["timed"], 4 * (s["n"] + 1) + 8 * (63 * s["n"] // 2) + 8 * s["n"]),
    ),
    "stencil-jacobi2d": lambda s: work(
        "fp32",
        s["steps"] * 4 * (s["nx"] - 2) * (s["ny"] - 2),
        **calls(s["steps"], 8 * s["nx"] * s["ny"]),
    ),
    "transpose": lambda s: work(
        "fp32", **calls(s["R"], 8 * s["A"] * s["B"], shared=4 * s["A"] * s["B"])
    ),
    "warp-argmax": lambda s: work(
        "fp32", **calls(s["timed"], 4 * s["n"] + 8 * s["segs"], shared=4 * s["n"])
    ),
    # cuda-python: an input array travels once (shared by every call), outputs are fresh
    "py-histogram": lambda s: work(
        "int32", **calls(s["iters"], 4 * s["n"] + 4 * s["nbins"], shared=4 * s["n"])
    ),
    "py-matmul-shared": _matmul_py,
    "py-prefix-sum": lambda s: work("int32", **calls(s["iters"], 8 * s["n"], shared=4 * s["n"])),
    "py-reduce-max": lambda s: work("fp32", 0, 4 * s["iters"], **calls(s["iters"], 4 * s["n"])),
    "py-relu-clip": lambda s: work("fp32", **calls(s["iters"], 8 * s["n"], shared=4 * s["n"])),
    "py-rgb-to-gray": lambda s: work(
        "uint8", **calls(s["iters"], 4 * s["h"] * s["w"], shared=3 * s["h"] * s["w"])
    ),
    "py-stencil-1d": lambda s: work(
        "fp32",
        s["iters"] * (2 * _taps(s["radius"]) - 1) * s["n"],
        **calls(
            s["iters"],
            8 * s["n"] + 4 * _taps(s["radius"]),
            shared=4 * s["n"] + 4 * _taps(s["radius"]),
        ),
    ),
    "py-vector-add": lambda s: work(
        "fp32", s["iters"] * s["n"], **calls(s["iters"], 12 * s["n"], shared=8 * s["n"])
    ),
    # cuda-runtime
    "graph-capture": lambda s: work(
        "fp32", s["timed"] * 7 * s["n"] * s["iters"], **calls(s["timed"], 8 * s["n"])
    ),
    # pinned host buffers: a kernel may read and write them over the link, so no DRAM
    # traffic is compulsory; 16 x (sinf, multiply, FMA) per element
    "streams-pipeline": lambda s: work(
        "fp32", s["timed"] * 64 * s["n"], 4 * s["n"] * s["timed"], bytes=0
    ),
    # the parents start in pageable host memory; the depths may stay in managed memory
    "unified-memory": lambda s: work("int32", 0, 4 * s["n"] * s["timed"], bytes=0),
}


# ---------------------------------------------------------------------------------------
# Reading the sizes out of a benchmark's source


def _evaluate(node: ast.AST, names: Mapping[str, int]) -> int:
    """An integer constant expression: literals, + - * // % << >>, known names, tuples."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, names)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, names)
    ops = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b,
        ast.LShift: lambda a, b: a << b,
        ast.RShift: lambda a, b: a >> b,
    }
    if isinstance(node, ast.BinOp) and type(node.op) in ops:
        return ops[type(node.op)](_evaluate(node.left, names), _evaluate(node.right, names))
    raise ValueError(f"not a constant size: {ast.unparse(node)}")


def _c_expression(text: str) -> ast.Expression:
    text = re.sub(r"static_cast<[^>]*>", "", text)
    text = re.sub(
        r"\((?:const\s+)?(?:size_t|int|unsigned|uint32_t|uint64_t|long(?: long)?)\)", "", text
    )
    text = re.sub(r"\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", text)
    return ast.parse(text.replace("/", "//").strip(), mode="eval")


def _cpp_constants(source: str) -> dict[str, int]:
    """``name = expr`` declarations of ``run_perf``'s body up to its timed region."""
    start = re.search(r"^static\s+\w+\s+run_perf\s*\([^)]*\)\s*\{", source, re.MULTILINE)
    if start is None:
        raise ValueError("no run_perf function")
    body = source[start.end() : source.find("\n}\n", start.end())]
    body = body.split("bench_region")[0]
    found: dict[str, int] = {}
    for decl in re.finditer(r"\bconst\s+(?:int|size_t|long long|unsigned)\s+([^;]+);", body):
        for part in re.split(r",(?![^(]*\))", decl.group(1)):
            name, eq, expr = part.partition("=")
            if eq and re.fullmatch(r"\s*\w+\s*", name):
                try:
                    found[name.strip()] = _evaluate(_c_expression(expr), found)
                except (ValueError, SyntaxError):
                    continue  # a derived value the formulas do not use (a float, a pointer)
    return found


def _python_constants(source: str) -> dict[str, int]:
    """Top-level assignments of ``run_perf`` (a split harness's checker: ``perf_cases``), the
    GPU branch of ``x if SIM else y``."""
    tree = ast.parse(source)
    names = ("run_perf", "perf_cases")
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names), None)
    if fn is None:
        raise ValueError("no run_perf or perf_cases function")
    found: dict[str, int] = {}
    for stmt in fn.body:
        if not isinstance(stmt, ast.Assign):
            continue
        value = stmt.value
        if (
            isinstance(value, ast.IfExp)
            and isinstance(value.test, ast.Name)
            and value.test.id == "SIM"
        ):
            value = value.orelse
        for target in stmt.targets:
            pairs = (
                zip(target.elts, value.elts, strict=True)
                if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                else [(target, value)]
            )
            for t, v in pairs:
                if isinstance(t, ast.Name):
                    try:
                        found[t.id] = _evaluate(v, found)
                    except ValueError:
                        continue
    return found


def perf_constants(path: str, source: str) -> dict[str, int]:
    """The integer constants a benchmark source's ``run_perf`` declares."""
    return _python_constants(source) if path.endswith(".py") else _cpp_constants(source)


def roofline_ms(work, device) -> float:
    """sol_ms restated for the tests: the slowest of compute, DRAM and host link."""
    compute = work.flops / (device.tflops(work.dtype) * 1e12) if work.flops else 0.0
    return 1e3 * max(compute, work.bytes / (device.mem_gbs * 1e9),
                     work.host_bytes / (device.host_gbs * 1e9))  # fmt: skip


def floor_expected_ms(work, device) -> float:
    """floor_ms restated: fastest arithmetic, the bytes a cache could hold left out."""
    cold = max(0, work.bytes - work.reuse_bytes - device.l2_bytes)
    return 1e3 * max(work.flops / (device.fastest_tflops * 1e12), cold / (device.mem_gbs * 1e9),
                     work.host_bytes / (device.host_gbs * 1e9))  # fmt: skip
