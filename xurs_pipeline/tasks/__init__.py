"""The body of every DVC stage: one module per stage, each with ``run(cfg) -> headline``, which unpacks
the config into the typed specs the library takes.

Stage ``<name>`` of ``xurs_pipeline/contracts.py`` is ``xurs_pipeline/tasks/<name>.py``; ``dvc.yaml`` runs
it as ``python -m stages <name>`` through :func:`xurs_pipeline.tasks.runner.main`, which owns loading and
validating ``params.yaml``, the declared-input check, turning an :class:`~xurs_pipeline.errors.XursError`
into one line and exit status 2, and writing the stage's headline metrics.
:func:`xurs_pipeline.tasks.pipeline.run_pipeline` runs the tasks in one process (tests, notebooks) with the
same outputs as ``dvc repro``. A task imports no other task (``runner`` and ``pipeline`` are no tasks).

This package imports nothing on purpose: a stage's code deps (dvc.yaml) are its own task's imports only.
"""
