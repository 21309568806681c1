"""The one subcommand style of lm-gym's command lines (``python -m benchmark``, ``python -m leaderboard``):
an argparse parser with a subparser per command, each bound to the function that runs it."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, its one-line help and description, the function adding its arguments to its
    subparser, and the function running it (``run(args) -> exit status``)."""

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def command_parser(prog: str, description: str, commands: Sequence[Command]) -> argparse.ArgumentParser:
    """The parser of ``prog``: a required COMMAND, each command's arguments, its runner as ``args.func``.
    A usage error exits with status 2 (argparse's)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    subparsers = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for command in commands:
        subparser = subparsers.add_parser(command.name, help=command.help, description=command.description)
        command.add_arguments(subparser)
        subparser.set_defaults(func=command.run)
    return parser
