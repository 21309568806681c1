"""``python -m benchmark evaluate``: any model, a local one or one behind an OpenAI-compatible server, on any task."""
