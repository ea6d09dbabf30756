"""Select one split of the prepared prompts as training/evaluation examples (token ids, labels, targets)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.data.records import DataError
from xurs_pipeline.train.data import LabelledSet


@dataclass(frozen=True)
class SplitExamples:
    data: LabelledSet
    record_ids: list[str]


def split_examples(
    prompts: pd.DataFrame, split: str, vocab_size: int, with_targets: bool = False, where: str = "prompts"
) -> SplitExamples:
    """Rows of ``split`` as a :class:`LabelledSet` of token-id lists.

    Raises DataError (a ValueError) if the split is empty, if ``with_targets`` and the rows have no
    ``target_masses`` (only synthetic sources do), or if a token id is outside the backbone's vocabulary (the
    prompts were tokenised with another tokenizer).
    """
    rows = prompts[prompts["split"] == split]
    if rows.empty:
        found = sorted(prompts["split"].unique().tolist())
        raise DataError(f"{where}: no rows with split {split!r} (splits present: {found})")
    ids = [list(map(int, x)) for x in rows["input_ids"]]
    top = max(max(x) for x in ids)
    if top >= vocab_size:
        record = rows["record_id"].iloc[next(i for i, x in enumerate(ids) if max(x) == top)]
        raise DataError(
            f"{where}: record {record!r} has token id {top}, outside the backbone's vocabulary "
            f"({vocab_size}): the prompts were tokenised with another tokenizer. Rerun the prepare stage "
            "after the backbone stage."
        )
    targets = None
    if with_targets:
        if "target_masses" not in rows.columns or rows["target_masses"].isna().any():
            raise DataError(
                f"{where}: model.output_kind='mass15' trains against target_masses, which split {split!r} "
                "lacks (only synthetic data sources provide them)"
            )
        targets = torch.as_tensor(np.stack(rows["target_masses"].to_numpy()), dtype=torch.float32)
    labels = torch.tensor(rows["answer_idx"].to_numpy(dtype=np.int64))
    record_ids = rows["record_id"].astype(str).tolist()
    return SplitExamples(LabelledSet(ids, labels, targets, tuple(record_ids)), record_ids)
