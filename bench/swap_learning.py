"""Benchmark: do the swap study's three models learn, and what does training them cost?

    python bench/swap_learning.py [--override KEY=VALUE ...] [--models NAME ...] [--json out.json]

Run where ``xurs params experiment=controlled_swap <overrides> && dvc repro prepare`` has run (the same
overrides here). Trains model A (labels by cue 1, the ``train`` stage's run), model B (the same texts
labelled by cue 2) and model C (the texts whose two cues name the same label), B and C as ``train_swap``
trains them, in this process, each into a scratch directory, and prints per model: the training wall
seconds, the best epoch of those run and its dev accuracy. For A and B: the accuracy where its own cue
resolves a test question (``evaluation/swap/inputs.role_accuracy``, the swap study's own measure) pooled
and per cue order (which cue the text states first), and on how many probes (every test probe, both
orders) it depends on its own cue under the text edits (``evaluation/swap/behaviour.py``). The load average
before and after goes with it: a shared machine's seconds are upper bounds.

Model C, and the labellings ``--models`` also trains (``LABELLINGS``: ``mixed``, cue 1 on a hashed half of
the texts and cue 2 on the rest; ``share70``, cue 1 on 0.7 of them), are read by each cue and where the
test question's cues agree or conflict. For every model it prints the probes' dependence: how many (model,
probe) pairs are clear (margin >= ``evaluation.swap_clear_margin``), how many of those depend on cue 1 and
on cue 2, and the margins' quantiles.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import numpy as np
import pandas as pd
import torch

from xurs_pipeline.config import compose, train_run_hash, validate
from xurs_pipeline.contracts import artifact
from xurs_pipeline.credal import pignistic
from xurs_pipeline.data.dataset import data_config_hash, load_records
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.data.synthetic.swap import cue_order, relabel_mixed
from xurs_pipeline.evaluation.swap.behaviour import EDITS, cue_dependence, label_widths
from xurs_pipeline.evaluation.swap.inputs import role_accuracy, role_test_records
from xurs_pipeline.evaluation.swap.roles import CUE_ROLES, FIRST_ROLE, ROLES
from xurs_pipeline.evaluation.swap.yardsticks import yardstick_widths
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.runs.training import fit_into, training_run
from xurs_pipeline.train.predict import prompt_masses

# the labellings beside the two roles: name -> prompts -> prompts (labels no single cue decides)
LABELLINGS = {
    "mixed": partial(relabel_mixed, share_cue1=0.5),
    "share70": partial(relabel_mixed, share_cue1=0.7),
}
MARGIN_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def train_model(cfg, name: str, out: Path) -> dict:
    """Train role ``name``'s model as its stage does, or a ``LABELLINGS`` model, into ``out``; its fit
    summary with the wall seconds."""
    if name in LABELLINGS:
        options = {"relabel": LABELLINGS[name], "variant": name}
    else:  # as train_swap trains B and C (model A: the train stage's run)
        role = ROLES[name]
        options = {} if name == FIRST_ROLE else {"relabel": role.relabel, "variant": role.labels}
    start = time.perf_counter()
    summary = fit_into(training_run(cfg, **options), out)
    return {**summary, "train_s": time.perf_counter() - start}


def test_masses(cfg, rows: pd.DataFrame, loaded) -> torch.Tensor:
    """The model's masses (n, 15) on the prepared ``rows``."""
    model, tokenizer = loaded
    return prompt_masses(model, rows, tokenizer.pad_token_id, cfg.train.eval_batch_size)


def accuracy_by_order(cfg, prompts: pd.DataFrame, loaded, cue: int) -> dict[str, dict]:
    """``role_accuracy`` on the test records with a result: pooled, and per cue order (order1, order2)."""
    rows = role_test_records(prompts, cue)
    masses = test_masses(cfg, rows, loaded)
    order = rows["cue_positions"].map(cue_order).to_numpy()
    out = {"pooled": role_accuracy(masses, rows, cue)}
    for k in (1, 2):
        keep = order == k
        out[f"order{k}"] = role_accuracy(masses[keep], rows[keep], cue)
    return out


