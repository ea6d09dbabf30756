"""The paper's estimators: Expected Gradients (Eq. 3), Integrated Gradients per reference, adaptive
Gauss-Kronrod quadrature and App. B.4's certified average (the engine, ``attribution/estimators.py``),
each with its completeness residual (Eq. 9) and error bound.

Each integrates a batch of references as one collection (Eq. 3 draws its references, kronrod and certified
spend one budget on them), so ``references_per_call`` is the whole batch. On any function (``attribute``)
through ``engine.py``; on a question of the pipeline (``explain``) through the engine's question loop
(``question.attribute_paths``: the configured references, prefix reuse, block paths, collections averaged,
App. B.2), both with the estimator the method's settings build.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xurs_pipeline.attribution.certified import CertifiedSpec
from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.estimators import (
    AdaptiveKronrod,
    CertifiedAverage,
    Estimator,
    ExpectedGradients,
    IntegratedGradients,
)
from xurs_pipeline.attribution.methods.base import AttributionMethod, Problem, TokenScores
from xurs_pipeline.attribution.methods.engine import path_scores
from xurs_pipeline.attribution.plan import collection_seed
from xurs_pipeline.attribution.quadrature import KronrodSpec
from xurs_pipeline.attribution.question import QuestionInputs, QuestionResult, attribute_paths
from xurs_pipeline.attribution.reduction import reduce_tokens


@dataclass(frozen=True)
class PathSettings:
    """What every estimator reads besides its own keys: ``attribution.samples_per_call``, the reduction over
    hidden (``attribution.reduction`` resolved), ``attribution.path`` and ``attribution.path_block``."""

    samples_per_call: int
    reduction: str
    path: str
    path_block: int


def _path_keys(cfg: AttributionConfig) -> tuple[int, str, str, int]:
    return cfg.samples_per_call, cfg.token_reduction, cfg.path, cfg.path_block


@dataclass(frozen=True)
class EGSettings(PathSettings):
    """``eg``: ``attribution.n_samples`` draws a collection, plans seeded from ``attribution.seed``."""

    n_samples: int
    seed: int

    @classmethod
    def of(cls, cfg: AttributionConfig) -> EGSettings:
        return cls(*_path_keys(cfg), cfg.n_samples, cfg.seed)

    def estimator(self, collection: int) -> Estimator:
        return ExpectedGradients(self.n_samples, collection_seed(self.seed, collection))


@dataclass(frozen=True)
class IGSettings(PathSettings):
    """``ig``: ``attribution.ig_*`` (quadrature rule, points, adaptive refinement), held as the engine's
    estimator, which is its own spec."""

    spec: IntegratedGradients

    @classmethod
    def of(cls, cfg: AttributionConfig) -> IGSettings:
        rule, refinement = (cfg.ig_quadrature, cfg.ig_points), (cfg.ig_tolerance, cfg.ig_refine_factor)
        spec = IntegratedGradients(*rule, cfg.ig_adaptive, *refinement, cfg.ig_max_points)
        return cls(*_path_keys(cfg), spec)

    def estimator(self, collection: int) -> Estimator:
        return self.spec


@dataclass(frozen=True)
class KronrodSettings(PathSettings):
    """``kronrod``: ``attribution.kronrod_*`` (``quadrature.KronrodSpec``, its interval rule included)."""

    spec: KronrodSpec

    @classmethod
    def of(cls, cfg: AttributionConfig) -> KronrodSettings:
        keys = (cfg.kronrod_tolerance, cfg.kronrod_max_evals, cfg.kronrod_intervals, cfg.kronrod_stop)
        return cls(*_path_keys(cfg), KronrodSpec(*keys, cfg.kronrod_lead, cfg.kronrod_rule))

    def estimator(self, collection: int) -> Estimator:
        return AdaptiveKronrod(self.spec)


@dataclass(frozen=True)
class CertifiedSettings(PathSettings):
    """``certified``: ``attribution.certified_*`` (``certified.CertifiedSpec``), plans seeded from
    ``attribution.seed``."""

    spec: CertifiedSpec
    seed: int

    @classmethod
    def of(cls, cfg: AttributionConfig) -> CertifiedSettings:
        keys = (cfg.certified_tolerance, cfg.certified_vector_tolerance, cfg.certified_max_evals)
        spec = CertifiedSpec(*keys, cfg.certified_first_nodes, cfg.certified_warp_points)
        return cls(*_path_keys(cfg), spec, cfg.seed)

    def estimator(self, collection: int) -> Estimator:
        return CertifiedAverage(self.spec, collection_seed(self.seed, collection))


class PathMethod(AttributionMethod):
    """An estimator of the engine: ``Settings`` builds it per collection (``settings.estimator(k)``)."""

    references_per_call = None

    def attribute_batch(self, problem: Problem) -> TokenScores:
        return path_scores(problem, self.settings.estimator(0), self.settings)

    def magnitude(self, coords: torch.Tensor, signed: np.ndarray) -> np.ndarray:
        return reduce_tokens(coords, self.settings.reduction).double().cpu().numpy()

    def explain(self, inputs: QuestionInputs) -> QuestionResult:
        return attribute_paths(inputs, self.settings.estimator)


class ExpectedGradientsMethod(PathMethod):
    name = "eg"
    Settings = EGSettings


class IntegratedGradientsMethod(PathMethod):
    name = "ig"
    Settings = IGSettings


class KronrodMethod(PathMethod):
    name = "kronrod"
    Settings = KronrodSettings


class CertifiedMethod(PathMethod):
    name = "certified"
    Settings = CertifiedSettings
