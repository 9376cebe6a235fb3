"""The README's set-up and test commands are exactly what CI runs, and the jobs it names exist."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    return [line for line in blocks[0].splitlines() if line.strip()]


def test_first_block_is_setup_then_test():
    setup, test = readme_commands()
    assert "pip install" in setup and "pytest" in test


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in readme_commands():
        assert command in ci_lines, f"CI does not run the README command: {command}"


def test_main_job_line_names_a_builtin_task():
    from mtmc.tasks import builtin_names

    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    (main_job,) = [line for line in blocks[1].splitlines() if line.strip()]
    task = re.search(r"task=(\w+)", main_job).group(1)
    assert "mtmc optimize" in main_job and task in builtin_names()
