"""lm-gym's tasks for other libraries' trainers: :mod:`lm_gym.integrations.trl` (TRL's GRPO and RLOO
trainers) and :mod:`lm_gym.integrations.sb3` (stable-baselines3's ``VecEnv``)."""
