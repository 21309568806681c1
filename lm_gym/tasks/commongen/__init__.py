"""The CommonGen generative-commonsense task."""

from lm_gym.tasks.commongen.env import CommonGenEnv

__all__ = ["CommonGenEnv"]
