"""``xurs report``: rebuild the HTML explanation pages of an experiment from its artifacts."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from xurs_pipeline.config import RootConfig, load_params
from xurs_pipeline.models.config import model_name


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild the HTML explanation pages from artifacts",
        description=(
            "Write one HTML page per explained question (tokens shaded by width attribution, the [Bel, Pl] "
            "interval of every option, masses, section shares, checks) and an index page under "
            "<paths.results>/html, from the artifacts of the experiment in params.yaml. Same as the "
            "`report` stage of `dvc repro`."
        ),
    )
    p.add_argument("--params", default="params.yaml", help="composed config (default: params.yaml)")
    p.set_defaults(run=lambda args: run(load_params(args.params)))


def run(cfg: RootConfig) -> int:
    """Build the report of ``cfg``'s experiment; returns 0 (errors raise)."""
    from transformers import AutoTokenizer

    from xurs_pipeline.evaluation.artifacts import read_attributions, read_predictions, read_prompts
    from xurs_pipeline.io import config_hash, read_parquet
    from xurs_pipeline.reporting.build_report import build_report, explanation_views
    from xurs_pipeline.reporting.html import ReportProvenance

    artifacts, a = Path(cfg.paths.artifacts), cfg.attribution
    prompts = read_prompts(artifacts / "prepared" / "prompts.parquet")
    attributions = read_attributions(artifacts / "attribute")
    tokenizer = AutoTokenizer.from_pretrained(str(artifacts / "backbone"), local_files_only=True)
    ids = prompts.set_index("record_id")["input_ids"]
    provenance = ReportProvenance(
        experiment=cfg.experiment_name,
        config_hash=config_hash(asdict(cfg)),
        method=f"{a.method.upper()} {a.route} route, {a.precision}",
        references=f"{a.n_collections} x {a.refs_per_collection} {a.reference} references",
        samples=a.n_samples if a.method == "eg" else a.ig_points,
        extra=(("seed", str(a.seed)), ("model", model_name(cfg.model))),
    )
    views = explanation_views(
        prompts,
        read_predictions(artifacts / "predict" / "predictions.parquet"),
        attributions,
        read_parquet(artifacts / "mask_eval" / "per_question.parquet"),
        {
            rid: tokenizer.convert_ids_to_tokens([int(i) for i in ids[rid]])
            for rid in attributions["record_id"]
        },
        provenance,
        residual_max=cfg.evaluation.numerics.max_residual_max,
        target_rule=a.target,
    )
    pages = build_report(views, Path(cfg.paths.results) / "html", cfg.experiment_name)
    print(f"report: {len(pages) - 1} pages; open {pages[-1]}")
    return 0
