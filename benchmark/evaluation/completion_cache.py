"""Completions kept on disk, so an evaluation stopped at any point resumes without asking the server again.

One SQLite file (the standard library's ``sqlite3``), ``completions.sqlite`` in the cache folder:
each completion is committed on its own as it arrives, so a run that is killed keeps everything
that was answered before, and several evaluations may share one folder (SQLite's write-ahead log
and lock). A row holds the request it answers (as JSON, for whoever reads the file) and the text.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

CACHE_FILE = "completions.sqlite"
#: SQLite's limit on the parameters of one statement is 999 in older builds.
LOOKUP_CHUNK = 500


class CompletionCache:
    """The completions cached in ``directory`` (made if absent), by request key."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / CACHE_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: every statement commits on its own, at once
            # check_same_thread=False: a client's calls may run in different threads, one at a time
            self.connection = sqlite3.connect(self.path, isolation_level=None, timeout=30.0, check_same_thread=False)
            self.connection.execute("PRAGMA journal_mode=WAL")
            # no fsync per commit: a killed process keeps what it wrote; only a power cut may lose the last rows
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute(
                "CREATE TABLE IF NOT EXISTS completions "
                "(key TEXT PRIMARY KEY, request TEXT NOT NULL, text TEXT NOT NULL, created REAL NOT NULL)"
            )
        except (OSError, sqlite3.Error) as error:
            raise OSError(f"cache_dir: cannot use {self.path} as the completion cache: {error}") from error

    def texts(self, keys: Iterable[str]) -> dict[str, str]:
        """The cached text of each of ``keys`` that has one."""
        keys = list(keys)
        found = {}
        for start in range(0, len(keys), LOOKUP_CHUNK):
            chunk = keys[start : start + LOOKUP_CHUNK]
            placeholders = ",".join("?" * len(chunk))
            query = f"SELECT key, text FROM completions WHERE key IN ({placeholders})"
            found.update(self.connection.execute(query, chunk).fetchall())
        return found

    def put(self, key: str, request_json: str, text: str) -> None:
        self.connection.execute(
            "INSERT OR REPLACE INTO completions (key, request, text, created) VALUES (?, ?, ?, ?)",
            (key, request_json, text, time.time()),
        )

    def __len__(self) -> int:
        return self.connection.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        self.connection.close()
