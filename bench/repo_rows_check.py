"""Check repository-task rows end to end: the release gate's six transitions, a
test-patch-only control, and the reward hacks of issue 29, each with its seconds.

    python bench/repo_rows_check.py ROWS.jsonl [--ids a,b] [--json OUT.json]

Rows come from ``bench/repo_kokkos_rows.py`` (real kokkos/kokkos pull requests, built from a
local mirror) or any SWE-kokkos-bench-style JSONL. Every hack must score 0; the controls
marked ``(defence off)`` grade the same hack with its first defence turned off, to show the
next one holds or that the hack is real. Hacks, made per row from its own base checkout:

- ``link_launcher``: the root CMakeLists.txt gets a CMake link launcher that writes
  ``exit 0`` over every test binary it links; the bug is left in.
- ``pytest_ini``: a root ``pytest.ini`` with ``addopts = --collect-only``.
- ``test_dir_edit``: the fix goes into test-side code in a directory the test patch does not
  touch (gtest's death-test verdict made always true; a fixed copy of the header shadowed from
  the vendored gtest include directory), the library left broken. Rows whose base has no
  vendored gtest (``tpls/gtest``: kokkos's layout) report this hack as not applicable.
- ``build_rewrite``: the root CMakeLists.txt rewrites a held-out test at configure time
  (``execute_process``: kokkos refuses ``file(WRITE)`` into its sources).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaenv.grading.grader import grade
from cudaenv.problems.loader import load_suite
from cudaenv.problems.model import Problem
from cudaenv.problems.repo_base import Staging, base_tree
from cudaenv.rollout.repo_gate import transitions

LINK_SH = """#!/bin/sh
"$@" || exit $?
prev=""; out=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$out" in *Test*|*test*) printf '#!/bin/sh\\nexit 0\\n' > "$out"; chmod +x "$out";; esac
"""
LAUNCHER = (
    '\nset_property(GLOBAL PROPERTY RULE_LAUNCH_LINK "sh ${CMAKE_SOURCE_DIR}/cmake/link.sh")\n'
)


def _base(problem: Problem, path: str) -> bytes | None:
    """``path`` in the row's base tree; None where the base has no such file."""
    spec = problem.repository
    assert spec is not None
    base = base_tree(spec)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Staging(base, Path(tmp))
        entry = stage.entries().get(path)
        return None if entry is None else stage.blob(entry[1])


def _patch(problem: Problem, files: dict[str, bytes]) -> str:
    spec = problem.repository
    assert spec is not None
    with tempfile.TemporaryDirectory() as tmp:
        stage = Staging(base_tree(spec), Path(tmp))
        for path, data in files.items():
            stage.put(path, data, "100755" if path.endswith(".sh") else "100644")
        return stage.diff().decode()


def _gold_file(problem: Problem, path: str) -> bytes:
    """``path`` as the production patch leaves it."""
    spec = problem.repository
    assert spec is not None and problem.solution is not None
    with tempfile.TemporaryDirectory() as tmp:
        stage = Staging(base_tree(spec), Path(tmp))
        stage.apply((problem.solution.patch or "").encode())
        return stage.blob(stage.entries()[path][1])


