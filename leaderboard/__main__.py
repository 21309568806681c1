"""``python -m leaderboard {submit,validate,verify,compile} ...`` (see ``leaderboard/README.md``).

Each command's arguments and behaviour live in its module (``add_*arguments`` and ``run*``);
this parser routes to them, as ``python -m benchmark``'s does. Exit status 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lm_gym.cli import Command, command_parser


def build_parser() -> argparse.ArgumentParser:
    """``python -m leaderboard``'s parser: a subparser per command, its ``func`` the command's runner."""
    from leaderboard import compile as board_compile
    from leaderboard import entry, submit, verify

    return command_parser(
        "python -m leaderboard",
        "The lm-gym leaderboard: entries and the board (python -m leaderboard COMMAND --help: a command's arguments).",
        [
            Command(
                "submit",
                "build an entry from run folders",
                "Build a leaderboard entry (JSON) from the result.json files of run folders.",
                submit.add_submit_arguments,
                submit.run_submit,
            ),
            Command(
                "validate",
                "check entries, optionally accept them into the entries folder",
                "Check leaderboard entry files; print 'path: valid' or 'path: reason' for each.",
                entry.add_validate_arguments,
                entry.run_validate,
            ),
            Command(
                "verify",
                "re-run an entry's recipe and compare",
                "Re-run the jobs of an entry's recipe with the harness and compare their final evaluations.",
                verify.add_arguments,
                verify.run,
            ),
            Command(
                "compile",
                "tables, plots and the web page from entries and run folders",
                "The board (board.json, board.md, plots/, index.html) from entries and run folders.",
                board_compile.add_arguments,
                board_compile.run,
            ),
        ],
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line) and run its command; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
