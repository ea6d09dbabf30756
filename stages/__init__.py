"""The command of every DVC stage: ``python -m stages <name>`` (``stages/__main__.py``)."""
