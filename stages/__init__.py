"""One thin Hydra entry point per DVC stage: ``python -m stages.<name>`` (see ``stages/_common.py``)."""
