"""Keep one run of the ``attribute`` stage as a JSON file under results/ (the files of
results/certification/ named ``local_m*.json``), from the stage's outputs as it wrote them.

    python bench/keep_attribute_run.py [--attribute data/attribute] \
        --out results/certification/local_m256_one_question.json \
        --command "xurs params experiment=local attribution=certified ... && dvc repro attribute" \
        --from "a fresh clone after README command 1 ..." --machine "EPYC, one torch thread" \
        --wall-clock "1:35:53 for the attribute stage ..." [--date 2026-12-02]

Reads the stage's folder (``--attribute``, default ``data/attribute``): ``metrics.json`` and ``headline.json``
as they are, and per explained answer the row of ``attributions.parquet`` (its gradient and forward
evaluations, residual R (Eq. 9), error bound, whether the budget ran out, the width difference, the references
and the points each got); with the stage's own rerun (``attribution.certified_rerun``; ``rerun/index.json``
names it) the rerun's metrics and rows too, and each answer's App. B.4 vector figures
(``rerun_vectors.parquet``: cosine, relative distance).
An answer is named by its record id, or ``<record id>/<target>`` where the run explains more than one answer
of a question. Read through the project's readers (a missing or broken output stops it with the file named,
nothing written) and written atomically.
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from xurs_pipeline.contracts import RERUN_VECTOR_COLUMNS
from xurs_pipeline.evaluation.artifacts import read_attributions
from xurs_pipeline.io import ArtifactError, atomic_path, read_json, read_parquet

ROW_FIELDS = (
    "grad_evals",
    "forward_evals",
    "residual",
    "error_bound",
    "budget_exhausted",
    "width_difference",
)


def answer_names(rows: pd.DataFrame) -> list[str]:
    """Each row's name: its record id, or ``<record id>/<target>`` when a question has several rows."""
    several = rows["record_id"].duplicated(keep=False)
    named = zip(rows["record_id"], rows["target"], several, strict=True)
    return [f"{r}/{t}" if many else str(r) for r, t, many in named]


def answer_figures(row: pd.Series) -> dict:
    """One answer's cost and certificate from its attributions.parquet row: ``ROW_FIELDS`` and, per
    reference (M of them), how many points it got (median, largest, smallest)."""
    figures = {k: row[k].item() if hasattr(row[k], "item") else row[k] for k in ROW_FIELDS}
    points = np.asarray(row["reference_points"])
    figures["references"] = len(row["reference_record_ids"])
    if points.size:
        figures |= {
            "points_a_reference_median": float(np.median(points)),
            "points_a_reference_max": int(points.max()),
            "points_a_reference_min": int(points.min()),
        }
    return figures


def answers(folder: Path) -> dict[str, dict]:
    """Per explained answer of the attribute-format ``folder``, ``answer_figures``."""
    rows = read_attributions(folder)
    named = zip(answer_names(rows), rows.iterrows(), strict=True)
    return {name: answer_figures(row) for name, (_, row) in named}


def rerun_folder(attribute: Path) -> Path | None:
    """The stage's own rerun folder (``rerun/seed<s>/``) ``rerun/index.json`` names, or None."""
    named = read_json(attribute / "rerun" / "index.json")["rerun"]
    if not named:
        return None
    (folder,) = named  # the stage runs one rerun, named by its folder (seed<s>)
    return attribute / "rerun" / folder


def vector_figures(attribute: Path) -> dict[str, dict[str, float]]:
    """Per explained answer, App. B.4's vector figures against the rerun (rerun_vectors.parquet)."""
    rows = read_parquet(attribute / "rerun_vectors.parquet", required_columns=RERUN_VECTOR_COLUMNS)
    return {
        name: {"cosine": float(c), "relative_distance": float(d)}
        for name, c, d in zip(answer_names(rows), rows["cosine"], rows["relative_distance"], strict=True)
    }


def kept_run(attribute: Path, about: dict[str, str]) -> dict:
    """The kept file's content: ``about`` (command, date, from, machine, wall clock), then the metrics and
    headline of the stage whose folder is ``attribute``, the rerun's metrics where there is one, and per
    answer its figures."""
    kept = dict(about)
    kept["metrics"] = read_json(attribute / "metrics.json")
    kept["headline"] = read_json(attribute / "headline.json")
    questions = {"run": answers(attribute)}
    rerun = rerun_folder(attribute)
    if rerun is not None:
        kept["rerun_metrics"] = read_json(rerun / "metrics.json")
        questions |= {"rerun": answers(rerun), "vectors": vector_figures(attribute)}
    kept["questions"] = questions
    return kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--attribute", type=Path, default=Path("data/attribute"), help="the attribute stage's folder"
    )
    parser.add_argument("--out", type=Path, required=True, help="the kept JSON file to write")
    parser.add_argument("--command", required=True, help="the commands that made the run")
    parser.add_argument("--from", dest="origin", required=True, help="the clone and settings it ran from")
    parser.add_argument("--machine", required=True, help="CPU or card, threads, what ran beside it")
    parser.add_argument("--wall-clock", required=True, help="the measured wall clock and peak memory")
    parser.add_argument("--date", default=date.today().isoformat(), help="the day it ran (default: today)")
    args = parser.parse_args(argv)
    about = {"command": args.command, "date": args.date, "from": args.origin}
    about |= {"machine": args.machine, "wall_clock": args.wall_clock}
    try:
        kept = kept_run(args.attribute, about)  # reads everything before anything is written
    except ArtifactError as err:
        raise SystemExit(str(err)) from err
    with atomic_path(args.out) as tmp:
        tmp.write_text(json.dumps(kept, indent=2) + "\n")
    print(f"{args.out}: {len(kept['questions']['run'])} answers kept")


if __name__ == "__main__":
    main()
