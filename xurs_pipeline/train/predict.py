"""Per-question predictions (Sec. 3.1, 5.3): beliefs, conversion and correction statistics, masses,
Bel/Pl/width/BetP per option and the selected answer argmax BetP, all from ``credal``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from accelerate import PartialState
from accelerate.utils import gather_object

from xurs_pipeline.contracts import PREDICTION_COLUMNS  # one split's frame; the stage adds "split"
from xurs_pipeline.credal import belief, correction_stats, credal_width, pignistic, plausibility
from xurs_pipeline.errors import NonFiniteValuesError
from xurs_pipeline.models.classifier import RandomSetClassifier
from xurs_pipeline.models.collate import pad_batch
from xurs_pipeline.models.feature_cache import cached_features
from xurs_pipeline.models.heads import ClassifierOutput


@torch.no_grad()
def classifier_outputs(
    classifier: RandomSetClassifier,
    input_ids: Sequence[Sequence[int]],
    pad_token_id: int,
    batch_size: int = 8,
    feature_cache_dir: str | Path | None = None,
    device: torch.device | str = "cpu",
    rows: slice = slice(None),
) -> ClassifierOutput:
    """Raw outputs (r, 14|15) and masses (r, 15) on CPU of the ``rows`` of ``input_ids`` (all by
    default), in input order.

    With ``feature_cache_dir`` the classifier's features come from the cache (valid when the
    backbone is the frozen one the cache was keyed by: head-only classifiers); the cache holds every
    prompt, so processes that split the rows share one cache file (the main process writes it first).
    """
    classifier.eval().to(device)
    if feature_cache_dir is not None:
        if classifier.meta.get("adaptation", "head_only") != "head_only":
            raise ValueError(
                "feature cache: only valid for head-only classifiers (the backbone must be frozen)"
            )
        with PartialState().main_process_first():
            features, _ = cached_features(
                classifier, input_ids, pad_token_id, feature_cache_dir, batch_size, device
            )
        out = classifier.head(features[rows].to(device))
        return ClassifierOutput(out.raw.cpu(), out.masses.cpu())
    raws, masses = [], []
    mine = list(input_ids)[rows]
    for start in range(0, len(mine), batch_size):
        ids, mask = pad_batch(mine[start : start + batch_size], pad_token_id, classifier.padding_side)
        out = classifier.classify_ids(ids.to(device), mask.to(device))
        raws.append(out.raw.float().cpu())
        masses.append(out.masses.float().cpu())
    if not raws:  # more processes than rows
        return ClassifierOutput(
            torch.zeros(0, 14 if classifier.output_kind == "belief14" else 15), torch.zeros(0, 15)
        )
    return ClassifierOutput(torch.cat(raws), torch.cat(masses))


def prompt_masses(
    classifier: RandomSetClassifier,
    rows: pd.DataFrame,
    pad_token_id: int,
    batch_size: int,
    feature_cache_dir: str | Path | None = None,
) -> torch.Tensor:
    """Masses (n, 15) on CPU of ``classifier``, on the device its weights are on, for prepared prompt
    ``rows`` (their ``input_ids``), in row order; a head-only classifier reads its features from
    ``feature_cache_dir`` when one is given (:func:`classifier_outputs`)."""
    ids = [list(map(int, x)) for x in rows["input_ids"]]
    cache = feature_cache_dir if classifier.meta.get("adaptation") == "head_only" else None
    device = next(classifier.parameters()).device
    return classifier_outputs(classifier, ids, pad_token_id, batch_size, cache, device).masses


def process_rows(n: int, state: PartialState) -> slice:
    """This process's contiguous share of ``n`` rows (the first ``n % processes`` processes one more):
    accelerate's ``split_between_processes`` of the row positions."""
    with state.split_between_processes(list(range(n))) as mine:  # contiguous positions
        return slice(mine[0], mine[-1] + 1) if mine else slice(0, 0)


def gathered_outputs(out: ClassifierOutput, state: PartialState) -> ClassifierOutput:
    """Every process's rows of :func:`process_rows`, concatenated in process order (on every process).
    ``gather_object``, not ``gather_for_metrics``: the shares differ in length by one row where ``n`` does
    not split evenly, and tensors gathered by ``gather`` must have the same shape on every process."""
    parts = gather_object([(out.raw, out.masses)])
    return ClassifierOutput(torch.cat([raw for raw, _ in parts]), torch.cat([m for _, m in parts]))


