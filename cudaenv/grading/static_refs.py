"""Source references: the API a problem requires (``source_references``) and what it forbids
(``metadata.forbidden_references``), matched in C/C++/CUDA tokens, and the forbidden ones in
words for the agent's instructions."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from cudaenv.grading.static_text_cpp import INCLUDE, Tokens

# ``metadata.forbidden_references: [libraries]``: what "write the kernels yourself, no
# libraries" means. Header-only libraries (Thrust, CUB, CUTLASS) cannot be used without their
# headers, and a computed #include is refused above, so the include prefixes are the hard part.
LIBRARY_REFERENCES = (
    "thrust::", "cub::", "cutlass::", "cute::",
    "cublas*", "cublasLt*", "cusparse*", "cufft*", "cudnn*", "curand*", "cusolver*", "nppi*",
    "npps*",
    "<thrust/", "<cub/", "<cutlass/", "<cute/", "<cublas", "<cusparse", "<cufft", "<cudnn",
    "<curand", "<cusolver", "<npp",
)  # fmt: skip


LIBRARIES_TEXT = (
    "GPU libraries (Thrust, CUB, CUTLASS, cuBLAS, cuSPARSE, cuFFT, cuDNN, cuRAND, cuSOLVER, NPP)"
)


def describe_forbidden(entries: Iterable[str]) -> str | None:
    """Forbidden references in words, for the agent's instructions (an honest agent must know
    the rule the grader enforces, and that naming them in comments is fine)."""
    words = []
    for entry in entries:
        if entry == "libraries":
            words.append(LIBRARIES_TEXT)
        elif entry.startswith("<"):
            words.append(f"#include {entry}...>")
        elif entry.endswith("*"):
            words.append(f"{entry[:-1]}...")
        else:
            words.append(entry)
    if not words:
        return None
    return (
        f"Not allowed in the solution (checked in the code, not in comments): {', '.join(words)}."
    )


def expand(entries: Iterable[str]) -> list[str]:
    """The forbidden entries with ``libraries`` spelled out (:data:`LIBRARY_REFERENCES`)."""
    out: list[str] = []
    for entry in entries:
        out += LIBRARY_REFERENCES if entry == "libraries" else [entry]
    return out


def cpp_has_ref(tokens: Tokens, ref: str) -> bool:
    """Whether the code uses ``ref`` (``ns::name``: that token sequence, or ``name`` under a
    ``using namespace ns;``)."""
    parts = [p for p in ref.replace(" ", "").split("::") if p]
    if not parts:
        return False
    seq: list[str] = []
    for i, part in enumerate(parts):
        if i:
            seq.append("::")
        seq.append(part)
    code = tokens.code
    n = len(seq)
    for i in range(len(code) - n + 1):
        if code[i : i + n] == seq and (i == 0 or code[i - 1] != "::" or n > 1):
            return True
    if len(parts) > 1 and parts[-1] in code:
        # `using namespace thrust;` then `sort_by_key(...)`
        prefix = parts[:-1]
        joined = " ".join(code)
        if f"using namespace {' :: '.join(prefix)} ;" in joined:
            return True
    return False


def cpp_forbidden(path: str, tokens: Tokens, raw: str, entries: list[str]) -> list[str]:
    """Uses of what the problem forbids (exploit class: doing less work, by calling a library
    the prompt rules out). ``X::`` a namespace, ``X*`` an identifier prefix, ``<X`` an include
    prefix, anything else one API name, matched like ``source_references``."""
    if not entries:  # most problems: nothing to scan for
        return []
    code = tokens.code
    includes = [
        m.group(2).strip()[1:] for m in INCLUDE.finditer(raw) if m.group(2).strip()[:1] in '<"'
    ]
    qualified = {a for a, b in itertools.pairwise(code) if b == "::"}  # names used as X::
    joined = " ".join(code)
    out = []
    for entry in entries:
        if entry.endswith("::"):
            ns = entry[:-2]
            hit = ns in qualified or f"using namespace {ns} ;" in joined
        elif entry.endswith("*"):
            hit = any(t.startswith(entry[:-1]) and t.isidentifier() for t in code)
        elif entry.startswith("<"):
            hit = any(name.startswith(entry[1:]) for name in includes)
        else:
            hit = cpp_has_ref(tokens, entry)
        if hit:
            out.append(f"{path}: uses {entry.rstrip('*')}, which this problem forbids")
    return out
