"""The Visual Dialogue reward of the ILQL code base ("standard": ``env_stops`` with a percentile cutoff).

Every turn costs -1 until the target image's retrieval percentile has closed ``cutoff`` of the
gap between the caption-only percentile ``p0`` and ``goal_value``:
``(p_t - p0) / (goal_value - p0) >= cutoff``. The turn that gets there is rewarded 0 and ends
the game. A turn whose *answer* passes the yes/no test of ``yn_reward_kind`` adds
``yn_reward``; the sum is then scaled and shifted:
``reward = (base + yn) * reward_scale + reward_shift``.
"""

from __future__ import annotations

#: The yes/no tests of the ILQL code base (``yn_reward_fs``), applied to the lower-cased answer.
YES_NO_KINDS = ("none", "soft", "hard", "conservative")
#: ``conservative``: any of these substrings (ILQL's list, curly apostrophes included).
CONSERVATIVE_MARKERS = (
    "not",
    "don't",
    "can't",
    "don\u2019t",
    "can\u2019t",
    "cannot",
    "fairly",
    "could",
    "think so",
    "okay",
    "maybe",
    "yes",
    "no",
    "looks",
    "appears",
    "tell",
    "mostly just",
)
#: Slack of the cutoff comparison, so that a gain of exactly ``cutoff`` is not lost to rounding.
CUTOFF_TOLERANCE = 1e-9


def is_yes_no(answer: str, kind: str) -> bool:
    """Whether ``answer`` passes the yes/no test ``kind`` (see :data:`YES_NO_KINDS`).

    ``hard``: the answer is exactly "yes" or "no". ``soft``: it contains "yes" or "no" as a
    substring, so "not", "know" and "snow" count too (as in ILQL). ``conservative``: it
    contains any of :data:`CONSERVATIVE_MARKERS`. ``none``: never.
    """
    text = answer.lower()
    if kind == "hard":
        return text in ("yes", "no")
    if kind == "soft":
        return "yes" in text or "no" in text
    if kind == "conservative":
        return any(marker in text for marker in CONSERVATIVE_MARKERS)
    if kind == "none":
        return False
    raise ValueError(f"yes/no test kind must be one of {YES_NO_KINDS}, got {kind!r}")


def percentile_gain(initial: float, current: float, goal_value: float) -> float:
    """``(current - initial) / (goal_value - initial)``: the share of the gap to the goal closed.

    When ``initial`` is already at or above the goal there is no gap: the gain is 1.0.
    """
    if initial >= goal_value:
        return 1.0
    return (current - initial) / (goal_value - initial)


def cutoff_reached(initial: float, current: float, cutoff: float, goal_value: float) -> bool:
    """ILQL's ``PercentileCutoffRule``: the gain has reached ``cutoff`` (to 1e-9).

    ``initial >= goal_value`` (the caption alone already ranks the target at the goal; ILQL
    would divide by zero) counts as reached, so such a game ends after its first turn.
    """
    return percentile_gain(initial, current, goal_value) >= cutoff - CUTOFF_TOLERANCE


def turn_reward(
    reached: bool, yes_no: bool, yn_reward: float, reward_scale: float = 1.0, reward_shift: float = 0.0
) -> float:
    """``((0 if reached else -1) + (yn_reward if yes_no else 0)) * reward_scale + reward_shift``."""
    return ((0.0 if reached else -1.0) + (yn_reward if yes_no else 0.0)) * reward_scale + reward_shift
