"""``python -m benchmark run ...`` (the harness), ``python -m benchmark evaluate ...`` (a model's scores) and
``python -m benchmark report RUNS_DIR`` (the tables).

Each command's arguments and behaviour live in its module (``add_arguments`` and ``run``); this
parser routes to them, as ``python -m leaderboard``'s does. Exit status 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lm_gym.cli import Command, command_parser


def build_parser() -> argparse.ArgumentParser:
    """``python -m benchmark``'s parser: a subparser per command, its ``func`` the command's ``run``."""
    from benchmark import harness, report
    from benchmark.evaluation import command as evaluate

    return command_parser(
        "python -m benchmark",
        "The benchmark harness and its report (python -m benchmark COMMAND --help: a command's arguments).",
        [
            Command(
                "run",
                "run a suite's tasks x algorithms x seeds",
                "Run a suite's tasks x algorithms x seeds, on CPUs, GPUs, Ray or Slurm.",
                harness.add_arguments,
                harness.run,
            ),
            Command(
                "evaluate",
                "a model's scores on a task or a suite's tasks: a local model or an OpenAI-compatible server",
                "Evaluate a local model or one behind an OpenAI-compatible server on a task or a suite's tasks, "
                "K samples per episode, pass@k; a result.json per task.",
                evaluate.add_arguments,
                evaluate.run,
            ),
            Command(
                "report",
                "tables of a runs folder's results, mean and 95%% bootstrap CI over seeds",
                "Mean and bootstrap confidence interval over seeds of every result.json under RUNS_DIR.",
                report.add_arguments,
                report.run,
            ),
        ],
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run its command; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    # the command line as given (evaluate records it in each result.json, so that an entry can re-run it)
    args.command_argv = arguments
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
