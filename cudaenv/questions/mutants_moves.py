"""Models of the permute, matmul and indexing mutants (the data-movement and product
families); the registry and the other families' models are in :mod:`cudaenv.questions.mutants`."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from cudaenv.questions import semantics as sem
from cudaenv.questions.adapter import Rendered, Variant
from cudaenv.questions.cases import Case
from cudaenv.questions.mutant_base import initial, typed, with_params


# ---------------------------------------------------------------- permute
def _written(
    r: Rendered, case: Case, keep: Callable[[tuple[int, ...], tuple[int, ...]], bool]
) -> np.ndarray:
    """The reference with every element whose source index fails ``keep`` left unwritten."""
    x = case.arrays["x"]
    mask = np.zeros(x.shape, dtype=bool)
    for idx in np.ndindex(*x.shape):
        mask[idx] = keep(idx, x.shape)
    out = initial(case)
    perm = r.params["perm"]
    sel = mask.transpose(perm)
    out[sel] = x.transpose(perm)[sel]
    return out


def _perm_tail(r: Rendered, case: Case) -> np.ndarray:
    return _written(r, case, lambda i, s: i[-1] < s[-1] - s[-1] % 32)


def _perm_boundary(r: Rendered, case: Case) -> np.ndarray:
    perm = r.params["perm"]
    n = len(perm)
    if perm[-1] == n - 1:  # rows copied: the last slice of the output's first axis is skipped
        return _written(r, case, lambda i, s: i[perm[0]] != s[perm[0]] - 1)
    others = [q for q in range(n) if q not in (perm[-1], n - 1)]
    # tiles: the last combination of the other axes is skipped (all of it when there are none)
    return _written(r, case, lambda i, s: bool(others) and any(i[q] != s[q] - 1 for q in others))


def _perm_axis(r: Rendered, case: Case, variant: Variant) -> np.ndarray | None:
    m = re.search(r"\(([\d, ]+)\)", variant.description)
    if m is None:
        return None
    wrong = [int(v) for v in m.group(1).split(",")]
    x, out = case.arrays["x"], case.arrays[case.output]
    if len(wrong) != x.ndim or x.transpose(wrong).shape != out.shape:
        return None  # written out of the output's bounds: undefined
    return x.transpose(wrong).copy()


# ---------------------------------------------------------------- matmul
def _mm_tail(r: Rendered, case: Case) -> np.ndarray:
    out, want = initial(case), sem.expected(r, case)
    n = want.shape[1]
    out[:, : n - n % 32] = want[:, : n - n % 32]
    return out


def _mm_k_tail(r: Rendered, case: Case) -> np.ndarray:
    k = case.scalars["K"]
    keep = k - k % 16
    arrays = dict(case.arrays)
    for name, trans in (("A", r.params["trans_a"]), ("B", r.params["trans_b"])):
        a = arrays[name].copy()
        k_axis = (0 if trans else 1) if name == "A" else (1 if trans else 0)
        idx = [slice(None)] * 2
        idx[k_axis] = slice(keep, None)
        a[tuple(idx)] = 0
        arrays[name] = a
    return sem.expected(r, Case(arrays, case.scalars, case.output))


def _mm_axis(r: Rendered, case: Case) -> np.ndarray:
    m, k = case.scalars["M"], case.scalars["K"]
    flat = case.arrays["A"].reshape(-1)
    arrays = dict(case.arrays)  # the buffer read as if stored the other way round
    arrays["A"] = flat.reshape((m, k) if r.params["trans_a"] else (k, m))
    return sem.expected(
        with_params(r, case, trans_a=not r.params["trans_a"]),
        Case(arrays, case.scalars, case.output),
    )


def _mm_no_epilogue(r: Rendered, case: Case) -> np.ndarray:
    return sem.expected(with_params(r, case, epilogue="none"), case)


# ---------------------------------------------------------------- indexing
def _ix_tail(r: Rendered, case: Case) -> np.ndarray:
    n = case.scalars["n"]
    keep = n - n % 32
    op = r.params["op"]
    if op == "gather":
        out, want = initial(case), sem.expected(r, case)
        out[:keep] = want[:keep]
        return out
    arrays = {k: (v[:keep] if k in ("x", "idx", "w") else v) for k, v in case.arrays.items()}
    return sem.expected(r, Case(arrays, {**case.scalars, "n": keep}, case.output))


def _ix_operator(r: Rendered, case: Case) -> np.ndarray | None:
    op, arrays = r.params["op"], case.arrays
    if op == "gather":  # row i (wrapped), not row idx[i]
        table = arrays["table"]
        return np.stack([table[i % table.shape[0]] for i in range(case.scalars["n"])])
    if op == "scatter_add":  # overwrites: only determined when no two inputs share a row
        idx = arrays["idx"]
        if len(set(idx.tolist())) != len(idx):
            return None
        out = arrays["out"].astype(np.float64).copy()
        w = arrays.get("w")
        for i, k in enumerate(idx):
            out[k] = arrays["x"][i] * (float(w[i]) if w is not None else 1.0)
        return typed(r, case, out)
    shifted = dict(arrays)  # rounds 4v half up: the bin of v + 1/8
    shifted["x"] = (arrays["x"].astype(np.float64) + 0.125).astype(arrays["x"].dtype)
    return sem.expected(r, Case(shifted, case.scalars, case.output))


def _ix_boundary(r: Rendered, case: Case) -> np.ndarray:
    op, arrays = r.params["op"], case.arrays
    if op == "gather":  # the last element of every row is not written
        out, want = initial(case), sem.expected(r, case)
        out[:, :-1] = want[:, :-1]
        return out
    if op == "scatter_add":  # what goes to row 0 is dropped
        keep = arrays["idx"] != 0
        sub = {k: (v[keep] if k in ("x", "idx", "w") else v) for k, v in arrays.items()}
        return sem.expected(r, Case(sub, case.scalars, case.output))
    other = "clamp" if r.params["policy"] == "drop" else "drop"
    return sem.expected(with_params(r, case, policy=other), case)


def _ix_no_weights(r: Rendered, case: Case) -> np.ndarray:
    arrays = {k: (np.ones_like(v) if k == "w" else v) for k, v in case.arrays.items()}
    return sem.expected(r, Case(arrays, case.scalars, case.output))


MODELS = {
    ("permute", "tail"): _perm_tail,
    ("permute", "boundary"): _perm_boundary,
    ("py-permute", "tail"): _perm_tail,
    ("py-permute", "boundary"): _perm_boundary,
    ("matmul", "tail"): _mm_tail,
    ("matmul", "k-tail"): _mm_k_tail,
    ("matmul", "axis"): _mm_axis,
    ("matmul", "no-epilogue"): _mm_no_epilogue,
    ("matmul", "precision"): lambda r, c: sem.expected(r, c),
    ("indexing", "tail"): _ix_tail,
    ("indexing", "operator"): _ix_operator,
    ("indexing", "boundary"): _ix_boundary,
    ("indexing", "no-weights"): _ix_no_weights,
}
#: models that read the mutant's declared description (the wrong permutation it names)
DESCRIBED: dict[tuple[str, str], Callable[[Rendered, Case, Variant], np.ndarray | None]] = {
    ("permute", "axis"): _perm_axis,
    ("py-permute", "axis"): _perm_axis,
}

__all__ = ["DESCRIBED", "MODELS"]
