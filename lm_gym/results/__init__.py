"""What runs leave behind: the one run-result format, ``result.json`` (:mod:`.run_result`), the evaluations
it holds (:mod:`.evaluation`), and the statistics over seeds that the harness's report and the leaderboard
compute from it (:mod:`.stats`).

The package's face hands on the format's names only: :mod:`.evaluation` computes corpus metrics
(``lm_gym.metrics``, seconds to import), so it is imported by name where it is used."""

from lm_gym.results.run_result import (
    RESULT_FILE,
    RESULT_SCHEMA,
    SAMPLE_TEXT_CHARS,
    SCHEMA_VERSION,
    ResultFormatError,
    evaluation_ranges,
    git_commit,
    library_versions,
    load_result,
    make_result,
    out_of_range,
    result_ranges,
    validate_result,
    write_result,
)

__all__ = [
    "RESULT_FILE",
    "RESULT_SCHEMA",
    "SAMPLE_TEXT_CHARS",
    "SCHEMA_VERSION",
    "ResultFormatError",
    "evaluation_ranges",
    "git_commit",
    "library_versions",
    "load_result",
    "make_result",
    "out_of_range",
    "result_ranges",
    "validate_result",
    "write_result",
]
