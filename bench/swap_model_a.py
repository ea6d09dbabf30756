"""Model A's half of the swap study, from projects where ``controlled_swap`` ran up to its ``attribute``
stage (the swap stages need not have run): model A's accuracy by cue, and per probe whether model A's
attribution and the input-only ranking (no model: embedding distances to the same references) put cue 1's
best token above every token of cue 2, also on the probes where the input alone prefers cue 2.

    python bench/swap_model_a.py PROJECT [PROJECT ...] [--gguf FILE] [--json OUT.json]

A project needs ``params.yaml``, ``data/prepared/prompts.parquet``, ``data/predict/predictions.parquet``
and ``data/attribute/attributions.parquet``. The input-only ranking reads the backbone's embedding from the
GGUF file (``--gguf``, default: the one ``model.*`` names; the GPU run's path does not exist here).
docs/swap-control.md's GPU table is this script's output on the H100 run's seeds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from xurs_pipeline.config import load_params
from xurs_pipeline.data.synthetic.swap import relabel_by_cue
from xurs_pipeline.evaluation.swap import Proportion, score_frame, wilson
from xurs_pipeline.evaluation.swap_study import input_only_magnitudes, role_accuracy
from xurs_pipeline.models.gguf import load_gguf, resolve_gguf_path


def embedding_and_pad(gguf: Path, pad_token: str) -> tuple[np.ndarray, int]:
    """The backbone's input embedding (vocab, hidden) in float64 and the pad token's id."""
    model, tokenizer = load_gguf(gguf, torch.float32)
    pad = pad_token or tokenizer.pad_token
    return model.get_input_embeddings().weight.detach().double().numpy(), tokenizer.convert_tokens_to_ids(pad)


def model_a_half(project: Path, embedding: np.ndarray, pad_id: int) -> dict:
    """One project's figures: accuracy by cue, and cue 1 first under model A and under the input alone."""
    cfg = load_params(project / "params.yaml")
    prompts = pd.read_parquet(project / "data/prepared/prompts.parquet")
    attributions = pd.read_parquet(project / "data/attribute/attributions.parquet")
    probes = sorted(attributions["record_id"])
    input_only = input_only_magnitudes(prompts, probes, cfg.attribution, pad_id, embedding)
    rows = [
        {"ranking": "trained", "role": "A", "record_id": r.record_id, "token_magnitude": r.token_magnitude}
        for r in attributions.itertuples()
    ] + [{"ranking": "input_only", "role": "A", "record_id": rid, "token_magnitude": input_only[rid]}
         for rid in probes]  # fmt: skip
    cues = {
        rid: [list(map(int, c)) for c in p]
        for rid, p in zip(prompts["record_id"], prompts["cue_positions"], strict=True)
    }
    scores = score_frame(pd.DataFrame(rows), cues)
    first = scores.pivot(index="record_id", columns="ranking", values="learned_first")
    input_prefers_cue2 = first[~first["input_only"].astype(bool)]
    predictions = pd.read_parquet(project / "data/predict/predictions.parquet").set_index("record_id")
    test = relabel_by_cue(prompts, 1)
    test = test[(test["split"] == "test") & test["has_result"].astype(bool)]
    masses = torch.tensor(np.stack([np.asarray(predictions.loc[r, "masses"], dtype=np.float64)
                                    for r in test["record_id"]]))  # fmt: skip

    def share(ranking: str) -> float:
        return float(scores[scores["ranking"] == ranking]["cue1_share"].mean())

    def proportion(p: Proportion) -> dict:
        return {"k": p.k, "n": p.n, "value": p.value, "low": p.low, "high": p.high}

    return {
        "data_seed": cfg.data.seed,
        "families": list(cfg.data.families),
        "attribution": f"{cfg.attribution.method}, {cfg.attribution.reference_alignment} alignment, "
        f"{cfg.attribution.refs_per_collection} references, tolerance {cfg.attribution.kronrod_tolerance}",
        "accuracy_A": role_accuracy(masses, test, 1),
        "A_cue1_first": proportion(wilson(first["trained"].astype(bool).tolist())),
        "input_only_cue1_first": proportion(wilson(first["input_only"].astype(bool).tolist())),
        "A_cue1_first_where_input_prefers_cue2": proportion(wilson(input_prefers_cue2["trained"].tolist()))
        if len(input_prefers_cue2) else None,
        "A_cue1_share": share("trained"),
        "input_only_cue1_share": share("input_only"),
        "R_median": float(attributions["residual"].abs().median()),
        "R_max": float(attributions["residual"].abs().max()),
        "grad_evals_per_probe": float(attributions["grad_evals"].mean()),
    }  # fmt: skip


def table(results: dict[str, dict]) -> str:
    def k_of_n(p: dict | None) -> str:
        return "—" if p is None else f"{p['k']}/{p['n']} ({p['value']:.2f} [{p['low']:.2f}, {p['high']:.2f}])"

    lines = [
        "| data.seed | A accuracy, cue 1 resolves (n) | A: cue 1 first | input only: cue 1 first "
        "| A: cue 1 first where the input prefers cue 2 | R median / max | evaluations a probe |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results.values():
        acc = r["accuracy_A"]
        lines.append(
            f"| {r['data_seed']} | {acc['accuracy_own_cue']:.2f} ({acc['n_own_cue']}) "
            f"| {k_of_n(r['A_cue1_first'])} "
            f"| {k_of_n(r['input_only_cue1_first'])} | {k_of_n(r['A_cue1_first_where_input_prefers_cue2'])} "
            f"| {r['R_median']:.4f} / {r['R_max']:.3f} | {r['grad_evals_per_probe']:.0f} |"
        )
    pooled = {key: [r[key] for r in results.values() if r[key]] for key in
              ("A_cue1_first", "input_only_cue1_first", "A_cue1_first_where_input_prefers_cue2")}  # fmt: skip
    summary = {
        key: wilson([True] * sum(p["k"] for p in ps) + [False] * sum(p["n"] - p["k"] for p in ps))
        for key, ps in pooled.items()
    }
    lines.append(
        "| all | | "
        + " | ".join(f"{p.k}/{p.n} ({p.value:.2f} [{p.low:.2f}, {p.high:.2f}])" for p in summary.values())
        + " | | |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("projects", type=Path, nargs="+")
    parser.add_argument(
        "--gguf", type=Path, help="the backbone's GGUF file (default: model.* of the project)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    m = load_params(args.projects[0] / "params.yaml").model
    gguf = args.gguf or resolve_gguf_path(m.source, m.gguf_package, m.gguf_file)
    embedding, pad_id = embedding_and_pad(gguf, m.pad_token)
    results = {str(p): model_a_half(p, embedding, pad_id) for p in args.projects}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
