"""The body of every DVC stage, as library code: one module per stage, each with ``run(cfg) -> headline``.

``stages/<name>.py`` is only the command DVC runs (``python -m stages.<name>``): it hands its task to
:func:`xurs_pipeline.tasks.runner.run_stage`, which owns loading and validating ``params.yaml``, the
declared-input check, turning an :class:`~xurs_pipeline.errors.XursError` into one line and exit status 2,
and writing the stage's headline metrics. :func:`xurs_pipeline.tasks.pipeline.run_pipeline` runs the tasks
in one process (tests, notebooks) with the same outputs as ``dvc repro``.

This package imports nothing on purpose: a stage's code deps (dvc.yaml) are its own task's imports only.
"""
