"""lm-gym's tasks for other libraries' trainers: :mod:`lm_gym.integrations.trl` (TRL's GRPO and RLOO trainers)."""
