"""``python -m leaderboard {submit,validate,compile} ...`` (see ``leaderboard/README.md``)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m leaderboard {submit,validate,compile} ...

  submit    build an entry from run folders (python -m leaderboard submit --help)
  validate  check entries, optionally accept them into the entries folder
  compile   tables, plots and the web page from entries and run folders
"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "submit":
        from leaderboard.submit import main_submit as run
    elif command == "validate":
        from leaderboard.entry import main_validate as run
    elif command == "compile":
        from leaderboard.compile import main as run
    else:
        print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
