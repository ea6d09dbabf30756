"""The pipeline's contracts, declared once: every artifact (path, schema, columns, writer) and every stage
(its task module and command, what it reads and writes, the exact params keys it reads).

``dvc.yaml`` is generated from these declarations (``xurs dvc-yaml``, see :mod:`xurs_pipeline.dvc_yaml`);
writers and readers take paths, schema names and column lists from here instead of repeating them.
This module is a leaf: it imports nothing of the project but :mod:`xurs_pipeline.io` and the key tables of
:mod:`xurs_pipeline.attribution.config` (which imports nothing), so every package can use it without an
import circle.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

from xurs_pipeline.attribution.config import NO_RESULT_KEYS, RERUN_KEYS, unread_keys
from xurs_pipeline.io import Provenance, config_hash

Root = Literal["artifacts", "results"]
Kind = Literal["out", "detail", "metric"]


@dataclass(frozen=True)
class Artifact:
    """One file or directory a stage writes.

    path: relative to ``paths.<root>``; schema/version: the provenance header's (``""`` for directories
    and files without one); columns: the columns of a Parquet artifact readers rely on and check (its
    writer may add more: the attribute stage writes every ``attribution.records.COLUMNS``);
    writer: the stage that writes it; kind: ``metric`` files are the small headline JSON DVC shows
    (``dvc metrics show``, ``dvc exp show``), ``detail`` files the detail metrics the tables, the report and
    ``xurs gates-sweep`` read and the curves for ``dvc plots``, ``out`` the other outputs. DVC caches all
    three (``data/`` is git-ignored: an experiment holds them through its ``dvc.lock``).
    """

    name: str
    path: str
    writer: str
    root: Root = "artifacts"
    schema: str = ""
    version: int = 1
    columns: tuple[str, ...] = ()
    kind: Kind = "out"

    def at(self, paths: Any) -> Path:
        """The artifact's path under ``paths`` (a ``PathsConfig`` or mapping with artifacts/results)."""
        root = paths[self.root] if isinstance(paths, Mapping) else getattr(paths, self.root)
        return Path(root) / self.path

    def provenance(self, hash_: str = "") -> Provenance:
        """The provenance header written with (and expected of) this artifact."""
        if not self.schema:
            raise ValueError(f"artifact {self.name!r} ({self.path}) has no provenance header")
        return Provenance(self.schema, self.version, hash_)

    @property
    def dvc_path(self) -> str:
        return f"${{paths.{self.root}}}/{self.path}"


PROMPT_COLUMNS = (
    "record_id",
    "split",
    "source",
    "question",
    "options",
    "answer_idx",
    "prompt",
    "input_ids",
    "token_start",
    "token_end",
    "sections",
    "eligible",
    "truncated",
)
PREDICTION_COLUMNS = (
    "record_id",
    "answer_idx",
    "beliefs",
    "intermediate",
    "masses",
    "bel",
    "pl",
    "width",
    "betp",
    "predicted",
    "correct",
    "s",
    "r",
    "rescaled",
    "n_negative",
    "total_adjustment",
)
ATTRIBUTION_COLUMNS = (
    "record_id",
    "target",
    "method",
    "reference",
    "token_signed",
    "token_magnitude",
    "width_input",
    "residual",
    "error_bound",
    "budget_exhausted",
    "roughness",
    "reference_residual",
    "width_reference_natural",
    "width_reference_prepared",
    "prepared_input_ids",
    "grad_evals",
    "coords_file",
)
# one row per explained answer compared with the attribute stage's own rerun (empty without one)
RERUN_VECTOR_COLUMNS = ("record_id", "target", "cosine", "relative_distance")

