"""Typed errors raised by lm-gym environments.

Every error derives from :class:`LMGymError` and from the built-in exception that fits it,
so ``except ValueError`` in user code keeps working.
"""


class LMGymError(Exception):
    """Base class of every lm-gym error."""


class InvalidActionError(LMGymError, ValueError):
    """An action that is not in the environment's action space (wrong type, range or length)."""


class ResetNeededError(LMGymError, RuntimeError):
    """``step`` was called before ``reset`` or after the episode ended."""


class ConfigurationError(LMGymError, ValueError):
    """An environment or wrapper argument has a value that cannot be used."""


class DataUnavailableError(LMGymError, RuntimeError):
    """A dataset, tokenizer or model could not be loaded from the chosen source."""


class TrajectoryFormatError(ConfigurationError):
    """Offline trajectories that do not follow the format of :mod:`lm_gym.offline`."""
