"""unified-memory's checker: draws every run's forests and decides on what the runner saw
(trusted: it never sees solution code). forest_depths must return, for n > 0, a managed
buffer (cudaMallocManaged) whose element i is node i's depth, readable on the host the moment
the call returns (the runner copies it then), nullptr for n = 0, and leave the input and the
CUDA error state alone. The depths are computed here; the memory kind and the pending error
are what the runner observed."""

import numpy as np
from cudaenv_check import Case, exact, main


def chains(rng, n, maxlen):
    """Disjoint chains of random lengths in [1, maxlen], node labels scrambled: the node at
    position t of its chain has the node at t - 1 as parent (t = 0: a root)."""
    lengths, total = [], 0
    while total < n:
        more = rng.integers(1, maxlen + 1, 2 * (n - total) // (maxlen + 1) + 16)
        lengths.append(more)
        total += int(more.sum())
    lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    last = int(np.searchsorted(ends, n))  # the chain that reaches n
    lengths = lengths[: last + 1].copy()
    if lengths.size:
        lengths[-1] -= int(ends[last]) - n
    pos = np.arange(n)
    start = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return labelled(rng, np.where(pos > start, pos - 1, pos))


def recursive(rng, n, root_prob):
    """A random recursive forest: the node at position k is a root (probability root_prob,
    always for k = 0) or the child of a random earlier node; labels scrambled."""
    pos = np.arange(n)
    earlier = rng.integers(0, np.maximum(pos, 1))
    root = rng.random(n) < root_prob
    return labelled(rng, np.where(root | (pos == 0), pos, earlier))


def labelled(rng, prev):
    """The forest whose position k has position prev[k] as parent, under a random labelling."""
    perm = rng.permutation(prev.size).astype(np.int32)
    parent = np.empty(prev.size, np.int32)
    parent[perm] = perm[prev]
    return parent


TESTS = {
    "empty": lambda rng: np.zeros(0, np.int32),
    "single-root": lambda rng: np.array([0], np.int32),
    "two-nodes": lambda rng: np.array([1, 1], np.int32),
    "star": lambda rng: np.zeros(70000, np.int32),
    "one-long-chain": lambda rng: labelled(rng, np.maximum(np.arange(20000) - 1, 0)),
    "short-chains": lambda rng: chains(rng, 300007, 64),
    "random-forest": lambda rng: recursive(rng, 1000003, 0.001),
    "long-chains": lambda rng: chains(rng, 1 << 21, 700),
}


def perf_cases(rng):
    n = 1 << 22
    timed = 5  # timed calls, each on its own forest of chains up to 512 links
    parents = np.stack([chains(rng, n, 512) for _ in range(timed)])
    return [Case("perf", {"parent": parents, "timed": np.int32(timed)})]


def cases(stage, rng):
    if stage == "perf":
        return perf_cases(rng)
    return [Case(name, {"parent": make(rng)}) for name, make in TESTS.items()]


def depths(parent):
    """Every node's depth by pointer jumping: after round k, d counts the first 2^k links
    (or all of them, once nxt points at the root); done when every nxt is a root."""
    nxt = parent.astype(np.int32)
    d = (nxt != np.arange(parent.size, dtype=np.int32)).astype(np.int32)
    for _ in range(max(1, (parent.size - 1).bit_length())):
        further = nxt[nxt]
        if np.array_equal(further, nxt):
            break
        d += d[nxt]
        nxt = further
    return d


def expect_depths(out, parent, depth, managed, what):
    n = parent.size
    if n == 0:
        return []
    if int(out.array(managed, np.int32, ())) != 1:
        return [f"{what}: the result was not allocated with cudaMallocManaged"]
    return exact(out.array(depth, np.int32, (n,)), depths(parent), what)


def check(case, out):
    parent = case["parent"]
    if case.name == "perf":
        found = []
        for r, row in enumerate(parent):
            found += expect_depths(out, row, f"depth{r}", f"managed{r}", f"depth{r}")
        return found
    found = []
    if (pending := int(out.array("pending", np.int32, ()))) != 0:
        found.append(f"a CUDA error was left pending after the call (cudaError_t {pending})")
    is_null = int(out.array("is_null", np.int32, ())) == 1
    if parent.size == 0 and not is_null:
        found.append("expected nullptr for n == 0")
    elif parent.size and is_null:
        found.append("returned nullptr")
    else:
        found += expect_depths(out, parent, "depth", "managed", "depth")
    got = out.array("parent_after", np.int32, parent.shape)
    return found + exact(got, parent, "parent (modified by the call)")


if __name__ == "__main__":
    main(cases, check)
