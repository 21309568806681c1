"""``python -m benchmark run ...`` (the harness) and ``python -m benchmark report RUNS_DIR`` (the tables).

Each command's arguments and behaviour live in its module (``add_arguments`` and ``run``); this
parser routes to them, as ``python -m leaderboard``'s does. Exit status 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """``python -m benchmark``'s parser: a subparser per command, its ``func`` the command's ``run``."""
    from benchmark import harness, report

    parser = argparse.ArgumentParser(
        prog="python -m benchmark",
        description="The benchmark harness and its report (python -m benchmark COMMAND --help: a command's arguments).",
    )
    commands = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run a suite's tasks x algorithms x seeds",
        description="Run a suite's tasks x algorithms x seeds, on CPUs, GPUs, Ray or Slurm.",
    )
    harness.add_arguments(run)
    run.set_defaults(func=harness.run)

    tables = commands.add_parser(
        "report",
        help="tables of a runs folder's results, mean and 95%% bootstrap CI over seeds",
        description="Mean and bootstrap confidence interval over seeds of every result.json under RUNS_DIR.",
    )
    report.add_arguments(tables)
    tables.set_defaults(func=report.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run its command; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
