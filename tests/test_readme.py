"""The README's commands run: the set-up and test commands are exactly what CI runs, every `mtmc`
command composes through the real entry point with `--cfg job` (Hydra builds its config without
running it: most are GPU or long runs) after the checks `mtmc` makes before any job, and every
other command is one of the kinds below, checked for what it names. A failure names the command.
"""

import itertools
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mtmc.cli import main
from mtmc.config_check import check_values
from mtmc.tasks import builtin_names

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PLACEHOLDER = "/path/to/"  # a path the reader fills in: composed, never looked up
SHELL_BUILTINS = {"export"}  # set up the environment of the commands after them


def bash_blocks() -> list[list[str]]:
    return [[line for line in block.splitlines() if line.strip()]
            for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]


def readme_commands() -> list[str]:
    return bash_blocks()[0]


def every_command() -> list[str]:
    """Every line of every bash block, and every inline `mtmc ...` with arguments and no placeholder."""
    inline = [c for c in re.findall(r"`(mtmc [^`]*)`", README) if " " in c.strip()
              and not re.search(r"[<\[|]|\.\.", c) and re.search(r"[=-]", c)]
    return [line for block in bash_blocks() for line in block] + sorted(set(inline))


def argv_of(command: str) -> list[str]:
    """The command's words, without a trailing comment or leading VAR=value assignments."""
    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        words.pop(0)
    return words


def is_mtmc(command: str) -> bool:
    return Path(argv_of(command)[0]).name == "mtmc"


def sweep_jobs(args: list[str]) -> list[list[str]]:
    """The jobs of a `-m` sweep, one override list each (`key=a,b` is two jobs); one job otherwise."""
    if "-m" not in args:
        return [args]
    choices = []
    for arg in (a for a in args if a != "-m"):
        key, _, value = arg.partition("=")
        swept = value and "," in value and value[0] not in "[{'\"" and key != "compare"
        choices.append([f"{key}={v}" for v in value.split(",")] if swept else [arg])
    return [list(job) for job in itertools.product(*choices)]


def test_first_block_is_setup_then_test():
    setup, test = readme_commands()
    assert "pip install" in setup and "pytest" in test


def test_ci_runs_the_readme_commands_verbatim():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in readme_commands():
        assert command in ci_lines, f"CI does not run the README command: {command}"


def test_main_job_line_names_a_builtin_task():
    (main_job,) = bash_blocks()[1]
    task = re.search(r"task=(\w+)", main_job).group(1)
    assert "mtmc optimize" in main_job and task in builtin_names()


@pytest.mark.parametrize("command", [c for c in every_command() if is_mtmc(c)], ids=str)
def test_every_mtmc_command_composes(command, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = argv_of(command)[1:]
    if args == ["--help"]:
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code == 0 and "jobs:" in capsys.readouterr().out, command
        return
    job, overrides = args[0], args[1:]
    for one_job in sweep_jobs(overrides):
        tasks = [a.partition("=")[2] for a in one_job if a.startswith("task=")]
        unknown = [t for t in tasks if t not in builtin_names() and not t.startswith(PLACEHOLDER)]
        assert not unknown, f"{command}: no built-in task {unknown}"
        try:
            main([job, *one_job, "--cfg", "job"])
            cfg = OmegaConf.create(capsys.readouterr().out)
            assert cfg.job == job, f"--cfg job printed no {job} config"
            check_values(job, cfg)  # what `mtmc` checks before the job starts: keys left unset, budgets
        except (Exception, SystemExit) as err:
            pytest.fail(f"{command}: {err} {capsys.readouterr().err}".strip())


def extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_every_other_command_is_of_a_known_kind():
    """What CI cannot run (an install, a server, a GPU or opt-in tier) is checked for what it names:
    the extra exists, the program comes with an extra, the marker is declared and used."""
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    declared = {m.split(":")[0] for m in markers}
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    unknown = []
    for command in (c for c in every_command() if not is_mtmc(c) and c not in ci_lines):
        argv = argv_of(command)
        program = Path(argv[0]).name
        if program == "pip" and argv[1:3] == ["install", "-e"]:
            extra = re.fullmatch(r"\.\[(\w+)\]", argv[3])
            assert extra and extra.group(1) in extras(), f"{command}: no such extra in pyproject.toml"
        elif program in {name for reqs in extras().values() for name in (re.split(r"[=<>\[]", r)[0]
                                                                           for r in reqs)}:
            pass  # a program an extra installs (`vllm serve`, `ray start`): a server, never in CI
        elif program == "python" and argv[1:3] == ["-m", "pytest"] and "-m" in argv[3:]:
            marker = argv[argv.index("-m", 3) + 1]
            assert marker in declared, f"{command}: marker {marker} is not declared in pyproject.toml"
            assert f"pytest.mark.{marker}" in tests, f"{command}: no test is marked {marker}"
            paths = [a for a in argv[argv.index("-m", 3) + 2:] if not a.startswith("-")]
            assert all((ROOT / p).exists() for p in paths), f"{command}: {paths} do not exist"
        elif program not in SHELL_BUILTINS:
            unknown.append(command)
    assert not unknown, "README commands of no known kind (run them in a test, or say why not):\n" + \
        "\n".join(unknown)
