"""The language-model plumbing every baseline needs, written once (CleanRL keeps ``cleanrl_utils``).

The algorithm files beside this package (``ppo.py``, ``nlpo.py``, ``grpo.py``, ``sft.py``,
``ilql.py``, ``ippo.py``) hold only their algorithm: arguments, advantages or targets, loss and
loop. What they share lives here, one module per job:

* :mod:`lm_toolkit.arguments`: the flags every baseline has, and range checks that name the flag.
* :mod:`lm_toolkit.tasks`: env kwargs per split, the task's token lengths, its vector envs
  (read from the task's registered class, never by building an env to look).
* :mod:`lm_toolkit.offline`: offline trajectories (checked, %BC's best fraction, turns as ids).
* :mod:`lm_toolkit.models`: tokenizer and policy loading (causal or seq2seq; hub, checkpoint or
  a small random config).
* :mod:`lm_toolkit.tokens`: prompt encoding with the core's truncation rule, padding, batches.
* :mod:`lm_toolkit.sampling`: the KV-cache sampler (inverse-CDF draws, kept log-probs, a value
  head, a logits hook such as NLPO's mask, shared prompts, seq2seq) and teacher-forced
  log-probs of finished sequences.
* :mod:`lm_toolkit.rollouts`: episodes through the native vector envs, and the evaluation.
* :mod:`lm_toolkit.multiagent_rollouts`: games of the PettingZoo envs (``lm_gym.multiagent``), each
  agent a policy or a scripted speaker, and their evaluation.
* :mod:`lm_toolkit.policy_gradient`: a rollout's turns as tensors, PPO's clipped surrogate.
* :mod:`lm_toolkit.optimization`: optimizer steps, learning-rate annealing and schedules, AdamW,
  offline data order.
* :mod:`lm_toolkit.training_stats`: per-update statistics, averaged over the processes.
* :mod:`lm_toolkit.runs`: seeding, device, W&B, curves, atomic checkpoint/resume, ``result.json``.
* :mod:`lm_toolkit.distributed`: data-parallel runs under ``torchrun`` (shards, gradient averaging,
  losses and statistics over every process).

Scripts run as ``python baselines/<file>.py`` find this package beside them (the script's
folder is first on ``sys.path``).
"""
