"""The contract suite's settings: Hypothesis profiles and the cases (every registered id x level x kind).

The default profile keeps the whole suite to about a minute; CI (``CI`` set) runs the
``deep`` profile with ten times the examples. ``HYPOTHESIS_PROFILE`` picks one explicitly.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=25,
    deadline=None,
    database=None,  # leave no .hypothesis/ folder behind
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile("deep", parent=settings.get_profile("default"), max_examples=250)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("deep" if os.environ.get("CI") else "default"))