_ARTIFACTS = (
    Artifact("backbone", "backbone", "backbone", schema="backbone"),
    Artifact("prompts", "prepared/prompts.parquet", "prepare", schema="prompts", columns=PROMPT_COLUMNS),
    Artifact("prepare_summary", "prepared/summary.json", "prepare", schema="prepare_summary", kind="detail"),
    Artifact("classifier", "train/classifier", "train", schema="classifier"),
    Artifact("train_metrics", "train/train_metrics.json", "train", schema="train_metrics", kind="detail"),
    Artifact(
        "predictions",
        "predict/predictions.parquet",
        "predict",
        schema="predictions",
        columns=(*PREDICTION_COLUMNS, "split"),
    ),
    Artifact(
        "prediction_metrics", "predict/metrics.json", "predict", schema="prediction_metrics", kind="detail"
    ),
    Artifact(
        "correction_audit",
        "predict/correction_audit.json",
        "predict",
        schema="correction_audit",
        kind="detail",
    ),
    Artifact("gates", "gates/gates.parquet", "gates", schema="gates"),  # columns: gate_results.GATE_COLUMNS
    Artifact("gate_metrics", "gates/gates.json", "gates", schema="gate_metrics", kind="detail"),
    Artifact(
        "attributions",
        "attribute/attributions.parquet",
        "attribute",
        schema="attributions",
        columns=ATTRIBUTION_COLUMNS,
    ),
    Artifact("coords", "attribute/coords", "attribute"),
    # attribution.certified_rerun: the rerun's attribute-format folder (rerun/seed<s>/, rerun/index.json;
    # only the index without a rerun) and App. B.4's vector figures of each explained answer against it
    Artifact("attribute_rerun", "attribute/rerun", "attribute"),
    Artifact(
        "rerun_vectors",
        "attribute/rerun_vectors.parquet",
        "attribute",
        schema="rerun_vectors",
        columns=RERUN_VECTOR_COLUMNS,
    ),
    Artifact("head_first", "train_head", "train_head"),  # issue 17: the head-only model LoRA starts from
    Artifact("repeats", "repeats", "attribute_repeats"),  # the main run repeated per evaluation.repeat_seeds
    Artifact("target_runs", "targets", "attribute_targets"),  # the comparison targets' attributions
    # evaluation.compare_methods: their attributions of the main run's questions (compare/runs/<method>/ and
    # index.json), how far every pair of methods agrees, and zero-masking with each method's ranking
    Artifact("compare_runs", "compare/runs", "attribute_compare"),
    Artifact("method_agreement", "compare/agreement.parquet", "attribute_compare", schema="method_agreement"),
    Artifact("method_masking", "compare/masking.parquet", "attribute_compare", schema="method_masking"),
    Artifact("method_metrics", "compare/metrics.json", "attribute_compare", kind="detail"),
    Artifact("nonfinite", "attribute/nonfinite.json", "attribute", schema="attribution_nonfinite"),
    Artifact(
        "attribution_metrics",
        "attribute/metrics.json",
        "attribute",
        schema="attribution_metrics",
        kind="detail",
    ),
    Artifact("mask_effects", "mask_eval/per_question.parquet", "mask_eval", schema="mask_eval"),
    Artifact("mask_metrics", "mask_eval/metrics.json", "mask_eval", kind="detail"),
    Artifact("clue_masking", "mask_eval/clue_masking.parquet", "mask_eval", schema="clue_masking"),
    Artifact("checks", "checks/checks.parquet", "checks", schema="checks"),
    Artifact("check_details", "checks/details", "checks"),
    Artifact("check_summary", "checks/checks.json", "checks", kind="detail"),
    Artifact("train_live", "train/dvclive", "train", kind="detail"),  # per-epoch curves (DVCLive)
    *(
        Artifact(f"{stage}_headline", f"{folder}/headline.json", stage, kind="metric")
        for stage, folder in (
            ("train", "train"),
            ("predict", "predict"),
            ("gates", "gates"),
            ("attribute", "attribute"),
            ("mask_eval", "mask_eval"),
            ("checks", "checks"),
        )
    ),
    # The two-cue swap control (docs/swap-control.md): models B and C (each <model>/classifier/ and
    # train_metrics.json, or a skip note), their and the re-initialised heads' attributions (one
    # attribute-format folder per run), the measures and the study's headline.
    Artifact("swap_model", "swap/train", "train_swap"),
    Artifact("swap_attributions", "swap/attribute", "attribute_swap"),
    Artifact("swap_study", "swap/study", "swap"),  # per_question.parquet and summary.json, or skipped
    Artifact("swap_headline", "swap/headline.json", "swap", kind="metric"),
    Artifact("swap_methods", "swap/methods.json", "swap", kind="metric"),  # per method: swap, agreement
    Artifact("config_check", "check.json", "check", kind="detail"),
    Artifact("tables", "tables", "tables", root="results"),
    Artifact("plots", "plots", "tables", root="results"),
    Artifact("html", "html", "report", root="results"),
)
ARTIFACTS: dict[str, Artifact] = {a.name: a for a in _ARTIFACTS}

