"""Where the tasks' data comes from, shared by every task: the three sources a dataset task
chooses between (:mod:`~lm_gym.data.sources`: ``hub``, ``local``, ``synthetic``) and the word lists
derived from wordfreq, with copies for machines without it (:mod:`~lm_gym.data.wordfreq_lists`).

It stands above :mod:`lm_gym.core` (its checks raise the contract's errors) and below the tasks.
The tokenizers, the hub check and the cache of what lm-gym builds offline stay in ``lm_gym.core``:
``gymnasium.make(..., action_level="token")`` loads or trains the task's tokenizer with them.
"""
