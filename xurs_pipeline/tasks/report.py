"""Task ``report``: artifacts -> ``<results>/html/`` (one explanation page per explained question, shaded
by width attribution, with intervals, masses, section shares and checks; plus ``index.html``). Same as
``xurs report``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from xurs_pipeline.attribution.config import describe_references
from xurs_pipeline.config import RootConfig, result_config
from xurs_pipeline.contracts import artifact, check_detail, compare_dir, swap_summary
from xurs_pipeline.evaluation.artifacts import read_attributions, read_predictions, read_prompts
from xurs_pipeline.io import config_hash, read_json, read_parquet
from xurs_pipeline.models.config import model_name
from xurs_pipeline.reporting.front_page import (
    AccuracyRow,
    AttributionError,
    CheckLine,
    ClueRow,
    EffectRow,
    EndpointRow,
    FrontPage,
    Link,
    markdown_title,
)
from xurs_pipeline.reporting.gate_notes import known_misses
from xurs_pipeline.reporting.plots import FIGURES
from xurs_pipeline.reporting.swap_card import SwapStudy

if TYPE_CHECKING:
    from xurs_pipeline.reporting.html import ReportProvenance


def run(cfg: RootConfig) -> None:
    """Build the report of ``cfg``'s experiment (errors raise)."""
    from transformers import AutoTokenizer  # torch and transformers: not at stage start-up

    from xurs_pipeline.reporting.build_report import (
        PageContext,
        build_report,
        explanation_views,
        with_comparison,
    )

    a = cfg.attribution
    prompts = read_prompts(artifact("prompts").at(cfg.paths))
    attributions = read_attributions(artifact("attributions").at(cfg.paths).parent)
    tokenizer = AutoTokenizer.from_pretrained(str(artifact("backbone").at(cfg.paths)), local_files_only=True)
    ids = prompts.set_index("record_id")["input_ids"]
    views = explanation_views(
        prompts,
        read_predictions(artifact("predictions").at(cfg.paths)),
        attributions,
        read_parquet(artifact("mask_effects").at(cfg.paths)),
        {
            rid: tokenizer.convert_ids_to_tokens([int(i) for i in ids[rid]])
            for rid in attributions["record_id"]
        },
        PageContext(_provenance(cfg), cfg.evaluation.numerics.max_residual_max, a.target),
    )
    other = next(iter(cfg.evaluation.compare_methods), None)
    if other:  # the attribute_compare stage's first run of the same questions (docs/attribution-methods.md)
        views = with_comparison(views, a.method, other, read_attributions(compare_dir(cfg.paths, other)))
    front, markdown = front_page(cfg, attributions)
    pages = build_report(views, artifact("html").at(cfg.paths), cfg.experiment_name, front, markdown)
    print(f"report: {len(views)} explanation pages, {len(markdown)} tables; open {pages[-1]}")


def _provenance(cfg: RootConfig) -> ReportProvenance:
    """What every explanation page says it was made from: the experiment, its config hash, the method
    and its references and samples."""
    from xurs_pipeline.reporting.html import ReportProvenance
    from xurs_pipeline.reporting.method_findings import finding_label

    a = cfg.attribution
    return ReportProvenance(
        experiment=cfg.experiment_name,
        config_hash=config_hash(result_config(cfg)),
        method=f"{a.method.upper()} {a.route} route, {a.precision}",
        references=references(cfg),
        samples={"eg": a.n_samples, "ig": a.ig_points, "kronrod": a.kronrod_max_evals}.get(
            a.method,
            a.gradient_budget().per_question,  # a token method's gradients (0 for occlusion)
        ),
        extra=(
            ("seed", str(a.seed)),
            ("model", model_name(cfg.model)),
            ("swap control", finding_label(a.method)),
        ),
    )


def references(cfg: RootConfig) -> str:
    """What the attributions were measured against, as the front page and every explanation page say."""
    a = cfg.attribution
    kind = describe_references(a.reference, a.reference_alignment)
    return f"{a.n_collections} x {a.refs_per_collection} {kind} references"


def _endpoints(cfg: RootConfig) -> pd.DataFrame:
    """The checks stage's Eq. 10 diagnostic (empty before ``checks``, or without aligned references)."""
    path = check_detail("endpoints").at(cfg.paths)
    return read_parquet(path) if path.is_file() else pd.DataFrame()


