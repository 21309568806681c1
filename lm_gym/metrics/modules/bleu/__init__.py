"""The ``evaluate`` module ``bleu`` (a package, so that installs ship its script)."""
