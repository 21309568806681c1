"""lm-gym: Gymnasium environments for reinforcement learning with language models.

Importing the package registers every environment::

    import gymnasium
    import lm_gym  # noqa: F401

    env = gymnasium.make("lm_gym/IMDB-v0", source="synthetic")
"""

from lm_gym.core import forking  # noqa: F401  (torch works in forked workers, e.g. AsyncVectorEnv's)
from lm_gym.core.chat import ChatBatch, ChatTranscript, chat_prompt
from lm_gym.core.registration import load_task_plugins, register, registered_tasks, task_class

__version__ = "0.1.0"

register("lm_gym/IMDB-v0", "lm_gym.tasks.imdb:IMDBEnv")
register("lm_gym/Wordle-v0", "lm_gym.tasks.wordle:WordleEnv")
register("lm_gym/CommonGen-v0", "lm_gym.tasks.commongen:CommonGenEnv")
register("lm_gym/CNNDailyMail-v0", "lm_gym.tasks.cnn_dailymail:CNNDailyMailEnv")
register("lm_gym/DailyDialog-v0", "lm_gym.tasks.dailydialog:DailyDialogEnv")
register("lm_gym/VisDial-v0", "lm_gym.tasks.visdial:VisDialEnv")
register("lm_gym/Reddit-v0", "lm_gym.tasks.reddit:RedditEnv")
register("lm_gym/Prompts-v0", "lm_gym.tasks.prompts:PromptsEnv")
register("lm_gym/TextGeneration-v0", "lm_gym.tasks.text_generation:TextGenerationEnv")
register("lm_gym/Mixture-v0", "lm_gym.tasks.mixture:MixtureEnv")

load_task_plugins()  # after the built-in tasks: a plugin may build on them

__all__ = ["ChatBatch", "ChatTranscript", "chat_prompt", "register", "registered_tasks", "task_class"]
