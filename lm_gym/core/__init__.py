"""The environment contract: text env base, token-level wrapper, vector env, spaces, errors."""

from lm_gym.core.errors import (
    ConfigurationError,
    DataUnavailableError,
    InvalidActionError,
    LMGymError,
    ResetNeededError,
)
from lm_gym.core.text_env import (
    BatchedReward,
    RewardQuery,
    Sample,
    SingleTurnTextEnv,
    TextEnv,
    score_by_reward_fn,
    score_queries,
)
from lm_gym.core.token_level import TokenLevel, TokenSettings, TokenStates
from lm_gym.core.token_vector import TokenVectorEnv
from lm_gym.core.vector import TextVectorEnv

__all__ = [
    "BatchedReward",
    "ConfigurationError",
    "DataUnavailableError",
    "InvalidActionError",
    "LMGymError",
    "ResetNeededError",
    "RewardQuery",
    "Sample",
    "SingleTurnTextEnv",
    "TextEnv",
    "TextVectorEnv",
    "TokenLevel",
    "TokenSettings",
    "TokenStates",
    "TokenVectorEnv",
    "score_by_reward_fn",
    "score_queries",
]
