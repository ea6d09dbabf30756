"""What a run writes, generated from :mod:`xurs_pipeline.contracts` (``xurs outputs`` -> ``docs/outputs.md``).

Paths, writing stages and kinds come from ``contracts.ARTIFACTS``; the tables from the
:class:`~xurs_pipeline.reporting.render.TableSpec` declarations of ``reporting/tables.py``; the plots from
``contracts.PLOTS`` with ``reporting.plots.FIGURES``. Only the one-line "holds" of each artifact is written
here (:data:`HOLDS`), and :func:`outputs_markdown` refuses an artifact without one, so a new artifact cannot
be left out of the page.
"""

from __future__ import annotations

from xurs_pipeline.contracts import ARTIFACTS, PLOTS, STAGES, Artifact

HOLDS: dict[str, str] = {
    "config_check": "a stamp that `params.yaml` validated (every key, before any stage deletes an output)",
    "backbone": "the backbone as a plain Hugging Face directory (weights, config, tokenizer)",
    "prompts": "one row per question: prompt text, token ids, sections, zero-masking eligibility, clue spans",
    "prepare_summary": "the data source, record counts per split and the preparation's settings",
    "head_first": "the head-only warm start of the LoRA configs (App. B.1), or a note that it was skipped",
    "classifier": "the trained random-set head (and LoRA adapter or tuned blocks), checksummed safetensors",
    "train_metrics": "per-epoch training and dev metrics and the selected epoch",
    "train_live": "per-epoch curves for `dvc plots show` (DVCLive)",
    "predictions": "per question: beliefs, masses (App. A, Eq. 5), Bel/Pl, width (Eq. 2), BetP, prediction",
    "prediction_metrics": "accuracy, chance and majority answer, AUROCs of width and 1 - BetP, per split",
    "correction_audit": "how often and how much the belief correction (Eq. 5) rescaled masses (Table 8)",
    "gates": "App. D.3's controlled-model gates: value, threshold and verdict per gate and split",
    "gate_metrics": "the gates grouped by split, with the counts `xurs gates-sweep` compares",
    "attributions": "per explained answer: signed and absolute token scores, widths, residual R (Eq. 9)",
    "coords": "per explained answer, the token-by-embedding attributions (safetensors)",
    "nonfinite": "questions with non-finite widths or gradients (left out of attributions) and why",
    "attribution_metrics": "R median and max, error bounds, gradient evaluations, budget-exhausted questions "
    "with the R each reached, and with a rerun its cosine and relative distance (median, worst)",
    "attribute_rerun": "with `attribution.certified_rerun`, every question estimated again (other shifts)",
    "rerun_vectors": "per explained answer: cosine and relative distance against that rerun (App. B.4)",
    "repeats": "the main attribution rerun per `evaluation.repeat_seeds` (Tables 2, 6, 7)",
    "target_runs": "the attribution of each comparison target (entropy, BetP) in `evaluation.targets`",
    "compare_runs": "the main run's questions explained with each of `evaluation.compare_methods` as well",
    "method_agreement": "per answer and pair of methods: Spearman's rho of token scores and top-5 overlap",
    "method_masking": "per explained answer and method: zero-masking D and A(x) (Eq. 8) with its ranking",
    "method_metrics": "per pair of methods the median agreement; per method its cost and Table 1's advantage",
    "mask_effects": "per question: zero-masking D and the advantage A(x) (Eq. 8), top-k curve points",
    "mask_metrics": "Table 1 per target: mean advantage with its bootstrap interval and the curve",
    "clue_masking": "per question: zero-masking the clue vs equal-length clue-free windows",
    "checks": "every attribution check with value, threshold and verdict (a failure is a defect)",
    "check_details": "per-question comparisons, reference endpoints (Eq. 10), localisation and its nulls",
    "check_summary": "the checks' counts, the endpoints diagnostic, localisation (App. C) and its nulls",
    "swap_model": "the swap control's models B (labels by cue 2) and C (agreeing cues), or a skip note",
    "swap_attributions": "the swap probes explained by models B and C and by the three models re-initialised",
    "swap_study": "the swap control: per-probe cue scores, behaviour under text edits, the methods scored",
    "swap_methods": "per method: agreement with behaviour per judging yardstick and cell, the plan's verdict "
    "and comparisons; per model, how often it behaves as trained; per yardstick, whether it judges",
    "tables": "the paper's tables as Markdown, LaTeX and CSV (listed below), and `index.json`",
    "plots": "the report's figures as PNG (listed below), also drawn by `dvc plots show`",
    "html": "the report: `index.html`, one page per table and one per explained question",
}
KINDS = {"metric": "DVC metric", "detail": "detail metrics", "out": "output"}
METRIC_HOLDS = "the stage's headline numbers, shown by `dvc metrics show` and `dvc exp show`"


