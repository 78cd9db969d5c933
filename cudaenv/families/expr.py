"""Element-wise expression trees for the elementwise family: drawing them and writing them as
math (prompts), CUDA and numba code. The checker evaluates a tree with its forward error bound
(the tolerance) node by node in ``refs/elementwise.py``, by these rules:

A tree is JSON: a leaf ``"x0"``; ``[op, a]`` (abs relu tanh sigmoid exp sq); ``[op, a, b]``
(add sub mul max min); ``[op, a, c]`` with a constant (scale shift). The error bound of a
node computed in a type of unit roundoff ``u`` from operands with bounds ``ea``, ``eb``:
add/sub ``ea + eb + u(|v| + ea + eb)``; mul ``|a|eb + |b|ea + ea*eb`` plus rounding; max,
min, abs, relu: the largest operand bound; tanh ``ea + 4u|v|``; sigmoid ``ea/4 + 8u|v|``;
exp ``|v|(e^ea - 1) + 4u|v|``; sq ``2|a|ea + ea^2`` plus rounding.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

Tree = Any
UNARY = ("abs", "relu", "tanh", "sigmoid", "exp", "sq")
BINARY = ("add", "sub", "mul", "max", "min")
CONST = ("scale", "shift")
CONSTANTS = (0.5, -0.25, 1.5, 2.0, -3.0, 0.125, 0.75)
INPUT_RANGE = 2.0  # inputs are uniform in [-2, 2]
MAX_MAGNITUDE = 1000.0  # |value| bound of every accepted tree (half holds it)
#: the wrong operator of the "operator" mutant, by the root's operator
SWAP = {"add": "sub", "sub": "add", "mul": "add", "max": "min", "min": "max", "abs": "relu",
        "relu": "abs", "tanh": "sigmoid", "sigmoid": "tanh", "exp": "sq", "sq": "abs",
        "scale": "shift", "shift": "scale"}  # fmt: skip


def draw(rng: random.Random, n_inputs: int, depth: int) -> Tree:
    """A tree of the given depth, bounded in size, whose value depends on each of
    x0..x{n-1} and differs from its operator mutant's (checked on sample inputs)."""
    for _ in range(1000):
        tree = _grow(rng, n_inputs, depth)
        if (
            leaves(tree) >= {f"x{i}" for i in range(n_inputs)}
            and magnitude(tree) <= MAX_MAGNITUDE
            and sensible(tree, n_inputs)
        ):
            return tree
    raise RuntimeError("no expression found")  # pragma: no cover - the space is large


def evaluate(tree: Tree, env: dict[str, np.ndarray]) -> np.ndarray:
    """The value in float64 (NumPy), for the draw's checks."""
    if isinstance(tree, str):
        return env[tree]
    op, *args = tree
    a = evaluate(args[0], env)
    if op in BINARY:
        b = evaluate(args[1], env)
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
                "min": np.minimum}[op](a, b)  # fmt: skip
    if op == "scale":
        return a * args[1]
    if op == "shift":
        return a + args[1]
    return {"abs": np.abs, "relu": lambda t: np.maximum(t, 0.0), "tanh": np.tanh,
            "sigmoid": lambda t: 1.0 / (1.0 + np.exp(-t)), "exp": np.exp,
            "sq": lambda t: t * t}[op](a)  # fmt: skip


def _differs(a: np.ndarray, b: np.ndarray) -> float:
    """The share of elements where two results differ by more than any tolerance."""
    return float(np.mean(np.abs(a - b) > 1e-3 * (1.0 + np.abs(a))))


def sensible(tree: Tree, n_inputs: int) -> bool:
    """Every input changes the value on at least a fifth of random points, and so does
    swapping the outermost operator (the operator mutant)."""
    rng = np.random.default_rng(0)
    env = {f"x{i}": rng.uniform(-2, 2, 512) for i in range(n_inputs)}
    base = evaluate(tree, env)
    for i in range(n_inputs):
        other = {**env, f"x{i}": rng.uniform(-2, 2, 512)}
        if _differs(base, evaluate(tree, other)) < 0.2:
            return False
    return _differs(base, evaluate(swap_root(tree), env)) >= 0.2


def swap_root(tree: Tree) -> Tree:
    """The tree with its outermost operator replaced by its wrong twin."""
    return [SWAP[tree[0]], *tree[1:]]


def _grow(rng: random.Random, n: int, depth: int) -> Tree:
    if depth == 0:
        return f"x{rng.randrange(n)}"
    kind = rng.random()
    if kind < 0.5:
        a, b = _grow(rng, n, depth - 1), _grow(rng, n, rng.randrange(depth))
        if a == b:
            b = f"x{(int(str(b)[1:]) + 1) % n}" if isinstance(b, str) and n > 1 else b
        if a == b:
            return [rng.choice(CONST), a, rng.choice(CONSTANTS)]
        return [rng.choice(BINARY), *((a, b) if rng.random() < 0.5 else (b, a))]
    if kind < 0.8:
        a = _grow(rng, n, depth - 1)
        ops = [o for o in UNARY if o != "exp" or isinstance(a, str)]  # exp of a leaf only
        return [rng.choice(ops), a]
    return [rng.choice(CONST), _grow(rng, n, depth - 1), rng.choice(CONSTANTS)]


