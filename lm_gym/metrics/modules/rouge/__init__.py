"""The ``evaluate`` module ``rouge`` (a package, so that installs ship its script)."""
