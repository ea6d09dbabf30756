"""How far attribution methods agree on the same explained answers, and what each costs.

Per (question, explained answer) and pair of methods: Spearman's rank correlation of the two methods'
token magnitudes over the prompt's eligible positions (``evaluation.agreement.spearman``: scipy, mean ranks;
NaN where one method scores every eligible token alike) and how many of the top :data:`TOP` eligible
positions both name (zero-masking's ranking, :func:`~xurs_pipeline.evaluation.masking.top_eligible`:
ties to the earlier position). Eligible positions are those zero-masking may mask (Sec. 5.2), the ones a
ranking is used for. Per method: its cost per question (forwards and gradient evaluations from its rows,
seconds from its run's shard reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import numpy as np
import pandas as pd

from xurs_pipeline.evaluation.agreement import spearman
from xurs_pipeline.evaluation.masking import eligible_positions, top_eligible

TOP = 5  # the overlap's k: positions both methods rank in their top 5
KEYS = ["record_id", "target"]
AGREEMENT_COLUMNS = ("record_id", "target", "method_a", "method_b", "spearman", "top_overlap")


def pair_agreement(a: np.ndarray, b: np.ndarray, eligible: np.ndarray, record_id: str) -> tuple[float, int]:
    """Spearman's rho of magnitudes ``a`` and ``b`` (L,) over the ``eligible`` (L,) positions, and the size
    of the overlap of their top :data:`TOP` eligible positions (0..TOP)."""
    positions = eligible_positions(eligible, record_id)
    rho = spearman(a[positions], b[positions]) if positions.size > 1 else float("nan")  # NaN: constant
    tops = [set(top_eligible(m, eligible, TOP, record_id).tolist()) for m in (a, b)]
    return rho, len(tops[0] & tops[1])


def agreement_frame(runs: Mapping[str, pd.DataFrame], prompts: pd.DataFrame) -> pd.DataFrame:
    """One row per (record_id, target) every run explained and per pair of methods (in ``runs``' order):
    ``spearman`` and ``top_overlap`` (:func:`pair_agreement`). ``runs``: method -> its attribution rows."""
    eligible = prompts.set_index("record_id")["eligible"]
    tables = {m: rows.set_index(KEYS)["token_magnitude"] for m, rows in runs.items()}
    shared = sorted(set.intersection(*(set(t.index) for t in tables.values()))) if tables else []
    out = []
    for record_id, target in shared:
        mask = np.asarray(eligible[record_id], dtype=bool)
        for a, b in combinations(tables, 2):
            scores = [np.asarray(tables[m][(record_id, target)], dtype=np.float64) for m in (a, b)]
            rho, overlap = pair_agreement(*scores, mask, str(record_id))
            out.append((record_id, int(target), a, b, rho, overlap))
    return pd.DataFrame(out, columns=list(AGREEMENT_COLUMNS))


def summarise_agreement(frame: pd.DataFrame) -> dict[str, dict[str, float | int]]:
    """Per pair ``"<a> vs <b>"``: the median rho over the answers where it is defined, how many those are,
    the median top-5 overlap and the number of answers."""
    out: dict[str, dict[str, float | int]] = {}
    for (a, b), rows in frame.groupby(["method_a", "method_b"], sort=False):
        rho = rows["spearman"].to_numpy(dtype=float)
        defined = rho[~np.isnan(rho)]
        out[f"{a} vs {b}"] = {
            "answers": len(rows),
            "spearman_median": float(np.median(defined)) if defined.size else float("nan"),
            "spearman_defined": int(defined.size),
            "top_overlap_median": float(rows["top_overlap"].median()),
        }
    return out


def method_costs(rows: pd.DataFrame, seconds_per_question: float | None) -> dict[str, float | None]:
    """One method's cost per question: median forwards and gradient evaluations over its questions (a
    question's count is on each of its rows) and ``seconds_per_question`` (None: not measured)."""
    per_question = rows.drop_duplicates("record_id")
    return {
        "questions": len(per_question),
        "forwards_median": float(per_question["forward_evals"].median()),
        "grad_evals_median": float(per_question["grad_evals"].median()),
        "seconds_per_question": seconds_per_question,
    }