def leaves(tree: Tree) -> set[str]:
    if isinstance(tree, str):
        return {tree}
    return set().union(*(leaves(t) for t in tree[1:] if not isinstance(t, float)))


def magnitude(tree: Tree) -> float:
    """An upper bound of |value| for inputs in [-2, 2]."""
    if isinstance(tree, str):
        return INPUT_RANGE
    op, *args = tree
    m = [magnitude(a) for a in args if not isinstance(a, float)]
    if op in ("add", "sub"):
        return m[0] + m[1]
    if op == "mul":
        return m[0] * m[1]
    if op in ("max", "min"):
        return max(m)
    if op == "exp":
        return math.exp(min(m[0], 50.0))
    if op == "sq":
        return m[0] * m[0]
    if op in ("tanh", "sigmoid"):
        return 1.0
    if op == "scale":
        return abs(args[1]) * m[0]
    if op == "shift":
        return m[0] + abs(args[1])
    return m[0]


def size(tree: Tree) -> int:
    """Floating-point operations of one evaluation (AUTHORING.md: max/min/abs/relu are free;
    a transcendental counts one; sigmoid is exp, add and divide)."""
    if isinstance(tree, str):
        return 0
    op, *args = tree
    inner = sum(size(a) for a in args if not isinstance(a, float))
    return inner + {"max": 0, "min": 0, "abs": 0, "relu": 0, "sigmoid": 3}.get(op, 1)


def depth(tree: Tree) -> int:
    if isinstance(tree, str):
        return 0
    return 1 + max(depth(a) for a in tree[1:] if not isinstance(a, float))


def math_text(tree: Tree) -> str:
    """The formula as the prompt writes it."""
    if isinstance(tree, str):
        return tree
    op, *args = tree
    a = math_text(args[0])
    if op in BINARY:
        b = math_text(args[1])
        sym = {"add": "+", "sub": "-", "mul": "*"}.get(op)
        return f"({a} {sym} {b})" if sym else f"{op}({a}, {b})"
    if op == "scale":
        return f"({_num(args[1])} * {a})"
    if op == "shift":
        return f"({a} + {_num(args[1])})" if args[1] >= 0 else f"({a} - {_num(-args[1])})"
    if op == "sq":
        return f"({a})^2"
    return f"{op}({a})"


def _num(c: float) -> str:
    return f"{c:g}"


def device(tree: Tree, typ: str, wrap: str = "") -> str:
    """A CUDA expression in type ``typ`` of the loaded leaves ``v0``..; ``wrap`` names a
    function applied to every node (the precision mutant rounds each one)."""

    def w(text: str) -> str:
        return f"{wrap}({text})" if wrap else text

    if isinstance(tree, str):
        return f"v{tree[1:]}"
    op, *args = tree
    a = device(args[0], typ, wrap)
    if op in BINARY:
        b = device(args[1], typ, wrap)
        sym = {"add": "+", "sub": "-", "mul": "*"}.get(op)
        return w(f"({a} {sym} {b})" if sym else f"f{op}({a}, {b})")
    if op in CONST:
        c = f"({typ}){args[1]!r}"
        return w(f"({a} * {c})" if op == "scale" else f"({a} + {c})")
    return w({
        "abs": f"fabs({a})", "relu": f"fmax({a}, ({typ})0)", "tanh": f"tanh({a})",
        "sigmoid": f"(({typ})1 / (({typ})1 + exp(-({a}))))", "exp": f"exp({a})",
        "sq": f"({a} * {a})",
    }[op])  # fmt: skip


def python(tree: Tree, wrap: str = "") -> str:
    """The same expression in numba kernel code (leaves ``v0``..; ``math`` imported)."""

    def w(text: str) -> str:
        return f"{wrap}({text})" if wrap else text

    if isinstance(tree, str):
        return f"v{tree[1:]}"
    op, *args = tree
    a = python(args[0], wrap)
    if op in BINARY:
        b = python(args[1], wrap)
        sym = {"add": "+", "sub": "-", "mul": "*"}.get(op)
        return w(f"({a} {sym} {b})" if sym else f"{op}({a}, {b})")
    if op in CONST:
        return w(f"({a} * {args[1]!r})" if op == "scale" else f"({a} + {args[1]!r})")
    return w({
        "abs": f"abs({a})", "relu": f"max({a}, 0.0)", "tanh": f"math.tanh({a})",
        "sigmoid": f"(1.0 / (1.0 + math.exp(-({a}))))", "exp": f"math.exp({a})",
        "sq": f"({a} * {a})",
    }[op])  # fmt: skip
