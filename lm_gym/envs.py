"""The Gymnasium entry points of every registered lm-gym task.

``lm_gym.register`` names them ``"lm_gym.envs:make(module/Class)"`` and
``"lm_gym.envs:make_vec(module/Class)"``: Gymnasium imports this module and looks the name up
as an attribute, which this module's ``__getattr__`` turns into
:func:`~lm_gym.core.registration.make_env` or
:func:`~lm_gym.core.registration.make_vector_env` for that class. A spec carries its task's
class in its entry point, so ``env.spec.to_json()`` round trips and the spec's kwargs are only
the arguments given.
"""

from __future__ import annotations

import functools

from lm_gym.core.registration import entry_point_creator


def __getattr__(name: str) -> functools.partial:
    return entry_point_creator(name)
