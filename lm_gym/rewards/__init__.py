"""Batched reward functions: ``reward(prompts, utterances, references, meta) -> np.ndarray``."""

from lm_gym.rewards.intent import IntentMeteorReward, NgramActClassifier, TransformersActClassifier
from lm_gym.rewards.reference import REFERENCE_METRICS, ReferenceReward
from lm_gym.rewards.sentiment import ClassifierSentimentReward, NgramSentimentReward

__all__ = [
    "REFERENCE_METRICS",
    "ClassifierSentimentReward",
    "IntentMeteorReward",
    "NgramActClassifier",
    "NgramSentimentReward",
    "ReferenceReward",
    "TransformersActClassifier",
]
