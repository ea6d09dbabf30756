"""DVC stage ``report``: artifacts -> ``<results>/html/`` (one explanation page per explained question,
shaded by width attribution, with intervals, masses, section shares and checks; plus ``index.html``).
Same as ``xurs report``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from stages._common import log, run_stage
from xurs_pipeline.config import RootConfig
from xurs_pipeline.evaluation.artifacts import read_attributions, read_predictions, read_prompts
from xurs_pipeline.io import ArtifactError, config_hash, read_parquet
from xurs_pipeline.reporting.build_report import build_report, explanation_views
from xurs_pipeline.reporting.html import ReportProvenance


def body(cfg: RootConfig) -> None:
    from transformers import AutoTokenizer

    artifacts, a = Path(cfg.paths.artifacts), cfg.attribution
    try:
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
            extra=(("seed", str(a.seed)), ("model", cfg.model.source or cfg.model.backbone)),
        )
        views = explanation_views(
            prompts,
            read_predictions(artifacts / "predict" / "predictions.parquet"),
            attributions,
            read_parquet(artifacts / "mask_eval" / "per_question.parquet"),
            {rid: tokenizer.convert_ids_to_tokens([int(i) for i in ids[rid]]) for rid in attributions["record_id"]},
            provenance,
            residual_max=cfg.evaluation.numerics.max_residual_max,
            target_rule=a.target,
        )
        pages = build_report(views, Path(cfg.paths.results) / "html", cfg.experiment_name)
    except (ArtifactError, KeyError, ValueError) as err:
        log.error("report: %s", err)
        raise SystemExit(1) from err
    log.info("report: %d pages, index at %s", len(pages) - 1, pages[-1])


if __name__ == "__main__":
    run_stage("report", body)
