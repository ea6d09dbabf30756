"""What the stages that train or attribute from saved artifacts run, built from the config (above the
library packages, which never see the whole config):

- ``training``: a :class:`~xurs_pipeline.runs.training.TrainingRun` (``train``, ``train_head``,
  ``train_swap``), built by ``training_run(cfg)`` and run by ``fit_into``;
- ``attribution``: an :class:`~xurs_pipeline.runs.attribution.AttributionRun` (``attribute`` and the stages
  that rerun it with a variation), built by ``attribution_run(cfg)`` and run by ``attribute_into`` /
  ``attribute_variants``.
"""
