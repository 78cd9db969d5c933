"""Loading Harbor task directories and SWE-bench-style repository rows with load_suite, and
grading them through their own reward files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import cudaenv
from cudaenv.errors import SpecError
from cudaenv.grading.grader import grade
from cudaenv.problems import load_suite
from cudaenv.problems.harbor_tasks import container_paths, find_task_dirs, rewrite_script
from cudaenv.problems.swe_tasks import patch_paths

# ----------------------------------------------------------------------------- Harbor

TASK_TOML = """\
schema_version = "1.4"

[task]
name = "demo/greet"
description = "Write a greeting"
keywords = ["demo", "shell"]

[metadata]
difficulty = "easy"

[verifier]
timeout_sec = 60.0

[environment]
gpus = {gpus}
workdir = "/app"
network_mode = "no-network"
"""
# checks the file the solution writes; JSON rewards (with extra numbers), or a text reward
TEST_JSON = """\
#!/bin/bash
if [ "$(cat /app/out.txt 2>/dev/null)" = "hello $(cat /app/data/name.txt)" ]; then
  echo '{"reward": 1, "exact": 1}' > /logs/verifier/reward.json
else
  echo '{"reward": 0, "exact": 0}' > /logs/verifier/reward.json
fi
"""
TEST_TXT = """\
#!/bin/bash
cd /app
if grep -qx "hello world" out.txt 2>/dev/null; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
SOLVE = """\
#!/bin/bash
set -e
cd /app
echo "hello $(cat /app/data/name.txt)" > out.txt
"""


def write_harbor_task(root: Path, name: str, *, test: str = TEST_JSON, gpus: int = 0) -> Path:
    task = root / name
    files = {
        "task.toml": TASK_TOML.format(gpus=gpus),
        "instruction.md": "<!-- canary GUID 1234 -->\n\nWrite `hello <name>` to /app/out.txt, where <name> is in data/name.txt.\n",
        "environment/Dockerfile": "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY data /app/data\n",
        "environment/data/name.txt": "world\n",
        "tests/test.sh": test,
        "solution/solve.sh": SOLVE,
    }
    for rel, text in files.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task


def test_harbor_task_loads_into_a_problem(tmp_path: Path) -> None:
    write_harbor_task(tmp_path / "tasks", "greet")
    suite = load_suite(tmp_path / "tasks")
    p = suite["demo/greet"]
    assert p.prompt.startswith("Write `hello <name>`")  # the canary line is dropped, as Harbor does
    assert [f.path for f in p.context_files] == [
        "data/name.txt"
    ]  # what Docker copies, not the Dockerfile
    assert [f.path for f in p.test_files] == ["tests/test.sh"]
    assert p.solution is not None and [f.path for f in p.solution.files] == ["solution/solve.sh"]
    assert p.reward_file == ".harbor/logs/verifier/reward.json"
    assert not p.needs_gpu and p.timeout_seconds == 60.0
    assert p.metadata.difficulty == "easy" and p.metadata.tags == ["demo", "shell"]
    test_sh = p.test_files[0].content
    assert (
        "${CUDAENV_WORKSPACE}/out.txt" in test_sh
        and "${CUDAENV_WORKSPACE}/.harbor/logs/verifier/reward.json" in test_sh
    )


def test_a_gpu_harbor_task_needs_a_gpu(tmp_path: Path) -> None:
    write_harbor_task(tmp_path, "greet", gpus=1)
    assert load_suite(tmp_path / "greet")[0].needs_gpu


@pytest.mark.parametrize("test", [TEST_JSON, TEST_TXT], ids=["reward.json", "reward.txt"])
def test_harbor_task_grades_by_its_reward_file(tmp_path: Path, test: str) -> None:
    write_harbor_task(tmp_path, "greet", test=test)
    p = load_suite(tmp_path)[0]
    assert p.solution is not None
    oracle = grade(p, p.solution)
    assert oracle.passed is True, oracle.model_dump_json(indent=1)
    assert "[reward]" in oracle.stages["test"].output_tail
    nop = grade(p, {})
    assert nop.passed is False and nop.failure == "agent"
    wrong = grade(p, {"out.txt": "hello moon\n"})
    assert wrong.passed is False and wrong.stages["test"].reason == "reward 0 < 1"
    direct = grade(p, {"out.txt": "hello world\n"})  # an agent that just does the work
    assert direct.passed is True, direct.reason


def test_a_planted_reward_file_does_not_count(tmp_path: Path) -> None:
    write_harbor_task(tmp_path, "greet")
    p = load_suite(tmp_path)[0]
    planted = {".harbor/logs/verifier/reward.json": '{"reward": 1}', "out.txt": "wrong\n"}
    v = grade(p, planted)
    assert v.passed is False and v.stages["test"].reason == "reward 0 < 1"


