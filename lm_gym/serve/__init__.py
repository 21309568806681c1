"""Serving lm-gym tasks over OpenEnv's protocol, and playing served tasks as Gymnasium envs.

- ``python -m lm_gym.serve ENV_ID [options]`` (:mod:`lm_gym.serve.app`, :mod:`lm_gym.serve.config`):
  an OpenEnv-compatible server (OpenEnv's own ``create_app``, ``Environment`` and types) whose
  sessions' steps are batched into one reward call (:mod:`lm_gym.serve.batching`). Needs the
  ``serve`` extra (``pip install "lm-gym[serve]"``).
- ``lm_gym/Remote-v0`` (:mod:`lm_gym.serve.client`), registered by ``import lm_gym.serve``:
  ``gymnasium.make("lm_gym/Remote-v0", url=...)`` and its vector form through ``make_vec``.

Importing this package imports neither OpenEnv nor a web library; see docs/serving.md.
"""

import gymnasium

#: The Gymnasium id of a served task.
REMOTE_ID = "lm_gym/Remote-v0"


def register_remote() -> None:
    """Register ``lm_gym/Remote-v0`` (``import lm_gym.serve`` does) unless it is registered."""
    if REMOTE_ID not in gymnasium.registry:
        gymnasium.register(
            id=REMOTE_ID,
            entry_point="lm_gym.serve.client:RemoteEnv",
            vector_entry_point="lm_gym.serve.client:RemoteVectorEnv",
        )


register_remote()

__all__ = ["REMOTE_ID", "register_remote"]
