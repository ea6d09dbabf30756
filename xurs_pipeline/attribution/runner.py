"""Sharded attribution runs: each process takes every n-th question, commits each finished question,
skips questions already finished by the same run, and one process merges the parts.

A question's result depends only on the question, the references, the config and the model (sampling
plans are seeded per collection, never per process), so the merged result does not depend on the
number of shards. Use ``accelerate.PartialState`` (or torchrun) for ``shard_index`` / ``shard_count``.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import question_budgets, reference_pool, select_questions
from xurs_pipeline.attribution.methods import attribute_question
from xurs_pipeline.attribution.model import WidthModel, model_dtype, set_precision
from xurs_pipeline.attribution.question import Question, QuestionResult, ReferencePool
from xurs_pipeline.attribution.records import COLUMNS, provenance
from xurs_pipeline.attribution.store import PartStore
from xurs_pipeline.contracts import artifact
from xurs_pipeline.fingerprint import ContentKey, code_version, sha256_dir, sha256_file
from xurs_pipeline.io import (
    ArtifactError,
    Provenance,
    ordinary_mode,
    read_json,
    unwritable,
    write_json,
    write_parquet,
)

ATTRIBUTIONS_FILE = Path(artifact("attributions").path).name  # names under the output directory
COORDS_DIR = Path(artifact("coords").path).name
NONFINITE_FILE = Path(artifact("nonfinite").path).name
log = logging.getLogger("xurs")
METRICS_FILE = Path(artifact("attribution_metrics").path).name


@dataclass
class ShardReport:
    shard_index: int
    shard_count: int
    computed: list[str]
    skipped: list[str]
    grad_evals: int
    seconds: float
    torch_threads: int  # CPU threads per process: float sums, hence the last bits, depend on it


def shard_seconds(out_dir: str | Path) -> float | None:
    """Seconds per question a run spent on the questions it computed, over the shard reports in
    ``out_dir/parts`` (the reports of the last run of each shard count); None where none is left or every
    question was resumed (a cost not measured, not zero)."""
    reports = [read_json(p) for p in sorted((Path(out_dir) / "parts").glob("shard-*-of-*.json"))]
    computed = sum(len(r["computed"]) for r in reports)
    return sum(float(r["seconds"]) for r in reports) / computed if computed else None


@dataclass
class Attributor:
    """What attributes a question: the model, the config, the tokenizer's pad id and the training
    reference pool (None for zero or aligned references), its natural widths computed on first use."""

    model: WidthModel
    cfg: AttributionConfig
    pad_id: int
    pool: ReferencePool | None = None

    def natural_pool(self) -> ReferencePool | None:
        """The pool with each reference's natural widths (computed once)."""
        if self.pool is not None and not self.pool.natural:
            self.pool = self.pool.measured(self.model, self.cfg)
        return self.pool

    def attribute(self, q: Question, on_batch: Callable[[int], None] | None = None) -> QuestionResult:
        return attribute_question(self.model, q, self.pool, self.cfg, self.pad_id, on_batch)


def _progress_bar(budgets: list[int], cfg: AttributionConfig, shard_index: int, shard_count: int) -> tqdm:
    """The shard's bar over its questions' largest sample counts (its ETA bounds the time)."""
    return tqdm(
        total=sum(budgets),
        unit="sample",
        dynamic_ncols=True,
        disable=not cfg.progress,
        position=shard_index,
        desc=f"attribute shard {shard_index + 1}/{shard_count}",
    )


def run_shard(
    job: Attributor, questions: list[Question], store: PartStore, shard_index: int = 0, shard_count: int = 1
) -> ShardReport:
    """Attribute questions ``shard_index::shard_count`` not yet finished in ``store``; commit each one."""
    if not 0 <= shard_index < shard_count:
        raise ValueError(f"shard_index={shard_index}: must be in 0..{shard_count - 1}")
    start = time.perf_counter()
    mine = questions[shard_index::shard_count]
    pending = [q for q in mine if not store.done(q.record_id)]
    if pending:
        job.natural_pool()
    budgets = question_budgets(pending, job.cfg)  # each question's most samples
    bar = _progress_bar(budgets, job.cfg, shard_index, shard_count)
    try:
        grad_evals = _attribute_pending(job, list(zip(pending, budgets, strict=True)), len(mine), store, bar)
    finally:
        bar.close()
    computed = {q.record_id for q in pending}
    skipped = [q.record_id for q in mine if q.record_id not in computed]
    seconds = time.perf_counter() - start
    report = ShardReport(
        shard_index, shard_count, sorted(computed), skipped, grad_evals, seconds, torch.get_num_threads()
    )
    where = store.parts / f"shard-{shard_index}-of-{shard_count}.json"
    write_json(vars(report), where, Provenance("attribution_shard", 1, store.fingerprint))
    return report


