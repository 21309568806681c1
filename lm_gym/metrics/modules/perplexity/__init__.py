"""The ``evaluate`` module ``perplexity`` (a package, so that installs ship its script)."""
