"""``python -m benchmark run ...`` (the harness) and ``python -m benchmark report RUNS_DIR`` (the tables)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m benchmark {run,report} ...

  run      run a suite's tasks x algorithms x seeds (python -m benchmark run --help)
  report   tables of a runs folder's results, mean and 95% bootstrap CI over seeds (python -m benchmark report --help)
"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "run":
        from benchmark.harness import main as run
    elif command == "report":
        from benchmark.report import main as run
    else:
        print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