def _attribute_pending(
    job: Attributor, pending: list[tuple[Question, int]], shard: int, store: PartStore, bar: tqdm
) -> int:
    """Attribute and commit each pending question (of the ``shard`` questions of this shard), the progress
    ``bar`` counting gradient samples against each question's budget (paired with it in ``pending``; an
    adaptive estimator that stops early shrinks it); the gradient evaluations taken."""
    cfg, grad_evals = job.cfg, 0
    wide: list[Attributor] = []  # the job in float32 (its pool's natural widths too), made on first retry

    def on_batch(size: int) -> None:
        bar.update(size)
        if bar.total is not None and bar.n > bar.total:
            bar.total = bar.n  # a float32 retry went past it

    for done, (q, budget) in enumerate(pending, start=1):
        before = bar.n
        result = job.attribute(q, on_batch)
        if result.failure is not None and cfg.on_nonfinite == "retry" and cfg.precision != "float32":
            result = retry_in_float32(job, q, result, wide, on_batch)
        store.write(q.record_id, result)
        if result.failure is not None:
            log.warning("attribute: %s", result.failure.message())
        grad_evals += sum(r.grad_evals for r in result.rows[:1])
        unused = budget - (bar.n - before)  # an adaptive estimator stopped early: the ETA shrinks
        if unused > 0 and bar.total is not None:
            bar.total -= unused
        bar.set_postfix(questions=f"{done}/{len(pending)}", skipped=shard - len(pending))
    return grad_evals


def retry_in_float32(
    job: Attributor,
    q: Question,
    failed: QuestionResult,
    wide: list[Attributor],
    on_batch: Callable[[int], None] | None = None,
) -> QuestionResult:
    """``attribution.on_nonfinite='retry'``: attribute ``q`` again with the model cast to float32 in place
    (its half-precision weights widened exactly; cast back afterwards). Rows say ``precision`` float32;
    a second failure is reported as usual. ``wide`` caches the float32 job (its reference pool's natural
    widths computed in float32)."""
    assert failed.failure is not None
    log.warning("attribute: %s Retrying this question in float32.", failed.failure.message())
    dtype = model_dtype(job.model)  # type: ignore[arg-type]
    set_precision(job.model, torch.float32)  # type: ignore[arg-type]
    try:
        if not wide:
            pool = None if job.pool is None else job.pool.measured(job.model, job.cfg)
            wide.append(Attributor(job.model, replace(job.cfg, precision="float32"), job.pad_id, pool))
        return wide[0].attribute(q, on_batch)
    finally:
        set_precision(job.model, dtype)  # type: ignore[arg-type]


def _read_parts(store: PartStore, record_ids: list[str]) -> tuple[pd.DataFrame, list[dict[str, object]]]:
    """Every question's rows (one table) and failures; ArtifactError naming unfinished questions."""
    frames, failures, missing = [], [], []
    for record_id in record_ids:
        try:
            frame, failure = store.read(record_id)
        except ArtifactError:
            missing.append(record_id)
            continue
        if frame is not None:
            frames.append(frame)
        if failure is not None:
            failures.append(vars(failure))
    if missing:
        raise ArtifactError(
            f"{len(missing)} questions are not finished (e.g. {missing[:5]}): run every shard to the end "
            f"(rerunning resumes) before merging"
        )
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    return table, failures


