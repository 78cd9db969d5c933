"""The Python static rules (:mod:`cudaenv.grading.static_python`): each test names the rule it
proves by the words of its violation, so it fails if that rule is removed; the bundled
references and baselines trip none of them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.grading.static_checks import analyse
from cudaenv.problems import load_suite
from cudaenv.problems.model import SourceFile


def _violations(source: str, forbidden: list[str] | None = None) -> list[str]:
    files = [SourceFile(path="solution.py", content=source)]
    return analyse(files, None, forbidden=forbidden or []).violations


def _has(found: list[str], words: str) -> bool:
    return any(words in v for v in found)


UTF7 = "# -*- coding: utf-7 -*-\nimport numpy as np\n# +AAo-import os+AAo-os.getpid()\n"


def test_utf7_declaration_is_refused_and_hides_code_from_a_text_parse(tmp_path: Path) -> None:
    # the text parse sees only a comment; CPython, honouring the declaration, runs `import os`
    assert not any(
        isinstance(n, ast.Import) and n.names[0].name == "os" for n in ast.walk(ast.parse(UTF7))
    )
    script = tmp_path / "m.py"
    script.write_bytes(UTF7.encode() + b"print('+AG8-s' in dir())\n")
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "True"  # the hidden import really happened
    assert _has(_violations(UTF7), "coding declaration 'utf-7'")


@pytest.mark.parametrize(
    "header", ["# coding: utf-8\n", "#!/usr/bin/env python\n# -*- coding: utf_8 -*-\n", ""]
)
def test_utf8_declarations_are_fine(header: str) -> None:
    assert _violations(header + "import numpy as np\nx = np.zeros(3)\n") == []


def test_honest_strings_and_the_main_guard_are_fine() -> None:
    source = (
        '"""Vector add. Buffers are set up in __init__; an invalid input (n < 0) raises."""\n'
        'if __name__ == "__main__":\n    print("{} done".format(3))\n'
    )
    assert _violations(source) == []


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("from numpy import load\n", "import of 'numpy.load' ('load': file access)"),
        ("from numba.core.config import os as o\n", "'numba.core.config.os' ('os'"),
        ("from numpy import testing\n", "'numpy.testing'"),
        ("from typing import get_type_hints\n", "'typing.get_type_hints'"),
        ("import numpy.lib.npyio\n", "'numpy.lib.npyio' ('npyio'"),
        ("from numpy import *\n", "import * (names no check sees)"),
    ],
)
def test_every_imported_name_is_checked(source: str, words: str) -> None:
    assert _has(_violations(source), words), _violations(source)


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\n_m = np\n",
        "import numpy as np\ndef f(m=np):\n    return m\n",
        "import numpy as np\nmods = [np]\n",
        "import numba\nc = numba.cuda\n",
        "from numba import cuda\nk = (cuda,)\n",
    ],
)
def test_a_module_object_as_a_value_is_refused(source: str) -> None:
    assert _has(_violations(source), "used as a value (aliases a module)"), _violations(source)


def test_attribute_writes_other_than_self_are_refused() -> None:
    patch = "import numpy as np\n\nclass Box:\n    pass\n\nb = Box()\nb.eq = np.array_equal\n"
    assert _has(_violations(patch), "assigns b.eq (monkeypatching")
    arg = "def f(x, out):\n    out.copy_to_host = lambda *a: None\n"
    assert _has(_violations(arg), "assigns out.copy_to_host")
    ok = "class Box:\n    def __init__(self, n):\n        self.n = n\n"
    assert _violations(ok) == []


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("def f(x: 'int') -> None:\n    pass\n", "string annotation"),
        ("def f(x) -> 'list[int]':\n    return []\n", "string annotation"),
        ("class D:\n    n: 'int' = 0\n", "string annotation"),
        ("from __future__ import annotations\n", "import annotations (evaluated annotations)"),
        ("import typing\nh = typing.get_type_hints\n", "attribute 'get_type_hints'"),
    ],
)
def test_evaluated_annotations_are_refused(source: str, words: str) -> None:
    assert _has(_violations(source), words), _violations(source)


MATCH_ARGS = """\
class Key:
    pass

def grab(x):
    match x:
        case Key(value):
            return value
    return None
"""


def test_positional_class_patterns_are_refused() -> None:
    assert _has(_violations(MATCH_ARGS), "positional class pattern 'Key(value)'")
    builtin = "def f(x):\n    match x:\n        case int(v):\n            return v\n    return 0\n"
    assert _violations(builtin) == []  # int(v) binds the subject itself


def test_dunder_names_and_definitions_are_refused() -> None:
    source = "class K:\n    __match_args__ = ('environ',)\n"
    assert _has(_violations(source), "dunder name '__match_args__'")
    hook = "class K:\n    def __getattr__(self, name):\n        return name\n"
    assert _has(_violations(hook), "defines '__getattr__'")
    meta = "class M(type):\n    pass\n\nclass K(metaclass=M):\n    pass\n"
    assert _has(_violations(meta), "class keywords (metaclass")
    assert _violations("__all__ = ['f']\n") == []


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("def f(g):\n    return '{0.f_back}'.format(g)\n", "format field reading an attribute"),
        ("def f(g):\n    return '{0[k]}'.format(g)\n", "format field reading an attribute or item"),
        ("from numba import cuda\nsig = \"open('x') or 1\"\n", "holds code (evaluated strings)"),
        ("s = 'int32.__class__'\n", "holds code (evaluated strings)"),
    ],
)
def test_string_keyed_attribute_access_is_refused(source: str, words: str) -> None:
    assert _has(_violations(source), words), _violations(source)


@pytest.mark.parametrize(
    ("source", "entry"),
    [
        ("def f(x, out):\n    out[:] = x.cumsum()\n", "numpy.cumsum"),
        ("import numpy as np\ndef f(x):\n    return np.ndarray.max(x)\n", "numpy.max"),
        (
            "import numpy as np\ndef f(x):\n    return np.maximum.accumulate(x)[-1]\n",
            "numpy.maximum.reduce",
        ),
        (
            "import numpy as np\ndef f(x):\n    return np.add.reduceat(x, [0])\n",
            "numpy.add.accumulate",
        ),
    ],
)
def test_banned_numpy_calls_in_method_spellings(source: str, entry: str) -> None:
    assert _has(_violations(source, [entry]), f"uses {entry}, which this problem forbids")


def test_method_spellings_leave_other_libraries_alone() -> None:
    atomics = "from numba import cuda\n@cuda.jit\ndef k(c, v):\n    cuda.atomic.add(c, v[0], 1)\n"
    assert _violations(atomics, ["numpy.add"]) == []
    sets = "def f(keys):\n    seen = set()\n    seen.add(keys[0])\n    return seen\n"
    assert _violations(sets, ["numpy.add"]) == []  # no ndarray method is called add


def test_bundled_python_references_and_baselines_trip_no_rule() -> None:
    for problem in load_suite("builtin"):
        if problem.problem_type != "cuda_python":
            continue
        banned = problem.forbidden_references
        for sol in (problem.solution, problem.baseline_solution):
            if sol is not None:
                assert analyse(sol.files, None, forbidden=banned).violations == [], problem.task_id
