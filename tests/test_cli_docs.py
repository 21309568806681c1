"""Every flag of every command-line program appears on the page that documents the program.

The flags come from the programs themselves, never from a hand list: a baseline's from tyro's
``--help`` of its ``Args`` (in this process), every other program's from the ``argparse`` parser
it builds, caught at its ``parse_args`` call (``runpy`` runs the file as ``__main__`` up to
there; nothing after it runs). So a flag added without its docs fails here, and so does a new program without a page.
A flag hidden from ``--help`` (``help=argparse.SUPPRESS``, a process's internal switch) is not
looked for.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import re
import runpy
from collections.abc import Sequence
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
#: Every program (a file run as a script or with ``python -m``) -> the page (or pages) that documents its flags.
PAGES = {
    "benchmark/__main__.py": ("docs/harness.md", "docs/evaluate.md"),  # run and report; evaluate
    "benchmark/evaluation/test_server.py": "docs/evaluate.md",
    "benchmark/learning_demo.py": "docs/results.md",
    "benchmark/offline_rl.py": "docs/results.md",
    "benchmark/wordle_throughput.py": "docs/results.md",
    **{
        f"benchmark/perf/{script}.py": "benchmark/perf/README.md"
        for script in (
            "data_parallel",
            "evaluate_throughput",
            "gpu_check",
            "lora_scale",
            "mixture_overhead",
            "ours",
            "roofline",
            "run",
            "serve_load",
            "serve_throughput",
            "server_requests",
            "time_to_reward",
            "token_vector_overhead",
            "trl_contender",
            "trl_envs",
        )
    },
    "leaderboard/__main__.py": "docs/leaderboard.md",  # submit, validate, verify and compile
    "leaderboard/reference_points.py": "docs/leaderboard.md",
    "lm_gym/serve/__main__.py": "docs/serving.md",  # serve, and export (SUBCOMMANDS)
    "lm_gym/integrations/verifiers.py": "docs/integrations.md",
    "lm_gym/integrations/verl.py": "docs/integrations.md",
    "lm_gym/demo.py": "docs/getting-started.md",  # also the lm-gym-demo command
    "lm_gym/tasks/wordle/play.py": "docs/getting-started.md",
    "lm_gym/metrics/wordnet_build.py": "docs/getting-started.md",
    "lm_gym/tasks/word_lists.py": "docs/getting-started.md",
    "lm_gym/tasks/commongen/human_scores.py": "docs/metrics.md",
    "examples/multiagent_selfplay.py": "docs/multi-agent.md",
    "lm_gym/multiagent/demonstrations.py": "docs/multi-agent.md",
    "lm_gym/tasks/visdial/offline_data.py": "docs/offline-data.md",
    "lm_gym/tasks/wordle/offline_data.py": "docs/offline-data.md",
}
BASELINES_INDEX = "docs/baselines/index.md"
#: Programs whose first argument picks a command with its own parser (not an argparse subparser): the argv
#: that reaches each command's parser.
SUBCOMMANDS = {"lm_gym/serve/__main__.py": [[], ["export"]]}
#: Files that hold a program's text, not a program: an exported package's ``server/app.py``.
PROGRAM_TEMPLATES = {"lm_gym/serve/export_templates.py"}


class ParserBuilt(Exception):
    """Raised in place of ``parse_args``: carries the parser the program built."""

    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


def built_parser(path: Path, monkeypatch: pytest.MonkeyPatch, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser the program ``path`` builds, run as ``__main__`` with arguments ``argv`` up to its ``parse_args``."""

    def stop(parser, *args, **kwargs):
        raise ParserBuilt(parser)

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", stop)
        patch.setattr("sys.argv", [str(path), *argv])
        try:
            runpy.run_path(str(path), run_name="__main__")
        except ParserBuilt as built:
            return built.parser
        except ModuleNotFoundError as error:  # a program of an extra that is not installed here
            pytest.skip(f"{path.relative_to(ROOT)} needs {error.name}")
    raise AssertionError(f"{path.relative_to(ROOT)} built no argparse parser")


def shown_flags(parser: argparse.ArgumentParser) -> set[str]:
    """The long options ``--help`` shows, of the parser and of every subcommand's parser."""
    flags = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                flags |= shown_flags(subparser)
        elif action.help is not argparse.SUPPRESS:
            flags.update(option for option in action.option_strings if option.startswith("--"))
    return flags - {"--help"}


def tyro_flags(args_class: type, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The long options tyro's ``--help`` of ``args_class`` names (one line per option: a wide terminal)."""
    import tyro

    monkeypatch.setenv("COLUMNS", "400")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit):
        tyro.cli(args_class, args=["--help"])
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", shown.getvalue())) - {"--help"}


def missing_from(flags: set[str], text: str) -> list[str]:
    return sorted(flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text))


def programs() -> list[str]:
    """Every file of the project that runs as a program and parses flags (the baselines aside)."""
    found = []
    for folder in ("lm_gym", "benchmark", "leaderboard", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            runs = path.name == "__main__.py" or 'if __name__ == "__main__"' in source
            name = path.relative_to(ROOT).as_posix()
            if runs and ("argparse" in source or "parse_args" in source) and name not in PROGRAM_TEMPLATES:
                found.append(name)
    return found


def test_every_program_has_a_page():
    assert set(programs()) == set(PAGES)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for command, target in scripts.items():  # a console script documents the module it runs
        assert f"{target.split(':')[0].replace('.', '/')}.py" in PAGES, command


@pytest.mark.parametrize("program", sorted(PAGES))
def test_every_flag_is_on_the_program_s_page(program, monkeypatch):
    flags = set().union(
        *(shown_flags(built_parser(ROOT / program, monkeypatch, argv)) for argv in SUBCOMMANDS.get(program, [[]]))
    )
    pages = PAGES[program] if isinstance(PAGES[program], tuple) else (PAGES[program],)
    missing = missing_from(flags, "\n".join((ROOT / page).read_text(encoding="utf-8") for page in pages))
    assert not missing, f"{program}: {pages} do not name {missing}"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason='needs the docs extra: pip install -e ".[docs]"')
def test_every_baseline_flag_is_on_its_page(monkeypatch):
    """A baseline's page is made from its ``Args`` (``docs/hooks.py``); flags common to all may be on the index."""
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    scripts = sorted(path.stem for path in (ROOT / "baselines").glob("*.py"))
    assert scripts == sorted(hooks.BASELINES)  # each baseline has its page
    index = (ROOT / BASELINES_INDEX).read_text(encoding="utf-8")
    for script in scripts:
        module = importlib.import_module(script)  # baselines/ is on sys.path (pyproject.toml's pytest pythonpath)
        flags = tyro_flags(module.Args, monkeypatch)
        assert {"--env-id", "--seed", "--out-dir"} <= flags, script
        missing = missing_from(flags, hooks.baseline_page(script) + index)
        assert not missing, f"baselines/{script}.py: docs/baselines/{script}.md does not name {missing}"
