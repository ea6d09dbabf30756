"""``xurs report``: rebuild the HTML explanation pages of an experiment from its artifacts."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from xurs_pipeline.config import RootConfig, load_params
from xurs_pipeline.models.config import model_name

if TYPE_CHECKING:
    from xurs_pipeline.reporting.front_page import FrontPage


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
    front, markdown = front_page(cfg)
    pages = build_report(views, Path(cfg.paths.results) / "html", cfg.experiment_name, front, markdown)
    print(f"report: {len(views)} explanation pages, {len(markdown)} tables; open {pages[-1]}")
    return 0


def front_page(cfg: RootConfig) -> tuple[FrontPage, dict[str, str]]:
    """The front page's inputs from the artifacts (predict, mask_eval, prepare) and ``<results>/tables``
    (the verdicts table, ``index.json`` listing tables, skipped tables and plots), plus every table's
    Markdown by name. Tables and plots not made yet (``xurs report`` before ``xurs tables``) are left out."""
    import pandas as pd

    from xurs_pipeline.io import config_hash, read_json
    from xurs_pipeline.reporting.front_page import (
        AccuracyRow,
        CheckLine,
        EffectRow,
        FrontPage,
        Link,
        markdown_title,
    )
    from xurs_pipeline.reporting.plots import FIGURES

    artifacts, tables = Path(cfg.paths.artifacts), Path(cfg.paths.results) / "tables"
    predict = read_json(artifacts / "predict" / "metrics.json")
    accuracy = tuple(
        AccuracyRow(
            split,
            m["n"],
            m["accuracy"],
            m.get("chance", 0.25),
            m.get("majority", float("nan")),
            m.get("accuracy_with_result"),
            m.get("accuracy_without_result"),
            m.get("auroc_width"),
            m.get("auroc_low_probability"),
        )
        for split, m in predict.items()
        if not split.startswith("_")
    )
    targets = read_json(artifacts / "mask_eval" / "metrics.json").get("targets", {})
    effects = tuple(
        EffectRow(name, t["questions"], t["mean_advantage"], t["ci_low"], t["ci_high"])
        for name, t in targets.items()
    )
    summary = read_json(artifacts / "prepared" / "summary.json")
    splits = ", ".join(f"{k} {v}" for k, v in summary.get("splits", {}).items())
    data = f"{summary.get('source', cfg.data.source)}: {summary.get('n_records', '?')} records ({splits})"
    index = read_json(tables / "index.json") if (tables / "index.json").is_file() else {}
    names = index.get("tables", {})
    markdown = {name: (tables / f"{name}.md").read_text(encoding="utf-8") for name in names}
    verdicts = pd.read_csv(tables / "verdicts.csv") if (tables / "verdicts.csv").is_file() else pd.DataFrame()
    page = FrontPage(
        experiment=cfg.experiment_name,
        model=f"{model_name(cfg.model)} ({cfg.train.adaptation}, {cfg.model.head} head)",
        data=data,
        config_hash=config_hash(asdict(cfg)),
        accuracy=accuracy,
        effects=effects,
        checks=tuple(
            CheckLine(str(r.group), str(r.name), float(r.value), str(r.rule), bool(r.passed))
            for r in verdicts.itertuples(index=False)
        ),
        tables=tuple(
            Link(name, f"tables/{name}.html", markdown_title(md, "")) for name, md in markdown.items()
        ),
        skipped=tuple(Link(name, "", why) for name, why in index.get("skipped", {}).items()),
        plots=tuple(
            Link(Path(f).stem.replace("_", " "), f"../plots/{f}", FIGURES.get(Path(f).stem, ""))
            for f in index.get("plots", [])
        ),
    )
    return page, markdown
