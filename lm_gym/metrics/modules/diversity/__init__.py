"""The ``evaluate`` module ``diversity`` (a package, so that installs ship its script)."""
