"""Several tasks in one run: ``lm_gym/Mixture-v0``."""

from lm_gym.tasks.mixture.env import MixtureEnv, MixtureReward, TaskMeta

__all__ = ["MixtureEnv", "MixtureReward", "TaskMeta"]
