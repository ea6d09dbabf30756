"""Reading DVC experiments, for every command that compares them (``xurs gates-sweep``, ``xurs swap-sweep``).

- :mod:`.show`: ``dvc exp show --json`` (run, or a saved copy) -> one :class:`~.show.Experiment` per
  experiment and baseline commit: its name, revision, params and DVC's executor state (queued, running or
  interrupted, failed: named, never tabulated).
- :mod:`.lock`: which stages an experiment ran under its own params, from its ``dvc.lock`` (an experiment
  that stopped early keeps its baseline's entries for the later stages).
- :mod:`.files`: one output file of an experiment through DVC at its revision, refused when the stage that
  writes it did not run in that experiment.
- :mod:`.pooling`: the sources a pooled table may sum: no duplicates, no differing settings but the keys
  the user compares, counts that can be counts.
"""
