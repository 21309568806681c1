"""PettingZoo versions of lm-gym's two-party tasks (needs the ``multi-agent`` extra: ``pettingzoo``).

* :mod:`lm_gym.multiagent.visdial_v0`: Visual Dialogue, ``questioner`` and ``answerer``, cooperative.
* :mod:`lm_gym.multiagent.dailydialog_v0`: DailyDialog, ``speaker_0`` and ``speaker_1`` continuing a
  dataset conversation, each utterance scored by the DailyDialog reward.

Each module has PettingZoo's constructors: ``parallel_env()`` (the native ``ParallelEnv``),
``raw_env()`` (PettingZoo's ``parallel_to_aec`` conversion) and ``env()`` (that AEC env with
order enforcement and lm-gym's action checks)::

    from lm_gym.multiagent import visdial_v0

    env = visdial_v0.env()

Turns alternate one utterance per cycle; every agent acts each cycle and only the active
agent's utterance is used (:mod:`lm_gym.multiagent.turns`). Observations and actions are
``Text`` as in the single-agent envs. There is no token level: ``lm_gym.core.TokenLevel`` is a
``gymnasium.Env`` around one ``TextEnv`` whose every step is the agent's, while here an
utterance belongs to one of two agents and the other waits, so a token-level version would be
a new MDP (per-agent token buffers, listener steps counted in tokens, ``max_cycles`` in tokens),
not the generic wrapper applied; write token policies over the text actions instead.
"""

try:
    import pettingzoo  # noqa: F401
except ImportError as error:
    raise ImportError(
        'lm_gym.multiagent needs PettingZoo: pip install "lm-gym[multi-agent]"', name="pettingzoo"
    ) from error
