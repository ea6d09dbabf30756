"""The swap study's analysis plan, fixed before the held-out seeds run (docs/swap-plan.md states it in words;
``tests/evaluation/test_eval_swap_plan.py`` reads these constants against that page and its digest).

- What judges: behaviour. ``JUDGE`` (the in-distribution text edits) judges every method; another edit
  yardstick judges beside it only where it is validated. A yardstick that is not validated gives no verdict;
  nothing falls back to the labels.
- Baselines never judge and are never judged: ``LABEL_RANKERS`` (the training rule, the constant cue 1) and
  ``NULLS`` (input-only, random) are scored like any method, for comparison.
- The models (``MODELS``): A's labels follow cue 1, B's cue 2, C's both (it is trained on the texts where
  they agree, so which cue it reads is its own choice and the label-only rankers fail on it both ways).
- The unit of independence is the data seed (``CLUSTER``): the models share texts, probes and frozen blocks,
  so an agreement's interval counts a seed's probes as one cluster (Kish's design effect) and a paired test
  takes the seeds as strata (``PAIRED_TEST``: the stratified exact McNemar test; Durkalski's clustered
  statistic and the seeds where each method is ahead are reported beside it); within one seed, a probe (its
  readings under both models) is the cluster.
- A cue is scored in one unit for methods and yardsticks (``CUE_SCORE``): the method's summed attribution
  magnitude over the cue's tokens against the width change of editing the whole cue.
- Planned comparisons, one Holm family over all of them and over the judging yardsticks, at ``ALPHA``:
  each judged method against each label ranker (one-sided: the method agrees with behaviour more often, on
  the same clear probes); each judged method against the paper's estimator, and the paper's estimator
  against zero-masking token by token (two-sided).
- Known ranking: an edit yardstick judges only where, for every judged method it credits (its pooled clear
  cell meets the marks), each degraded copy of the method's readings (``DEGRADATIONS``,
  ``evaluation/degraded.py``; the half swapped by ``HALF_SWAP_SEED``) agrees on its clear probes less often,
  by the one-sided paired test at ``ALPHA``. Where it credits no method the check is vacuous.
- Pass: agreement >= ``AGREEMENT_PASS`` with the clustered lower bound >= ``AGREEMENT_PASS_LOWER`` on the
  clear probes of every (model, cue order) cell of every judging yardstick, and both label-ranker
  comparisons significant after Holm. Before any verdict: at least ``MIN_STUDIES`` seeds, each model whose
  labels name a cue right on at least ``MODELS_LEARNED`` of the questions that cue resolves, at least
  ``MIN_CLEAR`` clear (model, probe) pairs and ``MIN_DEPARTURES`` where behaviour departs from the training
  rule, at least ``MIN_EACH_WAY`` towards each cue.
"""

from __future__ import annotations

import hashlib
import json

from xurs_pipeline.evaluation.swap.roles import TRAINING_CUE

JUDGE = "text_edits"
LABEL_RANKERS = ("training_rule", "constant")
NULLS = ("input_only", "random")
BASELINES = (*LABEL_RANKERS, *NULLS)
PAPER, ZERO_MASKING = "paper", "occlusion_token"
CLUSTER = "study"
PAIRED_TEST = "stratified exact McNemar"
CUE_SCORE = "total"
ALPHA = 0.05
AGREEMENT_PASS, AGREEMENT_PASS_LOWER = 0.9, 0.8
MODELS_LEARNED = 0.9
MIN_STUDIES, MIN_CLEAR, MIN_DEPARTURES, MIN_EACH_WAY = 5, 250, 60, 20
FIRST_HELD_OUT_SEED = 100
DEGRADATIONS = ("swapped", "half_swapped")
HALF_SWAP_SEED = 0
# each model and the cue its labels followed (0: both): A:1, B:2, C:0
MODELS = tuple(f"{name}:{cue}" for name, cue in TRAINING_CUE.items())

PLAN = {
    "judge": JUDGE,
    "label_rankers": LABEL_RANKERS,
    "nulls": NULLS,
    "paper": PAPER,
    "zero_masking": ZERO_MASKING,
    "cluster": CLUSTER,
    "paired_test": PAIRED_TEST,
    "cue_score": CUE_SCORE,
    "alpha": ALPHA,
    "agreement_pass": AGREEMENT_PASS,
    "agreement_pass_lower": AGREEMENT_PASS_LOWER,
    "models_learned": MODELS_LEARNED,
    "min_studies": MIN_STUDIES,
    "min_clear": MIN_CLEAR,
    "min_departures": MIN_DEPARTURES,
    "min_each_way": MIN_EACH_WAY,
    "first_held_out_seed": FIRST_HELD_OUT_SEED,
    "models": MODELS,
    "degradations": DEGRADATIONS,
    "half_swap_seed": HALF_SWAP_SEED,
}


def plan_digest() -> str:
    """The plan's SHA-256 over its constants (``PLAN``, sorted JSON): every study's summary names it, and
    the pooled verdict refuses studies run under another plan."""
    return "plan-" + hashlib.sha256(json.dumps(PLAN, sort_keys=True).encode()).hexdigest()[:16]