def _holds(a: Artifact) -> str:
    if a.name in HOLDS:
        return HOLDS[a.name]
    if a.kind == "metric":
        return METRIC_HOLDS
    raise KeyError(f"artifact {a.name!r} ({a.path}) has no entry in xurs_pipeline/outputs.py HOLDS")


def _rows() -> list[str]:
    """One Markdown row per artifact, in stage order (``contracts.STAGES``), then by path."""
    order = {name: i for i, name in enumerate(STAGES)}
    arts = sorted(ARTIFACTS.values(), key=lambda a: (order.get(a.writer, len(order)), a.root, a.path))
    roots = {"artifacts": "data", "results": "results"}
    return [f"| `{roots[a.root]}/{a.path}` | `{a.writer}` | {KINDS[a.kind]} | {_holds(a)} |" for a in arts]


def _tables() -> list[str]:
    from xurs_pipeline.reporting import tables
    from xurs_pipeline.reporting.render import TableSpec

    specs = sorted((v for v in vars(tables).values() if isinstance(v, TableSpec)), key=lambda s: s.name)
    return [f"- `{s.name}`: {s.caption}" for s in specs]


def _plots() -> list[str]:
    from xurs_pipeline.reporting.plots import FIGURES

    return [f"- `{name}.png`: {FIGURES[name]}" for name in PLOTS]


HEADER = """# Outputs: what a run writes

<!-- Generated by `xurs outputs` from xurs_pipeline/contracts.py; do not edit by hand. -->

Every file and folder the pipeline writes, the stage that writes it and what it holds. Paths are the
defaults, `paths.artifacts=data` and `paths.results=results`; each stage writes only its own outputs,
atomically, and DVC caches them all (`data/` is git-ignored). Kinds: a **DVC metric** is a stage's
`headline.json`, or the swap stage's `methods.json` (`dvc metrics show`); **detail metrics** are the full
JSON the tables and the report read; an **output** is any other file or folder. Stages that do not apply
to the data (`train_head` without a warm start, the swap stages on other data) write only a skip note.

| path | written by | kind | holds |
|---|---|---|---|
"""


SKIPPED = """A table whose inputs a run does not make (Table 3 without aligned references, Table 10 on
other data than V2) is not written; `index.json` names it with the reason."""
OUTSIDE = """## Outside `dvc repro`

- `results/explain/<record>.html`: the page `xurs explain` writes for one question.
- `results/sweeps/gates_sweep.{md,tex,csv}`: the gates of a sweep's experiments (`xurs gates-sweep`; the
  first free `gates_sweep_<n>.*` where one exists, unless `--overwrite`).
- `results/sweeps/swap_sweep.{md,tex,csv,json,png}` and `swap_sweep.inputs/`: the swap control pooled over
  a sweep's experiments, its picture, and the studies it pooled (`xurs swap-sweep`; likewise
  `swap_sweep_<n>.*`).
"""


def outputs_markdown() -> str:
    """The whole page ``docs/outputs.md``: every artifact, then the tables and plots by name."""
    lines = [HEADER.rstrip("\n"), *_rows(), "", "## Tables (`results/tables/<name>.md`, `.tex`, `.csv`)", ""]
    lines += [*_tables(), "", SKIPPED, "", "## Plots (`results/plots/<name>.png`)", "", *_plots(), ""]
    return "\n".join(lines) + "\n" + OUTSIDE
