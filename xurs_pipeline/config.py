"""Structured config schema of the whole pipeline, registered with Hydra's ConfigStore.

``conf/`` (plain YAML, composable by DVC's Hydra integration) is the source of truth and
``params.yaml`` its composition. Every stage validates ``params.yaml`` against :class:`RootConfig`
before doing any work: unknown keys, wrong types and out-of-range values fail with the key's name.
Each package owns the dataclass of its own section (``xurs_pipeline/<pkg>/config.py``).

Besides each section's own checks, checks on the whole tree that no section's dataclass can make:

- text: no string value may hold a line break, control or format character (a newline in
  ``experiment_name`` would end the ``%`` comment of every LaTeX table and start a live line), and the
  experiment's name is a plain label (letters, digits, ``_ . + -``) that every output format, file name and
  DVC shows as it is;
- interpolation: ``conf/`` and overrides may refer to other keys (``${train.seed}``) but not call a
  resolver (``${oc.env:HOME}``): ``params.yaml`` and every experiment commit would store this machine's
  environment;
- completeness: a composition holds every key of the schema, so a ``~key`` override or a group option taken
  from another group (``train=../experiment/local``) cannot silently drop a section to its defaults.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from xurs_pipeline.attribution.config import (
    NO_RESULT_KEYS,
    RERUN_KEYS,
    AttributionConfig,
    check_gradient_budget,
    kronrod_first_pass,
    unread_keys,
    with_method,
)
from xurs_pipeline.contracts import prompts_hash
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.errors import XursError
from xurs_pipeline.evaluation.config import EvaluationConfig
from xurs_pipeline.io import config_hash
from xurs_pipeline.models.config import ModelConfig, model_name
from xurs_pipeline.train.config import TrainConfig


class ConfigError(XursError, ValueError):
    """A config is malformed: names the key and what is allowed."""


PRIVATE_DIRS = (".git", ".dvc")  # git's and DVC's own directories: no stage writes there

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")
"""What ``experiment_name`` may be: a label shown as is in LaTeX, HTML, Markdown, CSV and file names."""
UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}  # control, format (zero-width, bidi), line/paragraph breaks
RESOLVER = re.compile(r"\$\{\s*[A-Za-z_][\w.]*\s*:")  # ${name:...}: a resolver call, not a key reference


def walk(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every leaf of a config tree (list items as ``key[i]``)."""
    items = data.items() if isinstance(data, Mapping) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        where = f"{prefix}{key}" if isinstance(key, str) else f"{prefix.rstrip('.')}[{key}]"
        if isinstance(value, Mapping | list):
            yield from walk(value, f"{where}.")
        else:
            yield where, value


def first_unsafe_text(data: Mapping[str, Any]) -> str | None:
    """Why the first unsafe string of ``data`` is refused (naming its key), else None."""
    for where, value in walk(data):
        if not isinstance(value, str):
            continue
        bad = next((c for c in value if unicodedata.category(c) in UNSAFE_CATEGORIES), None)
        if bad is not None:
            return (
                f"{where}={value!r}: holds U+{ord(bad):04X} ({unicodedata.name(bad, 'a control')}); "
                "config text may not hold line breaks, control or invisible characters"
            )
    name = data.get("experiment_name")
    if isinstance(name, str) and not NAME.fullmatch(name):
        return (
            f"experiment_name={name!r}: must be 1-100 letters, digits, '_', '.', '+' or '-', starting with a "
            "letter or digit (it labels every table, page and file)"
        )
    return None


def first_resolver(data: Any) -> str | None:
    """The first ``key=value`` whose unresolved value calls a resolver (``${oc.env:...}``), else None."""
    for where, value in walk(data):
        if isinstance(value, str) and RESOLVER.search(value):
            return (
                f"{where}={value!r}: a resolver would write this machine's environment into params.yaml and "
                "every experiment's commit; write the value itself"
            )
    return None


