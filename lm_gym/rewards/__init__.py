"""Batched reward functions: ``reward(prompts, utterances, references, meta) -> np.ndarray``."""

from lm_gym.rewards.sentiment import ClassifierSentimentReward, NgramSentimentReward

__all__ = ["ClassifierSentimentReward", "NgramSentimentReward"]
