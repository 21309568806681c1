"""The ``evaluate`` module ``bertscore`` (a package, so that installs ship its script)."""