def missing_keys(schema: Mapping[str, Any], composed: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The schema's keys (dotted; a section counts as one key when wholly absent) that ``composed`` lacks."""
    missing = []
    for key, value in schema.items():
        if key not in composed:
            missing.append(f"{prefix}{key}")
        elif isinstance(value, Mapping) and value and isinstance(composed[key], Mapping):
            missing += missing_keys(value, composed[key], f"{prefix}{key}.")
    return missing


@dataclass
class PathsConfig:
    """Where artifacts go. Fixed paths (no timestamps) so DVC can track them."""

    artifacts: str = "data"
    results: str = "results"

    def __post_init__(self) -> None:
        for key in ("artifacts", "results"):
            if not getattr(self, key).strip():
                raise ValueError(f"paths.{key}='': must name a directory (e.g. 'data')")


@dataclass
class RootConfig:
    experiment_name: str = "smoke"
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    attribution: AttributionConfig = field(default_factory=AttributionConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)


ConfigStore.instance().store(name="xurs_schema", node=RootConfig)


def validate(raw: DictConfig | dict[str, Any], source: str = "config") -> RootConfig:
    """Merge ``raw`` into the schema and instantiate it (running each section's range checks).

    Raises :class:`ConfigError` naming the offending key for unknown keys, wrong types and values out
    of range. Hydra's own ``hydra`` node, if present, is ignored.
    """
    data = OmegaConf.to_container(raw, resolve=True) if isinstance(raw, DictConfig) else dict(raw)
    data.pop("hydra", None)
    schema = OmegaConf.structured(RootConfig)
    misshapen = _first_unknown(schema, data) or _first_misshapen(schema, data)
    if misshapen:
        raise ConfigError(f"{source}: invalid config at key {misshapen}")
    nonfinite = _first_nonfinite(data)
    if nonfinite:
        raise ConfigError(f"{source}: {nonfinite}: must be a finite number")
    empty = next((where for where, value in walk(data) if value is None), None)
    if empty:  # no setting is optional: OmegaConf's own message would be several lines
        raise ConfigError(f"{source}: {empty} is empty (null): every setting takes a value; give it one")
    unsafe = first_unsafe_text(data)
    if unsafe:
        raise ConfigError(f"{source}: {unsafe}")
    try:
        merged = OmegaConf.merge(schema, data)
        cfg: RootConfig = OmegaConf.to_object(merged)  # type: ignore[assignment]
        _check_budgets(cfg)
        _check_selection(cfg)
        compare_configs(cfg)
        return cfg
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None)
        message = str(err.msg if hasattr(err, "msg") else err).strip().splitlines()
        raise ConfigError(
            f"{source}: invalid config at key {key!r}: {message[0] if message else err}"
        ) from err
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from err


def _check_budgets(cfg: RootConfig) -> None:
    """The main run's and every repeat's gradient budget (``repeat_config``: IG repeats take twice the
    points) within ``attribution.max_grad_evals`` on prompts of ``data.max_tokens`` (ValueError)."""
    where = f"data.max_tokens={cfg.data.max_tokens}"
    check_gradient_budget(cfg.attribution, cfg.data.max_tokens, where)
    for seed in cfg.evaluation.repeat_seeds:
        try:
            repeat = repeat_config(cfg, seed).attribution
        except ConfigError:
            continue  # a repeat that cannot be made is refused where repeats are made
        try:
            check_gradient_budget(repeat, cfg.data.max_tokens, where)
        except ValueError as err:
            raise ValueError(f"the repeat with evaluation.repeat_seeds {seed}: {err}") from None


def _check_selection(cfg: RootConfig) -> None:
    """One meaning for the question selection: ``attribution.record_ids`` names exactly the questions, so
    ``attribution.max_questions`` (the first n of the split) must be 0 with it (ValueError)."""
    at = cfg.attribution
    if at.record_ids and at.max_questions:
        raise ValueError(
            f"attribution.max_questions={at.max_questions} with attribution.record_ids: record_ids names "
            "every question to explain (all of them); set max_questions to 0 or list fewer ids"
        )


def _first_nonfinite(data: Any) -> str | None:
    """``key=value`` of the first inf or NaN number in a config tree (no setting takes one), else None."""
    for where, value in walk(data):
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where}={value}"
    return None


def _first_unknown(schema: DictConfig, data: Mapping[str, Any], prefix: str = "") -> str | None:
    """The first key the schema does not have, with the closest existing key when one is close
    (``difflib.get_close_matches``: a typo such as ``lr_haed`` for ``lr_head``); None if all are known."""
    for key, value in data.items():
        where = f"{prefix}{key}"
        if not isinstance(key, str) or key not in schema:
            section = f"section {prefix.rstrip('.')!r}" if prefix else "the config"
            close = difflib.get_close_matches(str(key), [str(k) for k in schema], n=1, cutoff=0.6)
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else f"; its keys: {', '.join(schema)}"
            return f"{where!r}: {section} has no such key{hint}"
        if OmegaConf.is_dict(schema[key]) and isinstance(value, Mapping):
            found = _first_unknown(schema[key], value, f"{where}.")
            if found:
                return found
    return None


