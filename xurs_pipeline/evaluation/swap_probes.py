"""The swap probes under one model: the label's width on edited questions (``swap_behaviour.py``) and every
compared method's reading of each probe (``swap_methods.py``), as frames the ``swap`` task scores."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from xurs_pipeline.attribution.targets import width_target
from xurs_pipeline.data.prepare import prepare_records
from xurs_pipeline.data.records import QuestionRecord
from xurs_pipeline.evaluation.swap_behaviour import WidthReader
from xurs_pipeline.evaluation.swap_methods import (
    RUN_METHODS,
    CueReading,
    Probe,
    explain,
    middle_block,
    random_reading,
    token_reading,
    width_function,
)
from xurs_pipeline.train.predict import classifier_outputs


def label_widths(
    classifier: Any, tokenizer: Any, max_tokens: int, batch_size: int, device: torch.device
) -> WidthReader:
    """Records -> the width of each record's ``answer_idx`` under ``classifier`` (on ``device``) (n,), the
    records prepared as the ``prepare`` stage prepares them."""

    def read(records: Sequence[QuestionRecord]) -> np.ndarray:
        frame = prepare_records(records, tokenizer, max_tokens).frame
        ids = [list(map(int, x)) for x in frame["input_ids"]]
        masses = classifier_outputs(classifier, ids, tokenizer.pad_token_id, batch_size, device=device).masses
        labels = torch.tensor(frame["answer_idx"].to_numpy(), dtype=torch.long)
        return width_target(masses.double(), labels).numpy()  # W of each record's label (Eq. 2)

    return read


@dataclass(frozen=True)
class ProbeSet:
    """The probes as prepared: record id -> token ids (seq,), cue positions (two lists), label, prepared
    training references (n_refs, seq); the precomputed methods' (the runs' and ``input_only``) token
    magnitudes, method -> id -> (seq,), and model evaluations, method -> id -> count."""

    ids: Mapping[str, list[int]]
    cues: Mapping[str, tuple[list[int], list[int]]]
    labels: Mapping[str, int]
    references: Mapping[str, np.ndarray]
    magnitudes: Mapping[str, Mapping[str, np.ndarray]]
    evals: Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Model:
    """One model as the methods read it: the classifier, its input embedding, ``layer_ig``'s block (None
    when not compared), ``layer_ig``'s steps and the ``random`` null's seed."""

    classifier: Any
    embed: Any
    block: Any
    steps: int
    seed: int


def method_readings(
    classifier: Any, role: str, probes: ProbeSet, methods: Sequence[str], steps: int, seed: int
) -> pd.DataFrame:
    """One row per (method, probe) under one model: method, role, record_id, top, share_1, best_1, best_2,
    total_1, total_2, evals."""
    classifier.eval()
    block = middle_block(classifier) if "layer_ig" in methods else None
    model = Model(classifier, classifier.backbone.get_input_embeddings(), block, steps, seed)
    rows = []
    for record_id in tqdm(probes.ids, desc=f"swap methods, model {role}", unit="probe"):
        for method in methods:
            reading = _reading(method, model, probes, record_id)
            rows.append({"method": method, "role": role, "record_id": record_id, "top": reading.top,
                         "share_1": reading.share_1, "best_1": reading.best[0], "best_2": reading.best[1],
                         "total_1": reading.total[0], "total_2": reading.total[1],
                         "evals": reading.evals})  # fmt: skip
    return pd.DataFrame(rows)


def _reading(method: str, model: Model, probes: ProbeSet, record_id: str) -> CueReading:
    cues = probes.cues[record_id]
    if method in RUN_METHODS or method == "input_only":
        return token_reading(probes.magnitudes[method][record_id], cues, probes.evals[method][record_id])
    device = model.embed.weight.device
    ids = torch.tensor([probes.ids[record_id]], device=device)
    if method == "random":
        return random_reading(cues, ids.shape[1], model.seed + zlib.crc32(record_id.encode()))
    with torch.no_grad():
        x = model.embed(ids).detach()
        reference = model.embed(torch.as_tensor(probes.references[record_id][:1], device=device)).detach()
    width = width_function(model.classifier, probes.labels[record_id])
    return explain(method, width, Probe(x, cues, reference), model.block, model.steps)