def agreeing_and_conflicting(cfg, prompts: pd.DataFrame, loaded) -> dict[str, float | int]:
    """``agreement_accuracy`` of the model on the test records with a result."""
    rows = role_test_records(prompts, 1)
    predicted = pignistic(test_masses(cfg, rows, loaded).double()).argmax(-1).numpy()
    return agreement_accuracy(predicted, [list(a) for a in rows["cue_answers"]], list(rows["cue_resolved"]))


def agreement_accuracy(predicted: np.ndarray, answers: list, resolved: list) -> dict[str, float | int]:
    """predicted (n,) options; answers, resolved: each record's two cues' labels and resolved flags. Accuracy
    where both cues name one label (the texts an ``agree`` model trained on), and where both cues resolve
    the question to different labels, the share of predictions that follow cue 1 and cue 2."""
    labels = np.array(answers)  # (n, 2)
    agree = labels[:, 0] == labels[:, 1]
    conflict = ~agree & np.array([all(r) for r in resolved], dtype=bool)
    out: dict[str, float | int] = {"n_agreeing": int(agree.sum()), "n_conflicting": int(conflict.sum())}
    out["accuracy_agreeing"] = float((predicted == labels[:, 0])[agree].mean())
    for k in (1, 2):
        out[f"conflicting_follow_cue{k}"] = float((predicted == labels[:, k - 1])[conflict].mean())
    return out


def probe_dependence(cfg, prompts: pd.DataFrame, loaded) -> pd.DataFrame:
    """Every test probe (both orders): the label's width on it and its edits, each cue's effect, depends_on
    (1, 2; 0 on a tie), margin and the cue order (``evaluation/swap/behaviour.py``); one row a probe."""
    probe_rows = prompts[(prompts["split"] == "test") & ~prompts["has_result"].astype(bool)]
    order = dict(zip(probe_rows["record_id"], probe_rows["cue_positions"].map(cue_order), strict=True))
    records = [r for r in load_records(cfg.data) if r.record_id in order]
    model, tokenizer = loaded
    reader = label_widths(model, tokenizer, cfg.data.max_tokens, cfg.train.eval_batch_size)
    dep = cue_dependence(yardstick_widths(records, reader, "text_edits"), FIRST_ROLE).drop(columns=["role"])
    dep["order"] = dep["record_id"].map(order)
    return dep


def as_trained_by_order(dep: pd.DataFrame, cue: int) -> dict[str, str]:
    """On how many probes (``probe_dependence``'s rows) the model depends on ``cue``: k of n, by order."""
    out = {"pooled": f"{int((dep['depends_on'] == cue).sum())}/{len(dep)}"}
    for k, part in dep.groupby("order"):
        out[f"order{k}"] = f"{int((part['depends_on'] == cue).sum())}/{len(part)}"
    return out


def dependence_summary(dep: pd.DataFrame, clear_margin: float) -> dict:
    """``probe_dependence``'s rows -> probes, clear pairs (decided, margin >= ``clear_margin``), how many
    clear pairs depend on cue 1 and on cue 2 (pooled and by order), every probe's depends_on counts and the
    margins' ``MARGIN_QUANTILES``."""
    clear = dep[(dep["depends_on"] != 0) & (dep["margin"] >= clear_margin)]
    out: dict = {"probes": len(dep), "clear": len(clear)}
    for k in (1, 2):
        out[f"clear_on_cue{k}"] = int((clear["depends_on"] == k).sum())
        out[f"on_cue{k}"] = int((dep["depends_on"] == k).sum())
    for order, part in clear.groupby("order"):
        out[f"clear_order{order}"] = {f"cue{k}": int((part["depends_on"] == k).sum()) for k in (1, 2)}
    out["margin_quantiles"] = {str(q): round(float(dep["margin"].quantile(q)), 3) for q in MARGIN_QUANTILES}
    return out


def trained_model(name: str, out: Path) -> dict | None:
    """The fit summary an earlier run of this script saved for ``name`` in ``out`` (None if it has none)."""
    saved = out / Path(artifact("train_metrics").path).name
    return {**json.loads(saved.read_text()), "train_s": float("nan")} if saved.exists() else None


