"""``python -m benchmark`` and ``python -m leaderboard``: one dispatcher style (argparse subcommands).

Both list their commands in ``--help`` and exit 0; a missing or unknown command, or a bad
bootstrap setting, is a usage error (exit status 2); every command has its own ``--help``.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.__main__ import build_parser as benchmark_parser
from benchmark.__main__ import main as benchmark_main
from leaderboard.__main__ import build_parser as leaderboard_parser
from leaderboard.__main__ import main as leaderboard_main

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "benchmark": (benchmark_main, ("run", "report")),
    "leaderboard": (leaderboard_main, ("submit", "validate", "compile")),
}
BETWEEN_0_AND_1 = "must be a number between 0 and 1"


def exit_status(main, argv):
    with pytest.raises(SystemExit) as raised:
        main(argv)
    return raised.value.code


@pytest.mark.parametrize("package", COMMANDS)
def test_help_lists_the_commands_and_each_command_has_its_own(package, capsys):
    main, commands = COMMANDS[package]
    assert exit_status(main, ["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m {package} [-h] COMMAND ...") and "commands:" in out
    assert all(f"\n    {command} " in out for command in commands)
    for command in commands:
        assert exit_status(main, [command, "--help"]) == 0
        assert capsys.readouterr().out.startswith(f"usage: python -m {package} {command} [-h]")


@pytest.mark.parametrize("package", COMMANDS)
def test_a_missing_or_unknown_command_is_a_usage_error(package, capsys):
    main, _ = COMMANDS[package]
    assert exit_status(main, []) == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err
    assert exit_status(main, ["nonsense"]) == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("main", "argv", "message"),
    [
        (benchmark_main, ["report", "runs", "--reps", "0"], "argument --reps: must be an integer, at least 1, got '0'"),
        (benchmark_main, ["report", "runs", "--confidence", "1"], f"argument --confidence: {BETWEEN_0_AND_1}"),
        (benchmark_main, ["report", "runs", "--confidence", "x"], f"argument --confidence: {BETWEEN_0_AND_1}"),
        (leaderboard_main, ["compile", "e", "--out", "b", "--reps", "many"], "argument --reps: must be an integer"),
        (leaderboard_main, ["compile", "e", "--out", "b", "--poi-reps", "-1"], "argument --poi-reps: must be an"),
        (leaderboard_main, ["compile", "e"], "the following arguments are required: --out"),
    ],
)
def test_bad_bootstrap_settings_are_usage_errors(main, argv, message, capsys):
    assert exit_status(main, argv) == 2
    err = capsys.readouterr().err
    assert f"python -m {main.__module__.split('.')[0]} {argv[0]}: error: {message}" in err


def test_both_parsers_dispatch_with_set_defaults():
    for parser, argv, module in [
        (benchmark_parser(), ["report", "runs"], "benchmark.report"),
        (benchmark_parser(), ["run", "--suite", "smoke"], "benchmark.harness"),
        (leaderboard_parser(), ["compile", "e", "--out", "b"], "leaderboard.compile"),
        (leaderboard_parser(), ["validate", "e.json"], "leaderboard.entry"),
        (leaderboard_parser(), ["submit", "runs", "--name", "x", "--out", "e.json"], "leaderboard.submit"),
    ]:
        args = parser.parse_args(argv)
        assert args.command == argv[0] and args.func.__module__ == module


@pytest.mark.parametrize("package", COMMANDS)
def test_python_dash_m_runs_the_dispatcher(package):
    completed = subprocess.run([sys.executable, "-m", package], check=False, cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 2 and f"usage: python -m {package} [-h] COMMAND ..." in completed.stderr
