"""``attribution.method=certified`` behind the attribution-method interface (``methods/``): the engine's
path method (references, prefix reuse, sharded budgets) with the ``certified`` estimator
(``attribution/certified.py``, ``estimators.CertifiedAverage``)."""

from __future__ import annotations

from xurs_pipeline.attribution.methods.paper import PathMethod


class CertifiedAverage(PathMethod):
    name = "certified"
