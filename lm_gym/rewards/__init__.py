"""Batched reward functions: ``reward(prompts, utterances, references, meta) -> np.ndarray``."""

from lm_gym.rewards.intent import IntentMeteorReward, NgramActClassifier, TransformersActClassifier
from lm_gym.rewards.reference import REFERENCE_METRICS, ReferenceReward
from lm_gym.rewards.sentiment import ClassifierSentimentReward, NgramSentimentReward
from lm_gym.rewards.toxicity import ClassifierToxicityScorer, LexiconToxicityScorer, ToxicityReward
from lm_gym.rewards.upvotes import UpvotesModelReward, UpvotesRealReward

__all__ = [
    "REFERENCE_METRICS",
    "ClassifierSentimentReward",
    "ClassifierToxicityScorer",
    "IntentMeteorReward",
    "LexiconToxicityScorer",
    "NgramActClassifier",
    "NgramSentimentReward",
    "ReferenceReward",
    "ToxicityReward",
    "TransformersActClassifier",
    "UpvotesModelReward",
    "UpvotesRealReward",
]
