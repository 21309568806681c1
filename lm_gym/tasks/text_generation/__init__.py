"""Your data, no code: a single-turn text-generation task over any dataset ``datasets`` reads."""

from lm_gym.tasks.text_generation.env import TextGenerationEnv
from lm_gym.tasks.text_generation.rewards import METRICS, FunctionReward, MetricReward

__all__ = ["METRICS", "FunctionReward", "MetricReward", "TextGenerationEnv"]
