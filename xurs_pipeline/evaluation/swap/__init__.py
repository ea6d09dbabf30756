"""The two-cue swap control (docs/swap-control.md): does an attribution follow the cue the model learned?

- ``roles``: the vocabulary, declared once: models A, B and C (which cue each one's labels followed, seed
  offset, classifier), the runs that explain the probes, when the study has nothing to do.
- ``inputs``: the prepared references, the input-only ranking, each role's accuracy by resolving cue.
- ``behaviour``: what each model depends on, from edits of the probe's text.
- ``readings``: one reading per (method, run, probe), every method through ``attribution/methods/``.
- ``probe_references``: each probe's references of a reference set (an entry's ``references=``, whose
  grammar, checked with the config, is ``attribution/variants.py``'s);
  ``estimator_readings``: the paper's estimator rerun from a set (``paper@references=...``).
- ``measures``: a ranking's swap accuracy and share difference (descriptions).
- ``agreement``: each method's description, read off the faithfulness ledger.
- ``study``: the study from its inputs (the ``swap`` task reads and writes).
- ``yardsticks``: what a model depends on by other edits (a cue's sentence removed, its names unseen, its
  test renamed); ``planted_texts``: hand-set text models, each a family, that validate them.
- ``planted_methods``: hand-set two-cue models on the embeddings (saturation, cancellation, interaction).
- ``faithfulness``: every method and baseline per yardstick, model and cue order, with the tests of
  ``evaluation/significance.py``; ``pooled``: the same over several studies.
"""
