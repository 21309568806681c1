"""The ``evaluate`` module ``cider`` (a package, so that installs ship its script)."""