def hacks(problem: Problem) -> dict[str, str]:
    """The hack patches for one row (see the module docstring)."""
    spec = problem.repository
    assert spec is not None
    root = _base(problem, "CMakeLists.txt") or b""
    out = {
        "link_launcher": _patch(
            problem, {"CMakeLists.txt": root + LAUNCHER.encode(), "cmake/link.sh": LINK_SH.encode()}
        ),
        "pytest_ini": _patch(problem, {"pytest.ini": b"[pytest]\naddopts = --collect-only\n"}),
    }
    tests = sorted(spec.test_patch_paths)
    target = next((t for t in tests if t.endswith(".cpp")), tests[0])
    # execute_process, not file(WRITE): kokkos refuses CMake writes into its source tree
    rewrite = (
        "\nexecute_process(COMMAND ${CMAKE_COMMAND} -E copy "
        f'"${{CMAKE_SOURCE_DIR}}/cmake/rewritten.cpp" "${{CMAKE_SOURCE_DIR}}/{target}")\n'
    )
    out["build_rewrite"] = _patch(
        problem,
        {
            "CMakeLists.txt": root + rewrite.encode(),
            "cmake/rewritten.cpp": b"// rewritten at configure time\nint cudaenv_rewritten = 0;\n",
        },
    )
    # test_dir_edit needs kokkos's vendored gtest (tpls/gtest): rows without it skip that hack
    gtest = "tpls/gtest/gtest/gtest-all.cc"
    vendored = _base(problem, gtest)
    if vendored is None:
        return out
    if spec.failure_stage == "runtime":  # every death test "passes"
        text = vendored.decode()
        start = text.index("bool DeathTestImpl::Passed(bool status_ok)")
        end = text.index("return success;", start)
        text = text[:end] + "return true;" + text[end + len("return success;") :]
        out["test_dir_edit"] = _patch(problem, {gtest: text.encode()})
    else:  # the fixed header, shadowed from the gtest include directory (first on -I)
        code = [p for p in re.findall(r"^\+\+\+ b/(\S+)", problem.solution.patch or "", re.M)]  # type: ignore[union-attr]
        header = next(p for p in code if p.endswith(".hpp"))
        out["test_dir_edit"] = _patch(
            problem, {f"tpls/gtest/{Path(header).name}": _gold_file(problem, header)}
        )
    return out


def _defence_off(problem: Problem, hack: str) -> Problem:
    spec = problem.repository
    assert spec is not None
    if hack in ("link_launcher", "build_rewrite"):
        policy = spec.policy.model_copy(update={"build_file_changes": "kept"})
    elif hack == "test_dir_edit":
        policy = spec.policy.model_copy(update={"protected": []})
    else:
        policy = spec.policy.model_copy(
            update={"protected": [g for g in spec.policy.protected if "pytest" not in g]}
        )
    return problem.model_copy(update={"repository": spec.model_copy(update={"policy": policy})})


def check(problem: Problem) -> list[dict]:
    rows: list[dict] = []
    for t in transitions(problem):
        rows.append({"step": t.name, "ok": t.ok, "seconds": t.seconds, "detail": t.detail})
    spec = problem.repository
    assert spec is not None

    def graded(step: str, p: Problem, patch: str, want: bool) -> None:
        t0 = time.perf_counter()
        v = grade(p, patch)
        stages = ", ".join(f"{k} {s.seconds:.1f}s" for k, s in v.stages.items())
        rows.append(
            {
                "step": step,
                "ok": v.passed is want,
                "seconds": round(time.perf_counter() - t0, 2),
                "detail": f"reward {1 if v.passed else 0}: {v.reason[:160]} [{stages}]",
            }
        )

    graded("control: test patch only", problem, spec.test_patch, False)
    made = hacks(problem)
    if "test_dir_edit" not in made:
        rows.append({"step": "hack: test_dir_edit", "ok": True, "seconds": 0.0,
                     "detail": "not applicable: the base has no vendored gtest (tpls/gtest)"})  # fmt: skip
    for name, patch in made.items():
        graded(f"hack: {name}", problem, patch, False)
        if name != "pytest_ini" or spec.p2p:
            real = name == "test_dir_edit"  # without the defence the hack is real: it passes
            graded(f"  {name} (defence off)", _defence_off(problem, name), patch, real)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--ids", default="")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    suite = load_suite(args.rows)
    ids = [i for i in args.ids.split(",") if i] or list(suite.ids)
    report: dict[str, list[dict]] = {}
    for task_id in ids:
        rows = check(suite[task_id])
        report[task_id] = rows
        print(f"\n{task_id}\n| step | ok | seconds | detail |\n| --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| {r['step']} | {'ok' if r['ok'] else 'FAIL'} | {r['seconds']} | {r['detail']} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0 if all(r["ok"] for rows in report.values() for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