# Plots DVC renders (`dvc plots show`), all written by the tables stage under <results>/plots.
PLOTS = (
    "width_by_correctness",
    "surviving_total",
    "advantage_per_question",
    "topk_curve",
    "residual_vs_evaluations",
)

ALL = "*"  # a params entry: every key of the composed config (stages stamping the whole config's hash)
PREPARED = "data.<source>"  # a params entry: the data keys of the config's data.source (data_keys)
# a params entry: the attribution keys the configured method reads (all but those only other methods read,
# attribution.config.unread_keys), for the stages that run that method alone; the attribute stage's own rerun
# (attribution.config.RERUN_KEYS) for that stage only
METHOD_READS = "attribution.<method>"
# keys that change no result (a progress bar): expanded by no entry, ALL and section.* included
NO_RESULT = tuple(f"attribution.{key}" for key in NO_RESULT_KEYS)
_DATA_KEYS = ("source", "max_tokens", "seed", "require_paired_lengths")
DATA_KEYS: dict[str, tuple[str, ...]] = {
    # The data keys the prepared prompts depend on: MedQA's, or the synthetic generators' (one list for all
    # of them, so a sweep across synthetic sources needs no other dvc.yaml). The prepare stage's params and
    # all that the prompts' provenance hash covers (prompts_hash): a MedQA key reruns no synthetic work.
    "medqa": (*_DATA_KEYS, "medqa_path", "medqa_files", "medqa_hub", "medqa_carve", "medqa_train_fraction"),
    "synthetic": (
        *_DATA_KEYS,
        "families",
        "cases_per_family",
        "v1_flaws",
        "pair_every",
        "cue2_first",
        "swap_order",
    ),
}


def data_keys(source: str) -> tuple[str, ...]:
    """The data keys prepare reads for ``data.source`` ``source`` (:data:`DATA_KEYS`)."""
    return DATA_KEYS["medqa" if source == "medqa" else "synthetic"]
_BACKBONE_KEYS = (
    "backbone",
    "source",
    "gguf_package",
    "gguf_file",
    "dtype",
    "local_files_only",
    "pad_token",
    "padding_side",
    "keep_layers",
    "tiny_vocab_size",
    "tiny_hidden_size",
    "tiny_layers",
    "tiny_heads",
    "tiny_seed",
)
_MASK_KEYS = (
    "seed",
    "n_random",
    "top_k_max",
    "mask_batch_size",
    "bootstrap_resamples",
    "confidence",
    "bootstrap_method",
    "max_questions",
    "device",
    "targets",
    "precision",
    "mask_reuse_prefix",
)
_MASKING = tuple(k for k in _MASK_KEYS if k != "targets")  # the protocol, without which targets to mask
_CHECK_KEYS = (
    "seed",
    "bootstrap_resamples",
    "confidence",
    "bootstrap_method",
    "numerics",
    "ig",
    "ranking",
    "comparison_runs",
    "reference_shift_warning",
    "randomisation_questions",
    "randomisation_blocks",
    "repeat_seeds",
)


