"""The rule tables of the Python static checks (:mod:`cudaenv.grading.static_python`): what
a solution may import and which names, attributes and spellings it may not use, each with the
exploit class it stops."""

from __future__ import annotations

import re

__all__ = [
    "ALLOWED_PY_MODULES",
    "CODE_IN_STRING",
    "FORBIDDEN_PY_ATTRS",
    "FORBIDDEN_PY_MODULES",
    "FORBIDDEN_PY_NAMES",
    "NDARRAY_METHODS",
    "SAFE_DUNDER_ATTRS",
    "SAFE_DUNDER_DEFS",
    "SELF_MATCHING",
    "SUBMODULES",
    "UFUNC_METHODS",
]


def _words(text: str) -> list[str]:
    return text.split()


FORBIDDEN_PY_MODULES: dict[str, str] = dict.fromkeys(
    _words(
        "os sys subprocess shutil socket ctypes cffi importlib inspect gc builtins signal atexit "
        "threading multiprocessing pathlib io pickle marshal code runpy tempfile glob urllib http "
        "requests nvtx traceback faulthandler weakref"
    ),
    "escape or tampering",
)
# A denylist of modules is never complete (operator.attrgetter reaches os through numba;
# linecache reads files): only these imports are allowed (skip_checks, read_hidden).
ALLOWED_PY_MODULES = frozenset(
    _words(
        "numpy numba math cmath functools itertools typing dataclasses __future__ enum "
        "collections warnings time random statistics abc numbers"
    )
)
# Attribute names that reach files, processes, the interpreter or the harness's frames from
# allowed modules (numpy.fromfile, numpy.lib.npyio.DataSource, numba.core.config.os, ...), and
# those that evaluate strings as code (typing.get_type_hints evaluates string annotations).
_FILE_ATTRS = (
    "fromfile tofile memmap load loadtxt genfromtxt fromregex save savez savez_compressed savetxt "
    "DataSource npyio _datasource open serialize pickle"
)
_ESCAPE_ATTRS = (
    "os sys subprocess ctypes ctypeslib modules environ system popen spawn _exit exit "
    "import_module _getframe testing"
)
_FRAME_ATTRS = "f_globals f_locals f_back f_builtins f_code gi_frame gi_code tb_frame tb_next cr_frame ag_frame"
_EVAL_ATTRS = (
    "get_type_hints ForwardRef _eval_type evaluate_forward_ref get_annotations TypeAliasType "
    "attrgetter methodcaller"
)
FORBIDDEN_PY_ATTRS: dict[str, str] = {
    **dict.fromkeys(_FILE_ATTRS.split(), "file access"),
    **dict.fromkeys(_ESCAPE_ATTRS.split(), "escape or tampering"),
    **dict.fromkeys(_FRAME_ATTRS.split(), "frame introspection (reaches the harness)"),
    **dict.fromkeys(_EVAL_ATTRS.split(), "evaluates a string as code or attribute names"),
}
FORBIDDEN_PY_NAMES: dict[str, str] = {
    # skip_checks: ends the harness with status 0 before it checks anything
    **dict.fromkeys(
        ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException"),
        "ends the harness early",
    ),
    **dict.fromkeys(
        _words(
            "exit quit open eval exec compile __import__ globals locals vars getattr setattr "
            "delattr breakpoint input __builtins__ __loader__ __spec__ __main__ sys_modules"
        ),
        "escape or tampering",
    ),
}
# dunder attributes that are plain data; every other one is an introspection escape
SAFE_DUNDER_ATTRS = frozenset({"__init__", "__name__", "__class__", "__len__", "__call__"})
# methods a class may define; others (__getattr__, __instancecheck__, __set_name__, __del__...)
# run code where the harness or the language looks something up
SAFE_DUNDER_DEFS = frozenset(
    _words(
        "__init__ __call__ __len__ __repr__ __str__ __iter__ __next__ __getitem__ __setitem__ "
        "__contains__ __enter__ __exit__ __eq__ __hash__ __post_init__"
    )
)
# types whose class pattern `case int(x)` matches the subject itself, not an attribute
SELF_MATCHING = frozenset(
    _words("bool bytearray bytes dict float frozenset int list set str tuple")
)
# names of submodules: an attribute chain ending in one is a module object (numba.cuda, np.lib)
SUBMODULES = frozenset(
    _words(
        "cuda core config lib testing random linalg fft ma typed types np misc extending "
        "cpython experimental char rec polynomial ctypeslib npyio simulator cudadrv errors "
        "umath multiarray _core emath exceptions dtypes utils os sys"
    )
)
# a call of a forbidden builtin inside a string: numba evaluates signature strings with eval()
# (`"open(..."`, `"getattr(..."`), or a dunder attribute read (`"int32.__class__"`)
CODE_IN_STRING = re.compile(
    r"\b(" + "|".join(map(re.escape, FORBIDDEN_PY_NAMES)) + r")\(|\.\s*__\w+"
)
# NumPy functions that are also ndarray methods (`x.cumsum()` is numpy.cumsum); other names
# (`numpy.add`) are no method of an array, so `seen.add(k)` on a set is not NumPy's
NDARRAY_METHODS = frozenset(
    _words(
        "all any argmax argmin argpartition argsort clip compress cumprod cumsum diagonal dot max "
        "mean min nonzero partition prod ptp put ravel repeat round searchsorted sort std sum "
        "take trace var"
    )
)
# ufunc methods that each compute what the ufunc's reduction does (np.maximum.accumulate[-1])
UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")
