"""What runs leave behind: the one run-result format, ``result.json`` (:mod:`.run_result`), and the
statistics over seeds that the harness's report and the leaderboard compute from it (:mod:`.stats`)."""

from lm_gym.results.run_result import (
    RESULT_FILE,
    RESULT_SCHEMA,
    SAMPLE_TEXT_CHARS,
    SCHEMA_VERSION,
    ResultFormatError,
    episode_samples,
    evaluation_ranges,
    git_commit,
    library_versions,
    load_result,
    make_result,
    out_of_range,
    result_ranges,
    summarize_episodes,
    task_evaluations,
    validate_result,
    write_result,
)

__all__ = [
    "RESULT_FILE",
    "RESULT_SCHEMA",
    "SAMPLE_TEXT_CHARS",
    "SCHEMA_VERSION",
    "ResultFormatError",
    "episode_samples",
    "evaluation_ranges",
    "git_commit",
    "library_versions",
    "load_result",
    "make_result",
    "out_of_range",
    "result_ranges",
    "summarize_episodes",
    "task_evaluations",
    "validate_result",
    "write_result",
]