@dataclass(frozen=True)
class Stage:
    """One DVC stage: its task is ``xurs_pipeline/tasks/<name>.py``, its command ``python -m stages <name>``.

    reads/writes: artifact names; params: the keys the task itself reads (a key it reads only through an
    artifact of another stage, whose hash that artifact carries, is that stage's): dotted keys
    (``section.key``), ``section.*`` for every key of a section (stages that hash or pass on the whole
    section), :data:`PREPARED` (the data keys of the configured source) or :data:`ALL`; checked by
    ``tests/params_reads.py``. comment: a line above the stage in ``dvc.yaml``. whole_file: ``dvc.yaml`` lists
    the params file itself, so that any edit of it, a key unknown to the schema included, reruns the stage
    (the check, which validates every key); otherwise the keys, none of :data:`NO_RESULT`."""

    name: str
    reads: tuple[str, ...]
    params: tuple[str, ...]
    comment: str = ""
    whole_file: bool = False

    @property
    def task(self) -> str:
        """The module holding the stage's ``run(cfg)``, its task."""
        return f"xurs_pipeline.tasks.{self.name}"

    @property
    def command(self) -> str:
        """What ``dvc.yaml`` runs: the one stage entry point, ``stages/__main__.py``, with the name."""
        return f"python -m stages {self.name}"

    @property
    def writes(self) -> tuple[Artifact, ...]:
        return tuple(a for a in _ARTIFACTS if a.writer == self.name)


_READ = (METHOD_READS,)  # the attribution keys of the configured method (the stages running it alone)

_STAGES = (
    Stage(
        "check",
        (),
        (ALL,),
        "Validates the whole config first: a bad key fails here, before any stage deletes an output.",
        whole_file=True,
    ),
    Stage("backbone", ("config_check",), tuple(f"model.{k}" for k in _BACKBONE_KEYS)),
    Stage(
        "prepare",
        ("backbone",),
        (PREPARED,),
        "MedQA experiments (data.source=medqa, no hub) also depend on the data directory.",
    ),
    Stage(
        "train_head",
        ("backbone", "prompts"),
        ("model.*", "train.*"),
        "App. B.1: with train.head_first the LoRA/partial run starts from a head-only model trained here.",
    ),
    Stage(
        "train",
        ("backbone", "prompts", "head_first"),
        ("model.*", "train.*"),
    ),
    Stage(
        "predict",
        ("classifier", "prompts"),
        ("train.predict_splits", "train.eval_batch_size", "train.feature_cache_dir", "experiment_name"),
        "The correction audit names the run (experiment_name, the model, adaptation and seed).",
    ),
    Stage(
        "gates",
        ("prompts", "predictions"),
        ("evaluation.gates", "evaluation.gate_splits"),
        "App. D.3 controlled-model gates from predictions alone: select swept training configs on dev gates.",
    ),
    Stage(
        "attribute",
        ("classifier", "prompts"),
        _READ,
        "Several processes or GPUs: torchrun --nproc_per_node N -m stages attribute (or accelerate launch).",
    ),
    Stage(
        "attribute_repeats",
        ("classifier", "prompts"),
        (*_READ, "evaluation.repeat_seeds", "evaluation.repeat_n_samples"),
        "App. B.3, Tables 2 and 7: the main attribution repeated with each evaluation.repeat_seeds seed.",
    ),
    Stage(
        "attribute_targets",
        ("classifier", "prompts"),
        (*_READ, "evaluation.targets"),
        "The comparison targets (predictive entropy, BetP) attributed with the main run's engine and budget.",
    ),
    Stage(
        "attribute_compare",
        ("classifier", "prompts", "attributions"),
        ("attribution.*", "evaluation.compare_methods", *(f"evaluation.{k}" for k in _MASKING)),
        "Each of evaluation.compare_methods on the main run's questions: agreement, cost, Table 1.",
    ),
    Stage(
        "mask_eval",
        ("classifier", "prompts", "attributions", "target_runs"),
        (*(f"evaluation.{k}" for k in _MASK_KEYS), *_READ),
    ),
    Stage(
        "checks",
        ("classifier", "prompts", "attributions", "coords", "repeats"),
        (*(f"evaluation.{k}" for k in _CHECK_KEYS), *_READ),
        "Also reads ${paths.artifacts}/<run> for each evaluation.comparison_runs entry.",
    ),
    Stage(
        "train_swap",
        ("backbone", "prompts"),
        ("data.source", "model.*", "train.*"),
        "The swap control's models B and C: the train stage's run on the two-cue prompts relabelled by cue 2,"
        " and on the texts whose cues agree.",
    ),
    Stage(
        "attribute_swap",
        ("classifier", "swap_model", "prompts"),
        (
            "data.source",
            "attribution.*",
            "evaluation.seed",
            "evaluation.swap_randomise",
            "train.adaptation",
            "train.partial_layers",
        ),
        "Models B's and C's, and the re-initialised heads', attributions of model A's questions"
        " (same references).",
    ),
    Stage(
        "swap",
        ("classifier", "swap_model", "prompts", "attributions", "swap_attributions"),
        (  # the attribution keys it reads (references, the estimator) reach it through the attributions
            "data.source",
            "evaluation.seed",
            "evaluation.bootstrap_resamples",
            "evaluation.confidence",
            "evaluation.swap_randomise",
            "evaluation.swap_methods",
            "evaluation.swap_clear_margin",
            "evaluation.swap_layer_ig_steps",
            "evaluation.device",
        ),
        "The swap study's measures and headline (swap accuracy, share difference, randomised, input-only).",
    ),
    Stage(
        "tables",
        (
            "prompts",
            "predictions",
            "correction_audit",
            "prediction_metrics",
            "attributions",
            "rerun_vectors",
            "mask_effects",
            "mask_metrics",
            "gates",
            "checks",
            "check_summary",
            "check_details",
            "target_runs",
        ),
        (ALL,),
        "Tables carry the hash of the whole composed config: every key is a param (a progress bar's aside).",
    ),
    Stage(
        "report",
        (
            "backbone",
            "prompts",
            "prepare_summary",
            "predictions",
            "prediction_metrics",
            "attributions",
            "rerun_vectors",
            "mask_effects",
            "mask_metrics",
            "check_summary",
            "tables",
            "plots",
            "swap_study",
            "compare_runs",
        ),
        (ALL,),
        "The report carries the hash of the whole config: every key is a param (a progress bar's aside).",
    ),
)
STAGES: dict[str, Stage] = {s.name: s for s in _STAGES}


