"""The ``evaluate`` module ``meteor`` (a package, so that installs ship its script)."""