def _first_misshapen(schema: DictConfig, data: Mapping[str, Any], prefix: str = "") -> str | None:
    """The first key whose value has the wrong shape (a mapping for a list, a scalar for a section, a
    mapping for a list item), which OmegaConf's merge reports without the key (or a traceback); None if
    every shape fits."""
    for key, value in data.items():
        if not isinstance(key, str) or key not in schema:
            continue  # unknown keys: the merge names them
        node, where = schema[key], f"{prefix}{key}"
        if OmegaConf.is_list(node) and isinstance(value, Mapping):
            return f"'{where}': expected a list, got a mapping {dict(value)!r}"
        if OmegaConf.is_list(node) and isinstance(value, list):
            found = _first_mapping_item(where, value)
            if found:
                return found
        if OmegaConf.is_dict(node):
            if not isinstance(value, Mapping):
                return f"'{where}': expected a section of keys, got {value!r}"
            found = _first_misshapen(node, value, f"{where}.")
            if found:
                return found
    return None


def _first_mapping_item(where: str, items: list[Any]) -> str | None:
    """The first item of a list of values that YAML read as a mapping: ``- name@key=value:`` unquoted (a
    ``:`` at the end or before a space makes a list item ``{name@key=value: null}``); None if none is."""
    for i, item in enumerate(items):
        if isinstance(item, Mapping):
            text = ", ".join(f"{k}:{'' if v is None else f' {v}'}" for k, v in item.items())
            return (
                f"'{where}[{i}]': expected a value, got a mapping {dict(item)!r}: YAML reads an unquoted "
                f"item holding ': ' or ending in ':' as a mapping; quote it ('{text}') or complete it"
            )
    return None


def load_params(path: str | os.PathLike[str] = "params.yaml") -> RootConfig:
    """Load and validate a composed ``params.yaml`` (ConfigError naming the file and line if not YAML);
    its paths must lie inside the file's directory (:func:`check_inside`)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: not found. Compose it with `xurs params` (or `dvc exp run`).")
    try:
        raw = OmegaConf.load(p)
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML: {err}") from err
    cfg = validate(raw, source=str(p))
    check_inside(cfg, p.parent, source=str(p))
    return cfg


def compose(overrides: list[str] | None = None, conf_dir: str | os.PathLike[str] = "conf") -> dict[str, Any]:
    """Compose ``conf/config.yaml`` with Hydra overrides into a plain dict (what DVC puts in params.yaml).

    An unknown config group option (``model=nosuch``) or bad override syntax raises :class:`ConfigError`
    in one line (with the available options), not Hydra's traceback.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=list(overrides or []))
    except HydraException as err:
        raise ConfigError(f"overrides {list(overrides or [])}: {_one_line(str(err))}") from err
    source = f"{conf_dir} composed with {list(overrides or [])}"
    resolver = first_resolver(OmegaConf.to_container(cfg, resolve=False))
    if resolver:
        raise ConfigError(f"{source}: {resolver}")
    composed: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    missing = missing_keys(OmegaConf.to_container(OmegaConf.structured(RootConfig)), composed)  # type: ignore[arg-type]
    if missing:
        raise ConfigError(
            f"{source}: no value for {', '.join(missing[:5])}: an override deleted it (~key) or a group "
            "option came from another group (e.g. train=../experiment/local); set every key, do not delete it"
        )
    return composed


def _one_line(message: str) -> str:
    """Hydra's multi-line message as one line: its first line, and the options it lists if any."""
    lines = message.splitlines()
    head = next((line.strip() for line in lines if line.strip()), "invalid overrides")
    start = next((i for i, line in enumerate(lines) if line.startswith("Available options")), None)
    if start is None:
        return head
    options = []
    for line in lines[start + 1 :]:
        if not line.startswith(("\t", " ")) or not line.strip():
            break
        options.append(line.strip())
    return f"{head} ({lines[start].strip().rstrip(':').lower()}: {', '.join(options)})"


