"""lm-gym's tasks for other libraries' trainers, each behind its extra (docs/integrations.md):

- :mod:`lm_gym.integrations.trl`: TRL's ``GRPOTrainer`` and ``RLOOTrainer`` (prompts, rewards, ``rollout_func``);
- :mod:`lm_gym.integrations.trl_environment`: TRL's ``environment_factory`` (the task's action as a tool);
- :mod:`lm_gym.integrations.verifiers`: verifiers 0.4's ``Taskset`` and ``Env``, and environment packages;
- :mod:`lm_gym.integrations.skyrl`: SkyRL-Gym's ``BaseTextEnv``;
- :mod:`lm_gym.integrations.gem`: GEM's ``Env``, registry and vector envs;
- :mod:`lm_gym.integrations.verl`: verl's agent loop, ``compute_score`` and parquet prompts;
- :mod:`lm_gym.integrations.sb3`: stable-baselines3's ``VecEnv``.

:mod:`lm_gym.integrations.chat_session` is the one chat-driven episode the SkyRL, GEM, verl and
verifiers adapters share.
"""
