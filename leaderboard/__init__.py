"""The GRUE leaderboard: entries, scoring, and the compiled board (see ``leaderboard/README.md``)."""