def _copy_coords(store: PartStore, names: pd.Series, out: Path) -> None:
    """Copy the rows' coordinate files into ``out/coords`` (staged beside it, swapped in whole)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".coords.", dir=out))
    except OSError as err:
        raise unwritable(out / COORDS_DIR, err) from err
    ordinary_mode(staging, directory=True)
    try:
        for name in names:
            shutil.copyfile(store.coords / name, staging / name)
        final = out / COORDS_DIR
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _metrics(table: pd.DataFrame, questions: int, failures: int) -> dict[str, float | int | list[str] | None]:
    """The run's headline numbers: residuals (Eq. 9), gradient evaluations, error bounds, roughness, and
    the questions whose estimator ran out of budget before its tolerance (named, never averaged away, each
    with the R it reached)."""
    per_question = table.drop_duplicates("record_id")["grad_evals"] if len(table) else pd.Series([0])
    exhausted = _exhausted_residuals(table)

    def stat(column: str, how: str) -> float | None:
        """``how`` (median, max) of a column over the rows; 0 without rows, None where the method has no
        such value (a token method's residual, bound and roughness are NaN)."""
        values = table[column].to_numpy(dtype=float) if len(table) else np.zeros(1)
        return None if np.isnan(values).all() else float(getattr(np, f"nan{how}")(values))

    return {
        "questions": questions,
        "rows": len(table),
        "nonfinite_questions": failures,
        "residual_median": stat("residual", "median"),
        "residual_max": stat("residual", "max"),
        "grad_evals": int(per_question.sum()),
        "grad_evals_median": float(per_question.median()),  # a question's evaluations (App. B.4's budget)
        "error_bound_max": stat("error_bound", "max"),
        "roughness_median": stat("roughness", "median"),
        "budget_exhausted": sorted(exhausted),
        "budget_exhausted_residual": exhausted,  # each such question's largest R over its answers
    }


def _exhausted_residuals(table: pd.DataFrame) -> dict[str, float]:
    """Each question whose estimator ran out of budget, with the R (Eq. 9) it reached: the largest over its
    explained answers (sorted by record id)."""
    if not len(table):
        return {}
    flagged = table.loc[table["budget_exhausted"].astype(bool)]
    reached = flagged.groupby("record_id", sort=True)["residual"].max()
    return {str(k): float(v) for k, v in reached.items()}


def merge(
    store: PartStore, record_ids: list[str], out_dir: str | Path, fingerprint: str
) -> dict[str, float | int | list[str]]:
    """Write ``attributions.parquet``, ``coords/``, ``nonfinite.json`` and ``metrics.json`` from the parts,
    stamped with the config ``fingerprint`` (what downstream stages check).

    Raises ArtifactError naming unfinished questions. Returns the metrics.
    """
    out = Path(out_dir)
    table, failures = _read_parts(store, record_ids)
    _copy_coords(store, table["coords_file"], out)
    write_parquet(table, out / ATTRIBUTIONS_FILE, provenance(fingerprint), COLUMNS)
    nonfinite = Provenance("attribution_nonfinite", 1, fingerprint)
    write_json({"failures": failures}, out / NONFINITE_FILE, nonfinite)
    metrics = _metrics(table, len(record_ids), len(failures))
    write_json(metrics, out / METRICS_FILE, Provenance("attribution_metrics", 1, fingerprint))
    return metrics


def input_hashes(classifier_dir: str | Path, prompts_file: str | Path) -> dict[str, str]:
    """SHA-256 of the attribute stage's input artifacts (``inputs`` of :func:`run_attribution`)."""
    return {"classifier": sha256_dir(classifier_dir), "prompts": sha256_file(prompts_file)}


@dataclass(frozen=True)
class RunOutput:
    """Where an attribution run writes (``out_dir``) and its keys: ``fingerprint`` stamps the merged
    table; the parts in ``out_dir/parts`` (kept for resume) are keyed by ``part_fingerprint`` (the
    config's without the keys that only select questions; default ``fingerprint``), ``inputs`` (named
    hashes of the input artifacts, :func:`input_hashes`) and the code version."""

    out_dir: str | Path
    fingerprint: str
    part_fingerprint: str | None = None
    inputs: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Shard:
    """This process's shard (``index`` of ``count``) and the ``barrier`` where all shards meet before
    shard 0 merges (None: an in-process simulation that runs the other shards first)."""

    index: int = 0
    count: int = 1
    barrier: Callable[[], None] | None = None


def run_attribution(
    model: WidthModel,
    prompts: pd.DataFrame,
    cfg: AttributionConfig,
    *,
    pad_id: int,
    max_positions: int | None,
    out: RunOutput,
    shard: Shard = Shard(),
) -> dict[str, float | int] | None:
    """Check inputs, run this process's shard, wait for the others (``shard.barrier``), merge on shard 0.

    Inputs are checked before anything is written. Parts made under another key than ``out``'s are
    recomputed, with a log line naming what changed. Shard 0 returns the merged metrics, other shards
    None.
    """
    questions = select_questions(prompts, cfg, max_positions)
    question_budgets(questions, cfg)  # above attribution.max_grad_evals: refused before anything is written
    pool = None
    if cfg.reads_training_references:
        pool = ReferencePool(*reference_pool(prompts, cfg, max_positions))
    config = out.part_fingerprint or out.fingerprint
    key = ContentKey({"config": config, "code": code_version(), **dict(out.inputs or {})})
    store = PartStore(out.out_dir, key.digest, key.parts)
    store.note_key()
    run_shard(Attributor(model, cfg, pad_id, pool), questions, store, shard.index, shard.count)
    if shard.barrier is not None:
        shard.barrier()
    if shard.index != 0:
        return None
    return merge(store, [q.record_id for q in questions], out.out_dir, out.fingerprint)
