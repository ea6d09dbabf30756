"""Zero-masking of the clue against equal-length control windows (the controlled study, App. C with Eq. 8).

Where the data marks the clue (``clue_positions``, synthetic questions with a result), zero the embeddings
of all its tokens at once (``R_clue X``, Eq. 8's operator on a set) and of every contiguous control window
of the same length that holds no clue token, inside the case text (``case_positions``: the region App. C's
localisation also uses). ``D_clue = |F(R_clue X) - F(X)|``, ``D_window`` likewise, and the clue's advantage
``A_clue = D_clue - mean_w D_window``; across questions, the mean with a question-level bootstrap
interval (as Table 1). A model that uses the clue loses more when the clue is masked than when any other
equal-length stretch of the case is: the interval lies above zero. Nothing here needs the attribution.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.attribution.masked import MassFn, masked_masses
from xurs_pipeline.attribution.targets import get_target
from xurs_pipeline.evaluation.bootstrap import mean_advantage_interval
from xurs_pipeline.evaluation.localisation import control_windows
from xurs_pipeline.evaluation.masking import MaskingQuestion

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClueMaskingEffect:
    record_id: str
    c: int
    f_x: float
    clue_positions: tuple[int, ...]
    d_clue: float
    d_windows: np.ndarray  # (n_windows,)

    @property
    def advantage(self) -> float:
        """A_clue = D_clue - mean_w D_window."""
        return self.d_clue - float(self.d_windows.mean())


def clue_masking_effect(
    mass_fn: MassFn,
    question: MaskingQuestion,
    clue: Sequence[int],
    region: Sequence[int],
    target: str = "width",
    batch_size: int = 16,
) -> ClueMaskingEffect:
    """D of the whole clue and of every equal-length clue-free window of ``region`` (token positions)."""
    clue = sorted(int(i) for i in clue)
    windows = control_windows(sorted(int(i) for i in region), clue)
    if not windows:
        raise ValueError(
            f"record {question.record_id!r}: no {len(clue)}-token window of the case text avoids the clue; "
            "its clue cannot be compared with a control window"
        )
    masses = masked_masses(mass_fn, question, [[], clue, *[list(w) for w in windows]], batch_size)
    c = torch.full((masses.shape[0],), question.c, dtype=torch.long, device=masses.device)
    values = get_target(target)(masses, c).double().cpu().numpy()  # (2 + n_windows,)
    deltas = np.abs(values[1:] - values[0])
    return ClueMaskingEffect(
        question.record_id, question.c, float(values[0]), tuple(clue), float(deltas[0]), deltas[1:]
    )


def clue_masking_frame(effects: Sequence[ClueMaskingEffect]) -> pd.DataFrame:
    """One row per question: D_clue, the mean and max D over control windows, A_clue, the window count."""
    return pd.DataFrame(
        [
            {
                "record_id": e.record_id,
                "target": e.c,
                "f_x": e.f_x,
                "clue_positions": list(e.clue_positions),
                "d_clue": e.d_clue,
                "d_window_mean": float(e.d_windows.mean()),
                "d_window_max": float(e.d_windows.max()),
                "advantage": e.advantage,
                "n_windows": int(e.d_windows.size),
            }
            for e in effects
        ],
        columns=[
            "record_id",
            "target",
            "f_x",
            "clue_positions",
            "d_clue",
            "d_window_mean",
            "d_window_max",
            "advantage",
            "n_windows",
        ],
    )


def clue_masking_run(
    mass_fn: MassFn,
    embed,
    prompts: pd.DataFrame,
    rows: pd.DataFrame,
    batch_size: int,
    device: torch.device,
) -> list[ClueMaskingEffect]:
    """:func:`clue_masking_effect` for every explained (record_id, target) of ``rows`` whose prompt has a
    clue (synthetic questions with a result); other rows, and questions whose case text has no clue-free
    window as long as the clue (logged), are skipped. ``embed(ids (1, L)) -> (1, L, d)``."""
    if "clue_positions" not in prompts.columns or "case_positions" not in prompts.columns:
        return []
    by_id = prompts.set_index("record_id", drop=False)
    effects = []
    for record_id, c in rows[["record_id", "target"]].drop_duplicates().itertuples(index=False):
        prompt = by_id.loc[record_id]
        clue = [int(i) for i in prompt["clue_positions"]]
        if not clue:
            continue
        question = _masking_question(prompt, int(c), embed, device)
        region = [int(i) for i in prompt["case_positions"]]
        if not control_windows(region, clue):
            why = "clue masking: record %r has no %d-token clue-free window in its case text; skipped"
            log.warning(why, record_id, len(clue))
            continue
        effects.append(clue_masking_effect(mass_fn, question, clue, region, "width", batch_size))
    return effects


def _masking_question(prompt: pd.Series, c: int, embed, device: torch.device) -> MaskingQuestion:
    """The prompt as zero-masking takes it: its embeddings (L, d) from ``embed``, all positions attended,
    explaining option ``c``."""
    ids = torch.tensor(np.asarray(prompt["input_ids"], dtype=np.int64), device=device)
    with torch.inference_mode():
        embeds = embed(ids[None])[0]
    return MaskingQuestion(
        record_id=str(prompt["record_id"]),
        embeds=embeds,
        attention_mask=torch.ones(ids.shape[0], dtype=torch.long, device=device),
        position_ids=torch.arange(ids.shape[0], device=device),
        eligible=np.asarray(prompt["eligible"], dtype=bool),
        c=c,
    )


def summarise_clue_masking(frame: pd.DataFrame, resamples: int, confidence: float, method: str, seed: int):
    """{questions, mean_advantage, ci_low, ci_high, mean_d_clue, mean_d_window} (empty dict: no clue rows)."""
    if frame.empty:
        return {}
    ci = mean_advantage_interval(
        frame["d_clue"].to_numpy(), frame["d_window_mean"].to_numpy(), resamples, confidence, method, seed
    )
    return {
        "questions": len(frame),
        "mean_advantage": ci.mean,
        "ci_low": ci.low,
        "ci_high": ci.high,
        "mean_d_clue": float(frame["d_clue"].mean()),
        "mean_d_window": float(frame["d_window_mean"].mean()),
    }
