"""Test data, not tests: problem files (a cuTile solution importing torch, a harness) that
pytest's ``--doctest-modules`` would otherwise import."""

collect_ignore_glob = ["*/*"]
