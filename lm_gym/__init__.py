"""lm-gym: Gymnasium environments for reinforcement learning with language models.

Importing the package registers every environment::

    import gymnasium
    import lm_gym  # noqa: F401

    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
"""

from lm_gym.core import forking  # noqa: F401  (torch works in forked workers, e.g. AsyncVectorEnv's)
from lm_gym.core.registration import register_task

__version__ = "0.1.0"

register_task("lm_gym/IMDB-v0", "lm_gym.tasks.imdb:IMDBEnv", "lm_gym.envs:imdb", "lm_gym.envs:imdb_vector")
register_task("lm_gym/Wordle-v0", "lm_gym.tasks.wordle:WordleEnv", "lm_gym.envs:wordle", "lm_gym.envs:wordle_vector")
register_task(
    "lm_gym/CommonGen-v0",
    "lm_gym.tasks.commongen:CommonGenEnv",
    "lm_gym.envs:commongen",
    "lm_gym.envs:commongen_vector",
)
register_task(
    "lm_gym/CNNDailyMail-v0",
    "lm_gym.tasks.cnn_dailymail:CNNDailyMailEnv",
    "lm_gym.envs:cnn_dailymail",
    "lm_gym.envs:cnn_dailymail_vector",
)
register_task(
    "lm_gym/DailyDialog-v0",
    "lm_gym.tasks.dailydialog:DailyDialogEnv",
    "lm_gym.envs:dailydialog",
    "lm_gym.envs:dailydialog_vector",
)
register_task(
    "lm_gym/VisDial-v0", "lm_gym.tasks.visdial:VisDialEnv", "lm_gym.envs:visdial", "lm_gym.envs:visdial_vector"
)
register_task("lm_gym/Reddit-v0", "lm_gym.tasks.reddit:RedditEnv", "lm_gym.envs:reddit", "lm_gym.envs:reddit_vector")
register_task(
    "lm_gym/Prompts-v0", "lm_gym.tasks.prompts:PromptsEnv", "lm_gym.envs:prompts", "lm_gym.envs:prompts_vector"
)