def _accuracy(cfg: RootConfig) -> tuple[AccuracyRow, ...]:
    """The predict stage's accuracy per split (its ``_``-prefixed entries left out)."""
    predict = read_json(artifact("prediction_metrics").at(cfg.paths))
    return tuple(
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


def _effects(cfg: RootConfig) -> tuple[EffectRow, ...]:
    """The mask_eval stage's mean advantage of each masking target, with its interval."""
    targets = read_json(artifact("mask_metrics").at(cfg.paths)).get("targets", {})
    return tuple(
        EffectRow(name, t["questions"], t["mean_advantage"], t["ci_low"], t["ci_high"])
        for name, t in targets.items()
    )


def _data_summary(cfg: RootConfig) -> str:
    """The prepare stage's source, record count and split sizes, in one line."""
    summary = read_json(artifact("prepare_summary").at(cfg.paths))
    splits = ", ".join(f"{k} {v}" for k, v in summary.get("splits", {}).items())
    return f"{summary.get('source', cfg.data.source)}: {summary.get('n_records', '?')} records ({splits})"


def _check_lines(tables: Path) -> tuple[CheckLine, ...]:
    """The verdicts table's rows (none before ``xurs tables``)."""
    verdicts = pd.read_csv(tables / "verdicts.csv") if (tables / "verdicts.csv").is_file() else pd.DataFrame()
    return tuple(
        CheckLine(str(r.group), str(r.name), float(r.value), str(r.rule), bool(r.passed))
        for r in verdicts.itertuples(index=False)
    )


def _plot_links(index: dict) -> tuple[Link, ...]:
    """The plots ``index.json`` lists, each with its figure caption."""
    return tuple(
        Link(Path(f).stem.replace("_", " "), f"../plots/{f}", FIGURES.get(Path(f).stem, ""))
        for f in index.get("plots", [])
    )


def _plots_not_drawn(index: dict) -> tuple[Link, ...]:
    """The plots ``index.json`` says were not drawn, each with why."""
    return tuple(
        Link(name.replace("_", " "), "", why) for name, why in index.get("plots_not_drawn", {}).items()
    )


def _rerun_vectors(cfg: RootConfig) -> pd.DataFrame | None:
    """The attribute stage's vector figures against its own rerun; None where the file predates them."""
    vectors = artifact("rerun_vectors")
    path = vectors.at(cfg.paths)
    return read_parquet(path, vectors.provenance(), vectors.columns) if path.is_file() else None


def front_page(cfg: RootConfig, attributions: pd.DataFrame) -> tuple[FrontPage, dict[str, str]]:
    """The front page's inputs from the artifacts (predict, mask_eval, prepare, the main run's
    ``attributions``) and ``<results>/tables``
    (the verdicts table, ``index.json`` listing tables, skipped tables and plots), plus every table's
    Markdown by name. Tables and plots not made yet (``xurs report`` before ``xurs tables``) are left out."""
    tables = artifact("tables").at(cfg.paths)
    index = read_json(tables / "index.json") if (tables / "index.json").is_file() else {}
    markdown = {name: (tables / f"{name}.md").read_text(encoding="utf-8") for name in index.get("tables", {})}
    check_summary = artifact("check_summary").at(cfg.paths)  # absent for `xurs report` before `checks`
    checked = read_json(check_summary) if check_summary.is_file() else {}
    swap_file = swap_summary(cfg.paths)  # absent before the swap stage
    page = FrontPage(
        experiment=cfg.experiment_name,
        model=f"{model_name(cfg.model)} ({cfg.train.adaptation}, {cfg.model.head} head)",
        data=_data_summary(cfg),
        config_hash=config_hash(result_config(cfg)),
        accuracy=_accuracy(cfg),
        effects=_effects(cfg),
        checks=_check_lines(tables),
        tables=tuple(
            Link(name, f"tables/{name}.html", markdown_title(md, "")) for name, md in markdown.items()
        ),
        skipped=tuple(Link(name, "", why) for name, why in index.get("skipped", {}).items()),
        plots=_plot_links(index),
        error=AttributionError.of(attributions, _rerun_vectors(cfg)),
        references=references(cfg),
        clue=ClueRow.of(checked.get("localisation") or {}),
        tolerance=(cfg.evaluation.numerics.residual_center_max, cfg.evaluation.numerics.max_residual_max),
        known_misses=known_misses(cfg.data.source),
        clue_by_construction=cfg.attribution.reference == "aligned",
        plots_not_drawn=_plots_not_drawn(index),
        clue_nulls=checked.get("localisation_nulls") or {},
        swap=SwapStudy.of(read_json(swap_file), cfg.attribution.method) if swap_file.is_file() else None,
        endpoints=EndpointRow.of(_endpoints(cfg)),
        endpoint_shift_above=cfg.evaluation.reference_shift_warning,
    )
    return page, markdown