REWRITING_SOLVE = """#!/bin/bash
cat > "$CUDAENV_WORKSPACE/tests/test.sh" <<'EOF2'
#!/bin/bash
mkdir -p "$CUDAENV_WORKSPACE/.harbor/logs/verifier"
echo '{"reward": 1}' > "$CUDAENV_WORKSPACE/.harbor/logs/verifier/reward.json"
EOF2
echo wrong > "$CUDAENV_WORKSPACE/out.txt"
"""


def test_a_build_step_that_rewrites_the_tests_scores_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's own solution/solve.sh (which the build runs) rewrites the hidden test.sh:
    the tests are written back from the problem after the build, and the build fails."""
    write_harbor_task(tmp_path, "greet")
    p = load_suite(tmp_path)[0]
    v = grade(p, {"solution/solve.sh": REWRITING_SOLVE}, build_cache=False, test_cache=False)
    assert v.passed is False and "the build rewrote protected files ['tests/test.sh']" in v.reason
    # the defence off: the rewritten test.sh would have graded the wrong output 1
    monkeypatch.setattr("cudaenv.grading.build.restore_protected", lambda *a: [])
    off = grade(p, {"solution/solve.sh": REWRITING_SOLVE}, build_cache=False, test_cache=False)
    assert off.passed is True


def test_json_reward_wins_over_text_and_a_missing_reward_fails(tmp_path: Path) -> None:
    both = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\necho '{\"reward\": 0.5}' > /logs/verifier/reward.json\n"
    write_harbor_task(tmp_path / "a", "both", test=both)
    v = grade(load_suite(tmp_path / "a")[0], {"out.txt": "x\n"})
    assert v.passed is False and v.stages["test"].reason == "reward 0.5 < 1"
    write_harbor_task(tmp_path / "b", "silent", test="#!/bin/bash\nexit 0\n")
    v = grade(load_suite(tmp_path / "b")[0], {"out.txt": "x\n"})
    assert v.passed is False and "no reward file" in (v.stages["test"].reason or "")
    failing = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nexit 3\n"
    write_harbor_task(tmp_path / "c", "failing", test=failing)
    v = grade(load_suite(tmp_path / "c")[0], {"out.txt": "x\n"})
    assert v.passed is False and v.stages["test"].exit_code == 3


def test_harbor_task_episode(tmp_path: Path) -> None:
    write_harbor_task(tmp_path, "greet")
    env = cudaenv.make(load_suite(tmp_path)[0])
    try:
        obs, _ = env.reset(seed=0)
        assert "data/name.txt" in obs
        obs, reward, *_ = env.step({"tool": "bash", "args": {"command": "cat data/name.txt"}})
        assert "world" in obs and reward == 0.0
        env.step({"tool": "write_file", "args": {"path": "out.txt", "content": "hello world\n"}})
        _, reward, terminated, _, info = env.step({"tool": "submit", "args": {}})
        assert terminated and reward == 1.0, info["verdict"].reason
    finally:
        env.close()


def test_rewrite_maps_container_paths_only() -> None:
    m = container_paths("/app")
    script = textwrap.dedent("""\
        cd /app && ls /apple /x/app /app-data "$HOME/app"
        cat /tests/data.txt > /logs/verifier/reward.txt
        cat > /app/keep.py <<'EOF'
        print("/app stays as written")
        EOF
        echo "/app/done"
    """)
    out = rewrite_script(script, m)
    ws = "${CUDAENV_WORKSPACE}"
    assert out.splitlines()[0] == f'cd {ws} && ls /apple /x/app /app-data "$HOME/app"'
    assert out.splitlines()[1] == f"cat {ws}/tests/data.txt > {ws}/.harbor/logs/verifier/reward.txt"
    assert out.splitlines()[2] == f"cat > {ws}/keep.py <<'EOF'"
    assert out.splitlines()[3] == 'print("/app stays as written")'
    assert out.splitlines()[5] == f'echo "{ws}/done"'


def test_nested_task_toml_belongs_to_its_task(tmp_path: Path) -> None:
    task = write_harbor_task(tmp_path, "outer")
    (task / "tests" / "fixture").mkdir()
    (task / "tests" / "fixture" / "task.toml").write_text("[task]\nname = 'x/y'\n")
    assert find_task_dirs(tmp_path) == [task]


def test_harbor_task_without_test_sh_is_a_spec_error(tmp_path: Path) -> None:
    task = write_harbor_task(tmp_path, "broken")
    (task / "tests" / "test.sh").unlink()
    with pytest.raises(SpecError, match=r"tests/test\.sh"):
        load_suite(tmp_path)


# ----------------------------------------------------------------------------- repository tasks
# (loaded, graded and validated in tests/problems/test_repo_rows.py, tests/grading/test_repo_grading.py
# and tests/env/test_repo_env.py)


def test_patch_paths_reads_both_sides() -> None:
    patch = "diff --git a/x.py b/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/x.py\n@@ -0,0 +1 @@\n+1\n"
    assert patch_paths(patch) == ["x.py"]
    assert patch_paths("--- a/old.c\t2020\n+++ b/new.c\t2020\n") == ["old.c", "new.c"]
