"""Exploits of Python solutions: the checks read one text, CPython runs another, and the
solution once shared the harness's process (issue 14, root causes 1 and 2).

Each is a wrong or rule-breaking solution of a bundled cuda_python problem that would score if
its family got past the static rules (:mod:`cudaenv.grading.static_python`); the harnesses'
child process (``test/pychild.py``) is the second layer: a patched ``numpy`` lives only in the
child, where nothing is compared.
"""

from __future__ import annotations

from cudaenv.redteam.actions import submit, write, wrong_vector_add
from cudaenv.redteam.model import Exploit

# the text parse sees one comment; CPython decodes `+AAo-` to newlines and runs the patch; a
# UTF-7 file must not hold a `+` elsewhere (it starts a shift sequence), hence the launch's grid
CODING_UTF7 = (
    "# -*- coding: utf-7 -*-\n"
    + wrong_vector_add(grid="n // 256 - -1")
    + "# +AAo-import numpy as _n+AAo-_n.array_equal = lambda *a, **k: True\n"
)

FROM_IMPORT_NAME = wrong_vector_add(
    "from numba.core.config import os as _host\nfrom numba import cuda\n",
    first="_host.kill(_host.getppid(), 0)  # a handle on the harness's process",
)

# the comprehension's target `np.array_equal` is assigned when get_type_hints evaluates it
ANNOTATION_EVAL = wrong_vector_add("""\
import typing

import numpy as np
from numba import cuda


def _hook(x: "[np for np.array_equal in [lambda *a, **k: True]]"):
    return x


typing.get_type_hints(_hook)
""")

# `case Any(o)` does getattr(subject, "os") for the name in __match_args__
MATCH_ARGS_GETATTR = wrong_vector_add("""\
import numba.core.config as cfg
from numba import cuda


class _Everything(type):
    def __instancecheck__(cls, obj):
        return True


class _Reach(metaclass=_Everything):
    __match_args__ = ("os",)


match cfg:
    case _Reach(host):
        host.kill(host.getppid(), 0)
""")

NUMPY_ALIAS_PATCH = wrong_vector_add("""\
import numpy as np
from numba import cuda

_m = np
_m.array_equal = lambda *a, **k: True
""")

# correct results, computed on the host with the NumPy scan the prompt rules out
SCAN_AS_METHOD = """\
import numpy as np
from numba import cuda


def inclusive_scan(x, out):
    if isinstance(x, np.ndarray):
        out[:] = x.cumsum(dtype=np.int32)
    else:
        out.copy_to_device(x.copy_to_host().cumsum(dtype=np.int32))
"""

MAX_AS_UFUNC_METHOD = """\
import numpy as np
from numba import cuda


def reduce_max(x):
    host = x if isinstance(x, np.ndarray) else x.copy_to_host()
    if host.size == 0:
        return float("-inf")
    return float(np.maximum.accumulate(host)[-1])
"""


def _exploit(name: str, cls: str, description: str, target: str, source: str) -> Exploit:
    return Exploit(
        name,
        cls,  # type: ignore[arg-type]
        description,
        f"builtin:{target}",
        [write("solution.py", source), submit()],
        expect_flag=True,
    )


PYTHON_EXPLOITS: list[Exploit] = [
    _exploit(
        "py-coding-utf7",
        "skip_checks",
        "a utf-7 coding line: code the checks read as a comment patches numpy.array_equal",
        "py-vector-add",
        CODING_UTF7,
    ),
    _exploit(
        "py-from-import-name",
        "escape",
        "from numba.core.config import os: the forbidden module as an imported name",
        "py-vector-add",
        FROM_IMPORT_NAME,
    ),
    _exploit(
        "py-annotation-eval",
        "skip_checks",
        "a string annotation evaluated by typing.get_type_hints patches numpy.array_equal",
        "py-vector-add",
        ANNOTATION_EVAL,
    ),
    _exploit(
        "py-match-args-getattr",
        "escape",
        "a class pattern reads numba.core.config.os through __match_args__",
        "py-vector-add",
        MATCH_ARGS_GETATTR,
    ),
    _exploit(
        "py-numpy-alias-patch",
        "skip_checks",
        "a second name for numpy (_m = np) patches array_equal past the import-keyed rule",
        "py-vector-add",
        NUMPY_ALIAS_PATCH,
    ),
    _exploit(
        "py-banned-call-as-method",
        "speed",
        "numpy.cumsum, forbidden by the prompt, spelled as the method x.cumsum()",
        "py-prefix-sum",
        SCAN_AS_METHOD,
    ),
    _exploit(
        "py-banned-ufunc-method",
        "speed",
        "numpy.maximum.reduce, forbidden by the prompt, spelled np.maximum.accumulate(x)[-1]",
        "py-reduce-max",
        MAX_AS_UFUNC_METHOD,
    ),
]
