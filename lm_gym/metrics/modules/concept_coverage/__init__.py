"""The ``evaluate`` module ``concept_coverage`` (a package, so that installs ship its script)."""
