"""The families' reference semantics: one NumPy-only module per family (shared by its C++ and
Python renderings) and the checker glue, ``family_check.py``. Every generated problem's checker
carries these files verbatim (``check/reference.py``, ``check/family_check.py``), so they
import nothing but NumPy, the standard library and, for the glue, ``cudaenv_check`` beside
them; the questions reach them through ``cudaenv.questions.adapter``."""