def check_finite_outputs(output: ClassifierOutput, record_ids: Sequence[str]) -> None:
    """Raise NonFiniteValuesError naming the records whose raw outputs (n, 14|15) or masses (n, 15) hold
    NaN or inf (e.g. float16 overflow in the backbone, NaN weights), so none is written as a number."""
    finite = torch.isfinite(output.raw).all(-1) & torch.isfinite(output.masses).all(-1)  # (n,)
    if bool(finite.all()):
        return
    bad = [record_ids[i] for i in (~finite).nonzero().flatten().tolist()]
    raise NonFiniteValuesError(
        f"non-finite classifier outputs for {len(bad)} of {len(record_ids)} records (e.g. {bad[:10]}); "
        "nothing was written. Usual causes: float16 overflow (set model.dtype=bfloat16 or float32) or NaN "
        "weights."
    )


def _rows(x: torch.Tensor) -> list[np.ndarray]:
    return list(x.double().numpy())


def prediction_frame(
    output: ClassifierOutput,
    output_kind: str,
    labels: Sequence[int],
    record_ids: Sequence[str],
    conversion: str = "positive_part",
) -> pd.DataFrame:
    """The predictions table (one row per record, columns :data:`PREDICTION_COLUMNS`).

    belief14: beliefs b = sigmoid(raw) (14), App. A intermediate values, and the Eq. 5 statistics s, r,
    rescaled, n_negative, total_adjustment. mass15 (softmax, no correction): beliefs and intermediate
    are empty, s = r = NaN, rescaled False, n_negative 0, total_adjustment 0.
    """
    n = len(record_ids)
    if output.masses.shape[0] != n or len(labels) != n:
        raise ValueError(f"prediction_frame: {output.masses.shape[0]} outputs, {len(labels)} labels, {n} ids")
    check_finite_outputs(output, record_ids)
    answer = torch.as_tensor(list(labels), dtype=torch.long)
    frame = pd.DataFrame({"record_id": list(record_ids), "answer_idx": answer.numpy()})
    if output_kind == "belief14":
        masses, columns = _corrected(output, conversion)
    else:
        masses, columns = output.masses.double(), _uncorrected(n)
    betp = pignistic(masses)
    predicted = betp.argmax(dim=-1)
    frame["masses"] = _rows(masses)
    frame["bel"] = _rows(belief(masses))
    frame["pl"] = _rows(plausibility(masses))
    frame["width"] = _rows(credal_width(masses))
    frame["betp"] = _rows(betp)
    frame["predicted"] = predicted.numpy()
    frame["correct"] = (predicted == answer).numpy()
    for key, values in columns.items():
        frame[key] = values
    return frame[list(PREDICTION_COLUMNS)]


def _corrected(output: ClassifierOutput, conversion: str) -> tuple[torch.Tensor, dict[str, Any]]:
    """belief14: the masses (n, 15) of b = sigmoid(raw), recomputed in float64 from the raw outputs, with
    the beliefs, App. A's intermediate values and the Eq. 5 statistics as columns."""
    beliefs = torch.sigmoid(output.raw.double())
    stats = correction_stats(beliefs, conversion=conversion)
    return stats.masses, {
        "beliefs": _rows(beliefs),
        "intermediate": _rows(stats.intermediate),
        "s": stats.s.numpy(),
        "r": stats.r.numpy(),
        "rescaled": stats.rescaled.numpy(),
        "n_negative": stats.n_negative.numpy(),
        "total_adjustment": stats.total_adjustment.numpy(),
    }


def _uncorrected(n: int) -> dict[str, Any]:
    """mass15 (softmax, no correction): empty beliefs and intermediate values, s = r = NaN, nothing
    rescaled."""
    empty = [np.zeros(0)] * n
    return {
        "beliefs": empty,
        "intermediate": empty,
        "s": np.full(n, np.nan),
        "r": np.full(n, np.nan),
        "rescaled": np.zeros(n, bool),
        "n_negative": np.zeros(n, np.int64),
        "total_adjustment": np.zeros(n),
    }
