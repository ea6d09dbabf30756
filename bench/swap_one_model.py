"""One model's half of the swap study, from a ``controlled_swap`` project where that model's attribution ran
(the other stages need not have): its accuracy by cue, and per probe whether its attribution and the
input-only ranking (no model: embedding distances to the same references) put its learned cue's best token
above every token of the other cue, also on the probes where the input alone prefers the other cue.

    python bench/swap_one_model.py PROJECT [PROJECT ...] [--role A|B] [--gguf FILE] [--json OUT.json]

Model A (labels follow cue 1) reads ``data/attribute/attributions.parquet`` and its accuracy from
``data/predict/predictions.parquet``; model B (cue 2) reads ``data/swap/attribute/B`` (the finished
``attributions.parquet``, or the per-question ``parts/`` of a run still going) and its accuracy from its
classifier (``data/swap/train/classifier``). The input-only ranking reads the backbone's embedding from the
GGUF file (``--gguf``, default: the one ``model.*`` names). docs/swap-control.md's GPU table (model A) and
third-seed rows are this script's output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.config import load_params
from xurs_pipeline.evaluation.swap import LEARNED_CUE, Proportion, score_frame, wilson
from xurs_pipeline.evaluation.swap_study import input_only_magnitudes, role_accuracy, role_test_records
from xurs_pipeline.models.checkpoint import load_classifier
from xurs_pipeline.models.gguf import load_gguf, resolve_gguf_path
from xurs_pipeline.tasks.swap import role_test_accuracy


def embedding_and_pad(gguf: Path, pad_token: str) -> tuple[np.ndarray, int]:
    """The backbone's input embedding (vocab, hidden) in float64 and the pad token's id."""
    model, tokenizer = load_gguf(gguf, torch.float32)
    pad = pad_token or tokenizer.pad_token
    return model.get_input_embeddings().weight.detach().double().numpy(), tokenizer.convert_tokens_to_ids(pad)


def attributions_of(project: Path, role: str) -> pd.DataFrame:
    """The role's explanations: the finished run's parquet, else the parts written so far."""
    folder = project / ("data/attribute" if role == "A" else "data/swap/attribute/B")
    if (folder / "attributions.parquet").is_file():
        return pd.read_parquet(folder / "attributions.parquet")
    parts = sorted((folder / "parts").glob("*.parquet"))
    if not parts:
        raise FileNotFoundError(f"{folder}: no attributions.parquet and no parts")
    return pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)


def accuracy_of(project: Path, role: str, prompts: pd.DataFrame) -> dict:
    """The role's test accuracy by which cue resolves the question (``swap_study.role_accuracy``)."""
    cfg = load_params(project / "params.yaml")
    cue = LEARNED_CUE[role] + 1
    if role == "B":
        return role_test_accuracy(cfg, prompts, load_classifier(project / "data/swap/train/classifier"), cue)
    predictions = pd.read_parquet(project / "data/predict/predictions.parquet").set_index("record_id")
    test = role_test_records(prompts, cue)
    masses = torch.tensor(np.stack([np.asarray(predictions.loc[r, "masses"], dtype=np.float64)
                                    for r in test["record_id"]]))  # fmt: skip
    return role_accuracy(masses, test, cue)


def one_model(project: Path, role: str, embedding: np.ndarray, pad_id: int) -> dict:
    """One project's figures for ``role``: accuracy by cue; learned cue first under the model, the input."""
    cfg = load_params(project / "params.yaml")
    prompts = pd.read_parquet(project / "data/prepared/prompts.parquet")
    attributions = attributions_of(project, role)
    probes = sorted(attributions["record_id"])
    input_only = input_only_magnitudes(prompts, probes, cfg.attribution, pad_id, embedding)
    rows = [
        {"ranking": "trained", "role": role, "record_id": r.record_id, "token_magnitude": r.token_magnitude}
        for r in attributions.itertuples()
    ] + [{"ranking": "input_only", "role": role, "record_id": rid, "token_magnitude": input_only[rid]}
         for rid in probes]  # fmt: skip
    cues = {
        rid: [list(map(int, c)) for c in p]
        for rid, p in zip(prompts["record_id"], prompts["cue_positions"], strict=True)
    }
    scores = score_frame(pd.DataFrame(rows), cues)
    first = scores.pivot(index="record_id", columns="ranking", values="learned_first")
    input_prefers_other = first[~first["input_only"].astype(bool)]

    def proportion(p: Proportion) -> dict:
        return {"k": p.k, "n": p.n, "value": p.value, "low": p.low, "high": p.high}

    return {
        "role": role,
        "data_seed": cfg.data.seed,
        "families": list(cfg.data.families),
        "attribution": f"{cfg.attribution.method}, {cfg.attribution.reference_alignment} alignment, "
        f"{cfg.attribution.refs_per_collection} references, tolerance {cfg.attribution.kronrod_tolerance}",
        "accuracy": accuracy_of(project, role, prompts),
        "learned_first": proportion(wilson(first["trained"].astype(bool).tolist())),
        "input_only_learned_first": proportion(wilson(first["input_only"].astype(bool).tolist())),
        "learned_first_where_input_prefers_other": proportion(wilson(input_prefers_other["trained"].tolist()))
        if len(input_prefers_other) else None,
        "R_median": float(attributions["residual"].abs().median()),
        "R_max": float(attributions["residual"].abs().max()),
        "grad_evals_per_probe": float(attributions["grad_evals"].mean()),
    }  # fmt: skip


KEYS = ("learned_first", "input_only_learned_first", "learned_first_where_input_prefers_other")


def table(results: dict[str, dict]) -> str:
    def k_of_n(p: dict | None) -> str:
        return "—" if p is None else f"{p['k']}/{p['n']} ({p['value']:.2f} [{p['low']:.2f}, {p['high']:.2f}])"

    lines = [
        "| model | data.seed | accuracy, own cue resolves (n) | learned cue first "
        "| input only: learned cue first | learned cue first where the input prefers the other "
        "| R median / max | evaluations a probe |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results.values():
        acc = r["accuracy"]
        lines.append(
            f"| {r['role']} | {r['data_seed']} | {acc['accuracy_own_cue']:.2f} ({acc['n_own_cue']}) "
            + "".join(f"| {k_of_n(r[key])} " for key in KEYS)
            + f"| {r['R_median']:.4f} / {r['R_max']:.3f} | {r['grad_evals_per_probe']:.0f} |"
        )
    if len(results) > 1:
        pooled = []
        for key in KEYS:
            ps = [r[key] for r in results.values() if r[key]]
            k, n = sum(p["k"] for p in ps), sum(p["n"] for p in ps)
            p = wilson([True] * k + [False] * (n - k))
            pooled.append(f"{p.k}/{p.n} ({p.value:.2f} [{p.low:.2f}, {p.high:.2f}])")
        lines.append("| all | | | " + " | ".join(pooled) + " | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("projects", type=Path, nargs="+")
    parser.add_argument("--role", choices=("A", "B"), default="A", help="model A (cue 1) or model B (cue 2)")
    parser.add_argument(
        "--gguf", type=Path, help="the backbone's GGUF file (default: model.* of the project)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    m = load_params(args.projects[0] / "params.yaml").model
    gguf = args.gguf or resolve_gguf_path(m.source, m.gguf_package, m.gguf_file)
    embedding, pad_id = embedding_and_pad(gguf, m.pad_token)
    results = {str(p): one_model(p, args.role, embedding, pad_id) for p in args.projects}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
