"""The Visual Dialogue task: env, worlds (synthetic, text-only, HTTP), scripted questioners, offline data."""

from lm_gym.tasks.visdial.dialogue import Dialogue, HiddenImage
from lm_gym.tasks.visdial.env import VisDialEnv
from lm_gym.tasks.visdial.world import Answerer, HttpWorld, Ranker

__all__ = ["Answerer", "Dialogue", "HiddenImage", "HttpWorld", "Ranker", "VisDialEnv"]
