"""Copies of the tasks' wordfreq-derived word lists, for a machine without wordfreq
(:mod:`lm_gym.data.wordfreq_lists`): Prompts-v0's prompt words and Wordle's default vocabulary.

    python -m lm_gym.tasks.word_lists export DIR     # where wordfreq is installed
    python -m lm_gym.tasks.word_lists install DIR    # on the other machine: into $LM_GYM_CACHE/word-lists
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# importing the tasks registers their lists
import lm_gym.tasks.prompts.env  # noqa: F401
import lm_gym.tasks.wordle.vocabulary  # noqa: F401
from lm_gym.core.errors import DataUnavailableError
from lm_gym.data import wordfreq_lists


def export(directory: str | Path) -> list[Path]:
    """Every task's list, derived from wordfreq, written to ``directory``."""
    return wordfreq_lists.export(directory)


def install(directory: str | Path) -> list[Path]:
    """The lists exported to ``directory`` copied where lm-gym reads them when wordfreq is absent."""
    return wordfreq_lists.install(directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("export", "install"), help="export: write the lists; install: copy them")
    parser.add_argument("directory", help="the folder of the exported lists")
    args = parser.parse_args(argv)
    try:
        paths = export(args.directory) if args.command == "export" else install(args.directory)
    except DataUnavailableError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
