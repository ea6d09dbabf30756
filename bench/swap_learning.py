"""Benchmark: do the swap study's two models learn their cues, and what does training them cost?

    python bench/swap_learning.py [--override KEY=VALUE ...] [--json out.json]

Run where ``xurs params experiment=controlled_swap <overrides> && dvc repro prepare`` has run (the same
overrides here). Trains model A (labels by cue 1, the ``train`` stage's run) and model B (the same texts
labelled by cue 2, ``train_swap``'s run) in this process, each into a scratch directory, and prints per
model: the training wall seconds, the best epoch of those run and its dev accuracy, the accuracy where its own
cue resolves a test question (``evaluation/swap/inputs.role_accuracy``, the swap study's own measure) pooled
and per cue order (which cue the text states first), and on how many probes (every test probe, both
orders) it depends on its own cue under the text edits (``evaluation/swap/behaviour.py``). The load average
before and after goes with it: a shared machine's seconds are upper bounds.
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
import pandas as pd

from xurs_pipeline.attribution.model import model_device
from xurs_pipeline.config import compose, train_run_hash, validate
from xurs_pipeline.contracts import artifact
from xurs_pipeline.data.dataset import data_config_hash, load_records
from xurs_pipeline.data.schema import read_prompts
from xurs_pipeline.data.synthetic.swap import cue_order, relabel_by_cue
from xurs_pipeline.evaluation.swap.behaviour import cue_dependence, edit_widths, label_widths
from xurs_pipeline.evaluation.swap.inputs import role_accuracy, role_test_records
from xurs_pipeline.evaluation.swap.roles import ROLES, TRAINING_CUE
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.runs.training import fit_into, training_run
from xurs_pipeline.train.predict import classifier_outputs


def train_role(cfg, role: str, out: Path) -> dict:
    """Train ``role``'s model as its stage does into ``out``; its fit summary with the wall seconds."""
    cue = ROLES[role].cue
    options = {} if cue == 1 else {"relabel": partial(relabel_by_cue, cue=cue), "variant": f"cue{cue}"}
    start = time.perf_counter()
    summary = fit_into(training_run(cfg, **options), out)
    return {**summary, "train_s": time.perf_counter() - start}


def accuracy_by_order(cfg, prompts: pd.DataFrame, loaded, cue: int) -> dict[str, dict]:
    """``role_accuracy`` on the test records with a result: pooled, and per cue order (order1, order2)."""
    model, tokenizer = loaded
    rows = role_test_records(prompts, cue)
    ids = [list(map(int, x)) for x in rows["input_ids"]]
    masses = classifier_outputs(
        model, ids, tokenizer.pad_token_id, cfg.train.eval_batch_size, device=model_device(model)
    ).masses
    order = rows["cue_positions"].map(cue_order).to_numpy()
    out = {"pooled": role_accuracy(masses, rows, cue)}
    for k in (1, 2):
        keep = order == k
        out[f"order{k}"] = role_accuracy(masses[keep], rows[keep], cue)
    return out


def behaviour_by_order(cfg, prompts: pd.DataFrame, loaded, role: str) -> dict[str, str]:
    """Every test probe: does ``role``'s model depend on its own cue under the text edits? k of n by order."""
    probe_rows = prompts[(prompts["split"] == "test") & ~prompts["has_result"].astype(bool)]
    order = dict(zip(probe_rows["record_id"], probe_rows["cue_positions"].map(cue_order), strict=True))
    records = [r for r in load_records(cfg.data) if r.record_id in order]
    model, tokenizer = loaded
    reader = label_widths(
        model, tokenizer, cfg.data.max_tokens, cfg.train.eval_batch_size, model_device(model)
    )
    dep = cue_dependence(edit_widths(records, reader), role)
    dep["as_trained"] = dep["depends_on"] == TRAINING_CUE[role]
    dep["order"] = dep["record_id"].map(order)
    out = {"pooled": f"{int(dep['as_trained'].sum())}/{len(dep)}"}
    for k, part in dep.groupby("order"):
        out[f"order{k}"] = f"{int(part['as_trained'].sum())}/{len(part)}"
    return out


def trained_role(role: str, out: Path) -> dict | None:
    """The fit summary an earlier run of this script saved for ``role`` in ``out`` (None if it has none)."""
    saved = out / Path(artifact("train_metrics").path).name
    return {**json.loads(saved.read_text()), "train_s": float("nan")} if saved.exists() else None


def measure(cfg, out: Path, evaluate_only: bool) -> dict[str, dict]:
    """Per role: training, accuracy where its cue resolves the question, behaviour on the probes."""
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    results = {}
    for role in ROLES:
        fit = trained_role(role, out / role) if evaluate_only else train_role(cfg, role, out / role)
        if fit is None:
            continue
        loaded = load_classifier(out / role / "classifier", config_hash=train_run_hash(cfg))
        loaded[0].eval().requires_grad_(False)
        best = next((e for e in fit["history"] if e["epoch"] == fit["best_epoch"]), {})
        results[role] = {
            "train_s": round(fit["train_s"], 1),
            "best_epoch": fit["best_epoch"],
            "epochs_run": fit["epochs_run"],
            "dev_accuracy": best.get("dev_accuracy"),
            "accuracy_own_cue": accuracy_by_order(cfg, prompts, loaded, ROLES[role].cue),
            "as_trained": behaviour_by_order(cfg, prompts, loaded, role),
        }
    return results


def report(results: dict[str, dict]) -> None:
    for role, r in results.items():
        acc = r["accuracy_own_cue"]
        per = "  ".join(f"{k} {v['accuracy_own_cue']:.2f} (n {v['n_own_cue']})" for k, v in acc.items())
        print(
            f"model {role}: train {r['train_s']:.0f} s, best epoch {r['best_epoch']}/{r['epochs_run']}, "
            f"dev accuracy {r['dev_accuracy']}"
        )
        print(f"  own cue resolves it: {per}")
        print(f"  behaves as trained on probes: {r['as_trained']}")


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--experiment", default="controlled_swap")
    parser.add_argument("--override", nargs="*", default=[], help="Hydra overrides of its `xurs params`")
    parser.add_argument("--out", type=Path, default=C.ROOT / ".cache" / "xurs" / "swap_learning")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--evaluate-only", action="store_true", help="read the models an earlier run trained")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")  # the epochs as they end
    cfg = validate(compose([f"experiment={args.experiment}", *args.override], conf_dir=C.ROOT / "conf"))
    load_before = os.getloadavg()
    start = time.perf_counter()
    results = measure(cfg, args.out, args.evaluate_only)
    print(f"overrides: {' '.join(args.override) or '(none)'}")
    report(results)
    print(
        f"total {time.perf_counter() - start:.0f} s; load average {load_before[0]:.2f} -> "
        f"{os.getloadavg()[0]:.2f}"
    )
    if args.json:
        args.json.write_text(json.dumps({"overrides": args.override, "roles": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
