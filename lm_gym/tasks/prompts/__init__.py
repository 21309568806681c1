"""Bring your own prompts and reward function."""

from lm_gym.tasks.prompts.env import (
    PromptsEnv,
    synthetic_prompts,
    vowel_words,
    word_list,
)

__all__ = ["PromptsEnv", "synthetic_prompts", "vowel_words", "word_list"]
