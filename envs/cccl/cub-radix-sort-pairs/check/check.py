"""cub-radix-sort-pairs' checker: draws every run's cases and decides on the outputs the runner
wrote (trusted: it never sees solution code). The (score, id) pairs sorted by score, descending
and stable, compared bit for bit; the inputs unchanged; nothing written past the n outputs."""

import numpy as np
from cudaenv_check import Case, exact, guard, main

GUARD = 16  # poisoned elements after each output: the solution must not write them
SENTINEL = 0x7F7F7F7F  # the element past each input (a large float, a large int): never sorted

# name, n, levels: scores are q / 64 for q uniform in [-levels, levels] (ties, negatives, +0.0)
TESTS = [
    ("empty", 0, 10),
    ("single", 1, 10),
    ("two", 2, 10),
    ("all-equal-zero", 1000, 0),  # every score +0.0: the input order stays
    ("few-distinct", 4097, 3),
    ("hundred", 100003, 6400),  # scores in [-100, 100]
    ("million", 1000000, 1 << 20),
    ("three-million", 3000017, 50),
]


def draw(rng, n, levels):
    """n pairs and the sentinel after them: (scores, ids), each n + 1 long."""
    q = rng.integers(-levels, levels, n, dtype=np.int32, endpoint=True)
    scores = np.append(q.astype(np.float32) / np.float32(64), np.uint32(SENTINEL).view(np.float32))
    ids = np.append(rng.integers(-(2**31), 2**31, n, dtype=np.int32), np.int32(SENTINEL))
    return scores.astype(np.float32), ids


def perf_cases(rng):
    n = 1 << 22
    timed = 5  # each call its own pairs and outputs; call r has levels 6400 (r + 1)
    warmup = 3
    pairs = [draw(rng, n, 6400 * (r + 1)) for r in range(timed)]
    inputs = {"scores": np.stack([s for s, _ in pairs]), "ids": np.stack([i for _, i in pairs])}
    return [Case("perf", {**inputs, "warmup": np.int32(warmup), "guard": np.int32(GUARD)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    out = []
    for name, n, levels in TESTS:
        scores, ids = draw(rng, n, levels)
        inputs = {"scores": scores, "ids": ids, "n": np.int32(n), "guard": np.int32(GUARD)}
        out.append(Case(name, inputs))
    return out


def bits(a):
    return a.view(np.uint32)


def expect(out, suffix, scores, ids, n, g):
    """One call's outputs against a stable descending sort of its first n pairs."""
    order = np.argsort(-scores[:n], kind="stable")  # no -0.0 or NaN among the scores
    names = {k: f"{k}{suffix}" for k in ("scores_out", "ids_out", "scores_in", "ids_in")}
    s_out = out.array(names["scores_out"], np.float32, (n + g,))
    i_out = out.array(names["ids_out"], np.int32, (n + g,))
    s_in = out.array(names["scores_in"], np.float32, scores.shape)
    i_in = out.array(names["ids_in"], np.int32, ids.shape)
    found = exact(bits(s_out[:n]), bits(scores[order]), f"{names['scores_out']} (bits)")
    found += exact(i_out[:n], ids[order], names["ids_out"])
    found += guard(s_out[n:], f"{names['scores_out']} past the end")
    found += guard(i_out[n:], f"{names['ids_out']} past the end")
    found += exact(bits(s_in), bits(scores), f"{names['scores_in']} (modified by the call)")
    found += exact(i_in, ids, f"{names['ids_in']} (modified by the call)")
    return found


def check(case, out):
    g = int(case["guard"])
    if case.name == "perf":
        timed, padded = case["scores"].shape
        found = []
        for r in range(timed):
            found += expect(out, str(r), case["scores"][r], case["ids"][r], padded - 1, g)
        return found
    return expect(out, "", case["scores"], case["ids"], int(case["n"]), g)


if __name__ == "__main__":
    main(cases, check)
