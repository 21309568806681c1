"""The Wordle task: env, fast feedback engine, vocabularies, scripted policies, offline data."""

from lm_gym.tasks.wordle.env import WordleEnv
from lm_gym.tasks.wordle.vocabulary import WordleVocabulary, default_vocabulary

__all__ = ["WordleEnv", "WordleVocabulary", "default_vocabulary"]
