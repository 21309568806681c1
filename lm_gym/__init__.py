"""lm-gym: Gymnasium environments for reinforcement learning with language models.

Importing the package registers every environment::

    import gymnasium
    import lm_gym  # noqa: F401

    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
"""

from lm_gym.core.registration import register_task

__version__ = "0.1.0"

register_task("lm_gym/IMDB-v0", "lm_gym.tasks.imdb:IMDBEnv")
register_task("lm_gym/Wordle-v0", "lm_gym.tasks.wordle:WordleEnv")
register_task("lm_gym/CommonGen-v0", "lm_gym.tasks.commongen:CommonGenEnv")
register_task("lm_gym/CNNDailyMail-v0", "lm_gym.tasks.cnn_dailymail:CNNDailyMailEnv")
register_task("lm_gym/DailyDialog-v0", "lm_gym.tasks.dailydialog:DailyDialogEnv")
register_task("lm_gym/VisDial-v0", "lm_gym.tasks.visdial:VisDialEnv")
register_task("lm_gym/Reddit-v0", "lm_gym.tasks.reddit:RedditEnv")
register_task("lm_gym/Prompts-v0", "lm_gym.tasks.prompts:PromptsEnv")
