"""The ``evaluate`` module ``sacrebleu`` (a package, so that installs ship its script)."""