def artifact(name: str) -> Artifact:
    """The declaration of artifact ``name`` (KeyError naming the known ones)."""
    try:
        return ARTIFACTS[name]
    except KeyError:
        raise KeyError(f"no artifact {name!r}; declared: {sorted(ARTIFACTS)}") from None


def param_keys(stage: str, composed: Mapping[str, Any], every_method: bool = False) -> list[str]:
    """The dotted params keys ``stage`` reads, expanded against a composed config (``section.*`` and
    :data:`ALL` become every key of the section / config, in the config's order; :data:`PREPARED` the data
    keys of its ``data.source``; :data:`METHOD_READS` the attribution keys its ``attribution.method`` reads
    (the rerun keys in the ``attribute`` stage's alone), or with ``every_method`` every attribution key:
    what ``dvc.yaml`` lists, so that an experiment that changes the method, ``dvc exp run -S
    attribution.method=...``, finds its keys there), none of :data:`NO_RESULT`."""
    keys: list[str] = []
    for entry in STAGES[stage].params:
        if entry == ALL:
            for section, value in composed.items():
                keys += [f"{section}.{k}" for k in value] if isinstance(value, Mapping) else [section]
        elif entry == PREPARED:
            keys += [f"data.{k}" for k in data_keys(composed["data"]["source"])]
        elif entry == METHOD_READS:
            unread = set() if every_method else set(unread_keys(composed["attribution"]["method"]))
            unread |= set() if stage == "attribute" else set(RERUN_KEYS)  # that stage's own rerun
            keys += [f"attribution.{k}" for k in composed["attribution"] if k not in unread]
        elif entry.endswith(".*"):
            section = entry[:-2]
            keys += [f"{section}.{k}" for k in composed[section]]
        else:
            keys.append(entry)
    return [key for key in keys if key not in NO_RESULT]


