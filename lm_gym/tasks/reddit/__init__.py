"""ILQL's Reddit comments task: reply without toxicity, or so that the reply is upvoted."""

from lm_gym.tasks.reddit.data import load_comments
from lm_gym.tasks.reddit.env import RedditEnv
from lm_gym.tasks.reddit.offline_data import comment_trajectories

__all__ = ["RedditEnv", "comment_trajectories", "load_comments"]
