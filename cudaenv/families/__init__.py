"""Problem families: parameter spaces rendered into complete, verified problems.

>>> from cudaenv.families import generate
>>> problems = generate(["reduce-axis"], count=3, seed=1)
>>> [p.metadata.family for p in problems]
['reduce-axis', 'reduce-axis', 'reduce-axis']
>>> generate(["reduce-axis"], count=3, seed=1)[0].content_hash() == problems[0].content_hash()
True
"""

from cudaenv.families.base import (
    GENERATOR_DATE,
    GENERATOR_VERSION,
    RELEASE,
    Family,
    Mutant,
    Parts,
    build_problem,
)
from cudaenv.families.generate import (
    DEFAULT_COUNT,
    DEFAULT_SEED,
    default_set,
    from_source,
    generate,
    mutants,
    sample,
    write,
)
from cudaenv.families.registry import FAMILIES, family_names, get_family

__all__ = [
    "DEFAULT_COUNT",
    "DEFAULT_SEED",
    "FAMILIES",
    "GENERATOR_DATE",
    "GENERATOR_VERSION",
    "RELEASE",
    "Family",
    "Mutant",
    "Parts",
    "build_problem",
    "default_set",
    "family_names",
    "from_source",
    "generate",
    "get_family",
    "mutants",
    "sample",
    "write",
]