def stage_inputs(stage: str, composed: Mapping[str, Any]) -> list[str]:
    """Input paths of ``stage`` that depend on the config (DVC templates): the MedQA directory of
    ``prepare`` for local MedQA data, and the comparison runs ``checks`` reads."""
    data, evaluation = composed.get("data", {}), composed.get("evaluation", {})
    if stage == "prepare" and data.get("source") == "medqa" and not data.get("medqa_hub"):
        return ["${data.medqa_path}"]
    if stage == "checks":
        return [f"${{paths.artifacts}}/{run}" for run in evaluation.get("comparison_runs", [])]
    return []


def comparison_run(paths: Any, run: str) -> Path:
    """The directory of comparison run ``run`` (an ``evaluation.comparison_runs`` entry, see
    :func:`stage_inputs`) under ``paths.artifacts``."""
    return Path(paths["artifacts"] if isinstance(paths, Mapping) else paths.artifacts) / run


def repeat_dir(paths: Any, seed: int) -> Path:
    """The attribute_repeats stage's run with attribution seed ``seed``: ``repeats/seed<seed>``."""
    return ARTIFACTS["repeats"].at(paths) / f"seed{seed}"


def target_dir(paths: Any, fn: str) -> Path:
    """The attribute_targets stage's run explaining target function ``fn``: ``targets/<fn>``."""
    return ARTIFACTS["target_runs"].at(paths) / fn


def compare_dir(paths: Any, method: str) -> Path:
    """The attribute_compare stage's run with method ``method`` (an ``evaluation.compare_methods`` entry):
    ``compare/runs/<method>``."""
    return ARTIFACTS["compare_runs"].at(paths) / method


def check_detail(name: str) -> Artifact:
    """One per-question table of the checks stage under ``checks/details`` (schema ``checks_<name>``)."""
    folder = ARTIFACTS["check_details"]
    return Artifact(f"checks_{name}", f"{folder.path}/{name}.parquet", folder.writer, schema=f"checks_{name}")


def _child(node: Any, name: str) -> Any:
    return node[name] if isinstance(node, Mapping) else getattr(node, name)


def _value(node: Any, key: str) -> Any:
    """The value of dotted ``key`` in a config (dataclasses or mappings), a section as a plain dict."""
    for part in key.split("."):
        node = _child(node, part)
    return asdict(node) if is_dataclass(node) and not isinstance(node, type) else node


class _Keys(Mapping[str, Any]):
    """A config as :func:`param_keys` expands entries against it: iterating a section gives its key names
    without reading their values (only the values a stage's entries name are read)."""

    def __init__(self, node: Any) -> None:
        self._node = node

    def __getitem__(self, name: str) -> Any:
        value = _child(self._node, name)
        return _Keys(value) if isinstance(value, Mapping) or is_dataclass(value) else value

    def __iter__(self) -> Iterator[str]:
        node = self._node
        return iter([f.name for f in fields(node)] if is_dataclass(node) else list(node))

    def __len__(self) -> int:
        return len(list(iter(self)))


def stage_hash(stage: str, cfg: Any) -> str:
    """Hash of exactly the params ``stage`` reads (stamped into its outputs' provenance headers)."""
    return config_hash({key: _value(cfg, key) for key in param_keys(stage, _Keys(cfg))})


def prompts_hash(data: Any) -> str:
    """The prepared prompts' provenance hash: ``io.config_hash`` of the data keys of ``data``'s source
    (:func:`data_keys`; a ``DataConfig`` or its mapping)."""
    source = _child(data, "source")
    return config_hash({key: _value(data, key) for key in data_keys(source)})


def swap_summary(paths: Any) -> Path:
    """The swap study's ``summary.json``, inside the ``swap_study`` directory under ``paths``."""
    return artifact("swap_study").at(paths) / "summary.json"
