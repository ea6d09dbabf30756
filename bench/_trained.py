"""What the benchmarks of a trained experiment share: their arguments, the trained model with its prompts and
config, the questions and reference pool the ``attribute`` stage would use, and App. C's clue measures of a
row (bench plumbing: each wraps the library's own functions, nothing of it is a figure by itself).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace

import _common as C
import pandas as pd

from xurs_pipeline.attribution.inputs import natural_pool, select_questions
from xurs_pipeline.attribution.question import ReferencePool
from xurs_pipeline.evaluation.evidence import localisation_table


def experiment_parser(doc: str, experiment: str, questions: int) -> argparse.ArgumentParser:
    """The arguments every trained-model bench shares: the experiment, its Hydra overrides, the questions."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=experiment)
    parser.add_argument("--override", nargs="*", default=[], help="Hydra overrides of its `xurs params`")
    parser.add_argument("--questions", type=int, default=questions)
    return parser


def add_skip(parser: argparse.ArgumentParser) -> None:
    """``--skip``: leave out the first SKIP of the first ``--questions`` questions (so the third question
    alone is ``--questions 3 --skip 2``, as the kept records' commands say). Checked by ``check_skip``."""
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first SKIP of the first --questions questions "
        "(the third alone: --questions 3 --skip 2)",
    )


def check_skip(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, before anything loads, ``--questions`` below 1 or a ``--skip`` that leaves no question or
    counts from the end."""
    if args.questions < 1:
        parser.error(f"--questions {args.questions}: at least 1 (the first N questions the stage explains)")
    if not 0 <= args.skip < args.questions:
        parser.error(
            f"--skip {args.skip} is not from 0 to --questions - 1 ({args.questions - 1}): it leaves out "
            "the first SKIP of the first --questions questions (the third alone: --questions 3 --skip 2)"
        )


def load(experiment: str, overrides: list[str] = ()):
    """(classifier, prompts, cfg, pad id) of the trained ``experiment`` with Hydra ``overrides`` (the ones its
    ``xurs params`` had; its train stage must have run)."""
    from xurs_pipeline.config import compose, train_run_hash, validate
    from xurs_pipeline.contracts import artifact
    from xurs_pipeline.data.dataset import data_config_hash
    from xurs_pipeline.data.schema import read_prompts
    from xurs_pipeline.models.checkpoint import load_classifier

    cfg = validate(compose([f"experiment={experiment}", *overrides], conf_dir=C.ROOT / "conf"))
    prompts = read_prompts(artifact("prompts").at(cfg.paths), data_config_hash(cfg.data))
    model, tokenizer = load_classifier(artifact("classifier").at(cfg.paths), config_hash=train_run_hash(cfg))
    return model.eval().requires_grad_(False), prompts, cfg, int(tokenizer.pad_token_id)


def explained_questions(model, prompts, at, n: int) -> tuple[list, ReferencePool]:
    """The first ``n`` questions the ``attribute`` stage explains under ``at`` and its reference pool, with
    the pool's natural widths, selected and prepared as the stage does."""
    return select_questions(prompts, at, None)[:n], natural_pool(model, prompts, at, None)


def clue_measures(row, prompts) -> dict[str, float | int]:
    """App. C for one attribution row (``evaluation.evidence.localisation_table``): the best clue token's rank
    in the case text and in all text, and the clue's share of the case text's magnitude."""
    record = {k: v for k, v in asdict(row).items() if k != "coords"}
    loc = localisation_table(pd.DataFrame([record]), prompts).set_index("region")
    case, text = loc.loc["case_text"], loc.loc["all_text"]
    return {
        "case_rank": int(case["best_rank"]),
        "text_rank": int(text["best_rank"]),
        "clue_share": float(case["clue_share"]),
    }


def method_config(cfg, method: str, refs: int, budget: int):
    """The root config explaining with ``method`` against the first ``refs`` training prompts at
    ``budget``."""
    most = max(cfg.attribution.max_grad_evals, 4 * budget)
    at = replace(
        cfg.attribution,
        reference="train",
        refs_per_collection=refs,
        n_collections=1,
        max_questions=0,
        progress=False,
        method=method,
        max_grad_evals=most,
        samples_per_call=16,
    )
    if method == "certified":
        at = replace(at, certified_max_evals=budget)
    elif method == "kronrod":
        at = replace(
            at,
            kronrod_max_evals=budget,
            kronrod_stop="residual",
            kronrod_lead="stop",
            kronrod_tolerance=0.01,
            samples_per_call=15,
        )
    else:
        at = replace(at, n_samples=budget)
    return replace(cfg, attribution=at)
