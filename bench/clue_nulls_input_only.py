"""The clue study's model-free nulls before any training: the input-only ranking and the base rate.

In a project where ``prepare`` and ``backbone`` have run (``dvc repro prepare backbone`` after
``xurs params experiment=...``), prints, per region, over the questions the attribution would explain
against the references it would prepare: the input-only ranking's rank-1 share and clue share
(``evaluation.nulls.input_only_scores``: summed embedding distance to the references as prepared), the
rank-1 base rate of random scores over the live positions, and the live position counts. None of it
needs a trained model: a localisation figure that does not beat these holds by construction.

    python bench/clue_nulls_input_only.py [--project DIR] [--questions N]   (N=0: every test question)
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.config import load_params
from xurs_pipeline.evaluation.artifacts import read_prompts
from xurs_pipeline.evaluation.clue_nulls import (
    clue_nulls,
    input_only_frame,
    live_by_question,
    prepared_references,
)
from xurs_pipeline.models.backbone import load_backbone_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default=".", help="project root with params.yaml and artifacts")
    parser.add_argument("--questions", type=int, default=None, help="default: attribution.max_questions")
    args = parser.parse_args()
    root = Path(args.project)
    cfg = load_params(root / "params.yaml")
    at = cfg.attribution
    if args.questions is not None:
        at = dataclasses.replace(at, max_questions=args.questions)
    artifacts = root / cfg.paths.artifacts
    prompts = read_prompts(artifacts / "prepared" / "prompts.parquet")
    backbone = load_backbone_dir(artifacts / "backbone")
    questions = select_questions(prompts, at, None)
    if at.reference != "train":
        raise SystemExit(f"attribution.reference={at.reference!r}: this script prepares training references")
    pool_ids, _ = reference_pool(prompts, at, None)
    refs = [r for collection in pool_ids for r in collection]
    rows = [{"record_id": q.record_id, "target": q.answer_idx, "reference": "train"} for q in questions]
    frame = pd.DataFrame(rows).assign(reference_record_ids=[refs] * len(rows))
    embedding = backbone.model.get_input_embeddings().weight.detach().double().numpy()
    prepared = prepared_references(frame, prompts, at.reference_alignment, backbone.tokenizer.pad_token_id)
    live = live_by_question(prompts, prepared, embedding)
    rankings = {"input_only": input_only_frame(frame, prompts, prepared, embedding)}
    ev = cfg.evaluation
    table, summary = clue_nulls(rankings, prompts, live, ev.bootstrap_resamples, ev.confidence,
                                ev.bootstrap_method, ev.seed)  # fmt: skip
    print(f"experiment {cfg.experiment_name}: {len(questions)} questions, {len(refs)} references "
          f"({at.reference_alignment} alignment)")  # fmt: skip
    print(
        "| region | questions | input-only: clue first | input-only: clue share "
        "| random scores: clue first | live positions (median) | live clue positions (median) |"
    )
    print("|---|---|---|---|---|---|---|")
    for region, m in summary["input_only"].items():
        first = round(m["best_rank_1_share"] * m["questions"])
        print(f"| {region} | {m['questions']} | {first} of {m['questions']} "
              f"| {m['mean_clue_share_pct']:.1f}% | {100 * m['base_rate_rank_1']:.1f}% "
              f"| {m['median_live_positions']:g} | {m['median_live_clue_positions']:g} |")  # fmt: skip
    case = table[table["region"] == "case_text"]
    print("case text per question (live positions, live clue positions):",
          ", ".join(f"{int(a)}/{int(b)}" for a, b in zip(case["n_live"], case["n_clue_live"], strict=True)),
          f"range of live positions {int(np.min(case['n_live']))}-{int(np.max(case['n_live']))}")  # fmt: skip


if __name__ == "__main__":
    main()