def check_inside(cfg: RootConfig, root: str | os.PathLike[str], source: str = "config") -> None:
    """``paths.artifacts`` and ``paths.results`` must lie inside ``root`` (the repository: the directory
    of ``params.yaml``, where DVC runs the stages; DVC cannot track outputs outside it)."""
    base = Path(root).resolve()
    for key in ("artifacts", "results"):
        value = getattr(cfg.paths, key)
        target = (base / value).resolve()
        if target != base and base not in target.parents:
            raise ConfigError(
                f"{source}: paths.{key}={value!r} resolves to {target}, outside the repository {base}; "
                "use a path inside it (e.g. 'data')"
            )
        private = [base / d for d in PRIVATE_DIRS if target == base / d or base / d in target.parents]
        if private:
            raise ConfigError(
                f"{source}: paths.{key}={value!r} resolves to {target}, inside {private[0].name}/ (git's or "
                "DVC's own directory, where no output may go); use a path such as 'data'"
            )


def result_config(cfg: RootConfig) -> dict[str, Any]:
    """The config as a dict (``asdict``) without the keys that change no result (``NO_RESULT_KEYS``): what
    the tables and the report hash and stamp."""
    composed = asdict(cfg)
    composed["attribution"] = {k: v for k, v in composed["attribution"].items() if k not in NO_RESULT_KEYS}
    return composed


def configuration_label(cfg: RootConfig) -> str:
    """Row label of a configuration in tables (e.g. ``smoke/tiny/head_only/seed7``)."""
    return f"{cfg.experiment_name}/{model_name(cfg.model)}/{cfg.train.adaptation}/seed{cfg.train.seed}"


def train_run_hash(cfg: RootConfig) -> str:
    """Identity of a training run: the model and train sections (``train.resume`` excluded) and the
    prepared prompts' hash (:func:`~xurs_pipeline.contracts.prompts_hash`: only the data keys the prompts
    depend on).

    Stamped into the classifier's provenance; predict, attribute, mask_eval and checks refuse a classifier
    made under another hash.
    """
    train = {k: v for k, v in asdict(cfg.train).items() if k != "resume"}
    return config_hash({"model": asdict(cfg.model), "train": train, "prompts": prompts_hash(cfg.data)})


QUESTION_SELECTION = ("split", "max_questions", "record_ids", "result_filter")
"""``attribution.*`` keys that only choose which questions run: no finished question depends on them."""


def attribution_fingerprint(cfg: RootConfig, *, per_question: bool = False) -> str:
    """Identity of an attribution run: everything its result depends on: the attribution section (the
    progress display, the ``max_grad_evals`` limit, the attribute stage's own rerun and the keys only other
    methods read excluded) and the classifier's run (:func:`train_run_hash`, which holds the prompts'). The
    merged table carries it.
    ``per_question``: without :data:`QUESTION_SELECTION`, the key of one finished question (the resume
    parts carry it), so a run widened from 8 questions to 24 recomputes only the 16 new ones."""
    at = cfg.attribution
    dropped = {
        *NO_RESULT_KEYS,
        *RERUN_KEYS,
        "max_grad_evals",
        *unread_keys(at.method),
        *(QUESTION_SELECTION if per_question else ()),
    }
    attribution = {f.name: getattr(at, f.name) for f in fields(at) if f.name not in dropped}
    return config_hash({"attribution": attribution, "classifier": train_run_hash(cfg)})


def rerun_config(cfg: RootConfig) -> RootConfig | None:
    """The attribute stage's own rerun, where ``attribution.certified_rerun`` asks for it under the
    ``certified`` method (else None): the main run's config with other shifts (``attribution.seed`` + 1,
    modulo 2**32), the same budget and tolerances, and no rerun of its own. An independent estimate of
    equal cost, so its distance from the main run is about sqrt(2) times either's error: a stricter reading
    of App. B.4's vector criteria than a rerun at twice the budget."""
    at = cfg.attribution
    if at.method != "certified" or not at.certified_rerun:  # the key is read under certified alone
        return None
    return replace(cfg, attribution=replace(at, seed=(at.seed + 1) % 2**32, certified_rerun=False))


# a kronrod repeat's first intervals per main-run interval: no leaf of a partition of thirds (and their
# halvings) is a leaf of the main run's halvings, so every node of the repeat is another node
KRONROD_REPEAT_INTERVALS = 3