def measure(cfg, out: Path, models: list[str], evaluate_only: bool) -> dict[str, dict]:
    """Per model: training, accuracy where a cue resolves the question, dependence on the probes."""
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    results = {}
    for name in models:
        fit = trained_model(name, out / name) if evaluate_only else train_model(cfg, name, out / name)
        if fit is None:
            continue
        loaded = load_classifier(out / name / "classifier", config_hash=train_run_hash(cfg))
        loaded[0].eval().requires_grad_(False)
        best = next((e for e in fit["history"] if e["epoch"] == fit["best_epoch"]), {})
        dep = probe_dependence(cfg, prompts, loaded)
        result = {
            "train_s": round(fit["train_s"], 1),
            "n_train": fit.get("n_train"),
            "best_epoch": fit["best_epoch"],
            "epochs_run": fit["epochs_run"],
            "dev_accuracy": best.get("dev_accuracy"),
        }
        if name in CUE_ROLES:
            cue = ROLES[name].cue
            result["accuracy_own_cue"] = accuracy_by_order(cfg, prompts, loaded, cue)
            result["as_trained"] = as_trained_by_order(dep, cue)
        else:
            result["cues_agree_or_conflict"] = agreeing_and_conflicting(cfg, prompts, loaded)
            result["accuracy_by_cue"] = {
                f"cue{k}": accuracy_by_order(cfg, prompts, loaded, k) for k in (1, 2)
            }
        result["dependence"] = dependence_summary(dep, cfg.evaluation.swap_clear_margin)
        columns = ["record_id", "order", *EDITS, "effect_1", "effect_2", "depends_on", "margin"]
        result["probes"] = dep[columns].round(4).to_dict(orient="records")
        results[name] = result
    return results


def _accuracy_line(acc: dict) -> str:
    return "  ".join(f"{k} {v['accuracy_own_cue']:.2f} (n {v['n_own_cue']})" for k, v in acc.items())


def report(results: dict[str, dict]) -> None:
    for name, r in results.items():
        print(
            f"model {name}: train {r['train_s']:.0f} s on {r['n_train']} texts, best epoch "
            f"{r['best_epoch'] + 1}/{r['epochs_run']} (from 1), dev accuracy {r['dev_accuracy']}"
        )
        if "accuracy_own_cue" in r:
            print(f"  own cue resolves it: {_accuracy_line(r['accuracy_own_cue'])}")
            print(f"  behaves as trained on probes: {r['as_trained']}")
        for cue, acc in r.get("accuracy_by_cue", {}).items():
            print(f"  right by {cue} where {cue} resolves it: {_accuracy_line(acc)}")
        if "cues_agree_or_conflict" in r:
            print(f"  where the cues agree or conflict: {r['cues_agree_or_conflict']}")
        d = r["dependence"]
        print(
            f"  probes: {d['clear']}/{d['probes']} clear; clear on cue 1 {d['clear_on_cue1']}, on cue 2 "
            f"{d['clear_on_cue2']}; all on cue 1 {d['on_cue1']}, on cue 2 {d['on_cue2']}; margin quantiles "
            f"{d['margin_quantiles']}"
        )


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--experiment", default="controlled_swap")
    parser.add_argument("--override", nargs="*", default=[], help="Hydra overrides of its `xurs params`")
    parser.add_argument("--out", type=Path, default=C.ROOT / ".cache" / "xurs" / "swap_learning")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--evaluate-only", action="store_true", help="read the models an earlier run trained")
    models = [*ROLES, *LABELLINGS]
    parser.add_argument("--models", nargs="+", choices=models, default=list(ROLES), help="which to train")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")  # the epochs as they end
    cfg = validate(compose([f"experiment={args.experiment}", *args.override], conf_dir=C.ROOT / "conf"))
    load_before = os.getloadavg()
    start = time.perf_counter()
    results = measure(cfg, args.out, args.models, args.evaluate_only)
    print(f"overrides: {' '.join(args.override) or '(none)'}")
    report(results)
    load = [round(load_before[0], 2), round(os.getloadavg()[0], 2)]
    print(f"total {time.perf_counter() - start:.0f} s; load average {load[0]:.2f} -> {load[1]:.2f}")
    if args.json:
        kept = {"overrides": args.override, "models": args.models, "load_average": load, "roles": results}
        args.json.write_text(json.dumps(kept, indent=2) + "\n")


if __name__ == "__main__":
    main()
