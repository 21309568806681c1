"""Copies of the wordfreq-derived word lists stand in for wordfreq where it is absent, unchanged."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lm_gym.core.errors import DataUnavailableError
from lm_gym.data import wordfreq_lists
from lm_gym.tasks import word_lists as task_word_lists
from lm_gym.tasks.prompts.env import word_list
from lm_gym.tasks.wordle.vocabulary import default_vocabulary

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_WORDFREQ = r"""
import json, sys
sys.modules["wordfreq"] = None  # as if not installed
from lm_gym.tasks.prompts.env import word_list
from lm_gym.tasks.wordle.vocabulary import default_vocabulary
vocabulary = default_vocabulary()
print(json.dumps([word_list(), vocabulary.answers, vocabulary.guesses]))
"""


def without_wordfreq(cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_WORDFREQ], check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "LM_GYM_CACHE": str(cache)},
    )  # fmt: skip


def test_exported_copies_give_the_same_lists_without_wordfreq(tmp_path, monkeypatch):
    exported = task_word_lists.export(tmp_path / "lists")
    assert sorted(path.name for path in exported) == [
        "prompts-words.json",
        "wordle-answers.json",
        "wordle-guesses.json",
    ]
    assert all(json.loads(path.read_text())["wordfreq"] for path in exported)

    missing = without_wordfreq(tmp_path / "empty-cache")
    assert missing.returncode != 0
    assert "is derived from the wordfreq package, which is not installed, and no copy" in missing.stderr
    assert "python -m lm_gym.tasks.word_lists install DIR" in missing.stderr

    monkeypatch.setenv("LM_GYM_CACHE", str(tmp_path / "cache"))
    assert task_word_lists.main(["install", str(tmp_path / "lists")]) == 0
    result = without_wordfreq(tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    vocabulary = default_vocabulary()
    assert json.loads(result.stdout) == [list(word_list()), list(vocabulary.answers), list(vocabulary.guesses)]
    assert len(word_list()) == 3997 and len(vocabulary.answers) == 2315 and len(vocabulary.guesses) == 12972


def test_a_bad_copy_or_folder_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("LM_GYM_CACHE", str(tmp_path))
    copies = wordfreq_lists.copies_dir()
    copies.mkdir(parents=True)
    (copies / "prompts-words.json").write_text('{"words": []}')
    with pytest.raises(DataUnavailableError, match=r"prompts-words.json holds no list of words"):
        wordfreq_lists.read_copy("prompts-words")
    (copies / "prompts-words.json").write_text("not json")
    with pytest.raises(DataUnavailableError, match=r"prompts-words.json is not valid JSON"):
        wordfreq_lists.read_copy("prompts-words")
    with pytest.raises(DataUnavailableError, match=r"no exported word list at .*prompts-words.json"):
        task_word_lists.install(tmp_path / "nowhere")
    assert task_word_lists.main(["install", str(tmp_path / "nowhere")]) == 1