def repeat_config(cfg: RootConfig, seed: int) -> RootConfig:
    """The main run's config with the repeat's attribution seed and sample count. IG draws nothing at
    random, so a repeat with another seed alone would equal the main run (a check that cannot fail): an IG
    repeat starts from ``repeat_n_samples`` quadrature points, by default twice the main run's (App. B.3:
    "different sample counts"; Sec. 5.3: "increase the number of intermediate points"); a kronrod repeat
    starts from three times the main run's intervals (``KRONROD_REPEAT_INTERVALS``: twice would start from
    the main run's first bisection and refine to its very leaves, a second run that cannot differ); a
    certified repeat draws other shifts (its seed) with twice the budget and half the tolerances."""
    at, ev = cfg.attribution, cfg.evaluation
    if at.method == "ig":
        points = ev.repeat_n_samples or 2 * at.ig_points
        if points == at.ig_points:
            raise ConfigError(
                f"evaluation.repeat_n_samples={points} equals attribution.ig_points: an IG repeat with the "
                "same points would equal the main run; choose another count"
            )
        ig = replace(at, seed=seed, ig_points=points, ig_max_points=max(at.ig_max_points, points))
        return replace(cfg, attribution=ig)
    if at.method == "kronrod":  # deterministic too: the repeat starts from other intervals (other nodes)
        intervals = KRONROD_REPEAT_INTERVALS * at.kronrod_intervals
        first_pass = kronrod_first_pass(at.kronrod_rule, intervals, at.refs_per_collection)
        budget = max(at.kronrod_max_evals, first_pass)
        kronrod = replace(at, seed=seed, kronrod_intervals=intervals, kronrod_max_evals=budget)
        return replace(cfg, attribution=kronrod)
    if at.method == "certified":  # other shifts, twice the budget, half the tolerances (App. B.4's 2x run)
        certified = replace(
            at,
            seed=seed,
            certified_max_evals=2 * at.certified_max_evals,
            certified_tolerance=at.certified_tolerance / 2,
            certified_vector_tolerance=at.certified_vector_tolerance / 2,
        )
        return replace(cfg, attribution=certified)
    if at.method != "eg":  # a token method draws no samples: the seed alone
        if seed == at.seed:
            raise ConfigError(
                f"evaluation.repeat_seeds contains attribution.seed={seed}: that repeat would equal the main "
                "run; choose another seed"
            )
        return replace(cfg, attribution=replace(at, seed=seed))
    n_samples = ev.repeat_n_samples or at.n_samples
    if seed == at.seed and n_samples == at.n_samples:
        raise ConfigError(
            f"evaluation.repeat_seeds contains attribution.seed={seed} with the same sample count: that "
            "repeat would equal the main run; choose another seed or evaluation.repeat_n_samples"
        )
    return replace(cfg, attribution=replace(at, seed=seed, n_samples=n_samples))


def comparison_targets(cfg: RootConfig) -> list[str]:
    """The target functions of ``evaluation.targets`` the main run does not explain (``attribute_targets``
    attributes each, ``mask_eval`` zero-masks each)."""
    return [fn for fn in cfg.evaluation.targets if fn != cfg.attribution.target_fn]


def compare_configs(cfg: RootConfig) -> dict[str, RootConfig]:
    """The main run's config explaining with each of ``evaluation.compare_methods`` instead (its own keys at
    their defaults, :func:`~xurs_pipeline.attribution.config.with_method`), by method, in the listed order;
    ValueError naming the key and the method when it is the main run's method or cannot explain this run's
    questions."""
    configs = {}
    for method in cfg.evaluation.compare_methods:
        key = f"evaluation.compare_methods: {method!r}"
        if method == cfg.attribution.method:
            raise ValueError(f"{key} is attribution.method: compare with other methods")
        try:
            other = with_method(cfg.attribution, method)
            check_gradient_budget(other, cfg.data.max_tokens, f"data.max_tokens={cfg.data.max_tokens}")
        except ValueError as err:
            raise ValueError(f"{key}: {err}") from None
        configs[method] = replace(cfg, attribution=other)
    return configs


def target_config(cfg: RootConfig, fn: str) -> RootConfig:
    """The main run's config explaining target function ``fn`` instead."""
    return replace(cfg, attribution=replace(cfg.attribution, target_fn=fn))
