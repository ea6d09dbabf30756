"""Diagnostic for issue 10: can the frozen backbone itself answer the controlled V2 questions?

    /work/venv/bin/python bench/v2_zero_shot.py [--artifacts data] [--split dev] [--per-group 80]

Reads the pipeline's prepared prompts (``<artifacts>/prepared/prompts.parquet``, e.g. after
``dvc exp run gates -S experiment=controlled_v2_cpu``) and the saved backbone (``<artifacts>/backbone``),
runs the causal LM on the questions whose text singles out one answer (``has_result``), and scores the
next-token logits of the four option letters after ``Answer:`` (" A" .. " D"; the letter tokens are
printed). A head on frozen last-token features can only read what the backbone has computed there: if
the backbone's own letter choice is at chance, the answer is not linearly present at that position,
which is the evidence the gate table alone cannot give. Chance is 25%; the rule-based reader
(``data.synthetic.reader``) answers every question.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import _common as C
import numpy as np
import pandas as pd
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from xurs_pipeline.models.collate import pad_batch


def letter_ids(tokenizer) -> list[int]:
    """Token id of " A" .. " D" (each must be a single token)."""
    ids = [tokenizer(f" {letter}", add_special_tokens=False).input_ids for letter in "ABCD"]
    if any(len(i) != 1 for i in ids):
        raise SystemExit(f"option letters are not single tokens for this tokenizer: {ids}")
    return [i[0] for i in ids]


@torch.no_grad()
def letter_choices(model, rows: pd.DataFrame, letters: list[int], pad_id: int, batch: int) -> np.ndarray:
    """(n,) argmax over the four letters' next-token logits at each prompt's last token."""
    out = []
    for start in range(0, len(rows), batch):
        ids, mask = pad_batch(
            [list(x) for x in rows["input_ids"].iloc[start : start + batch]], pad_id, "left"
        )
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1]
        out.append(logits[:, letters].argmax(-1).numpy())
    return np.concatenate(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--artifacts", type=Path, default=C.ROOT / "data")
    parser.add_argument("--split", default="dev")
    parser.add_argument(
        "--per-group", type=int, default=80, help="questions per template group (familiar/unseen)"
    )
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    started = time.perf_counter()
    C.print_header("Issue 10 diagnostic: the backbone's own answer on controlled V2", "bench/v2_zero_shot.py")
    prompts = pd.read_parquet(args.artifacts / "prepared" / "prompts.parquet")
    if "has_result" not in prompts.columns:
        raise SystemExit(f"{args.artifacts}/prepared/prompts.parquet holds no controlled (synthetic) records")
    backbone = args.artifacts / "backbone"
    tokenizer = AutoTokenizer.from_pretrained(backbone)
    model = AutoModelForCausalLM.from_pretrained(backbone, dtype=torch.float32).eval()
    letters = letter_ids(tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    print(f"letter tokens {letters} = {tokenizer.convert_ids_to_tokens(letters)}\n")
    rows_out = []
    for unseen in (False, True):
        pool = prompts[
            (prompts["split"] == args.split) & prompts["has_result"] & (prompts["template_unseen"] == unseen)
        ]
        rows = pool.sample(n=min(args.per_group, len(pool)), random_state=0)
        chosen = letter_choices(model, rows, letters, pad_id, args.batch)
        correct = chosen == rows["answer_idx"].to_numpy()
        shares = np.bincount(chosen, minlength=4) / len(chosen)
        rows_out.append(
            [
                "unseen" if unseen else "familiar",
                len(rows),
                f"{100 * correct.mean():.1f}%",
                " / ".join(f"{100 * s:.0f}" for s in shares),
            ]
        )
    print(
        C.markdown_table(
            ["templates", "questions (with result)", "letter accuracy", "A / B / C / D chosen (%)"], rows_out
        )
    )
    C.print_footer(started)


if __name__ == "__main__":
    main()
