"""``xurs explain``: why is the model uncertain about this question? Top tokens and an HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

LETTERS = "ABCD"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="attribute one question's credal width to its tokens (prints top tokens, writes HTML)",
        description=(
            "Attribute the credal width W_c = Pl({c}) - Bel({c}) of one answer to the input tokens with "
            "Expected Gradients (Eq. 3) or Integrated Gradients, print the highest-ranked tokens and write "
            "an "
            "HTML page (tokens shaded by attribution, the [Bel, Pl] interval of every option). The question "
            "is a record of the prepared data (--record-id) or given inline (--question and four --option)."
        ),
        epilog=(
            "examples:\n"
            "  xurs explain --record-id family000_case00_resolved\n"
            "  xurs explain --question 'A man has a fever and a rash.' --option Measles --option Mumps \\\n"
            "      --option Rubella --option Flu --reference zero --samples 64\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("question")
    src.add_argument("--record-id", help="record id in the prepared prompts (see --prompts)")
    src.add_argument("--question", help="inline question text")
    src.add_argument("--option", action="append", default=[], metavar="TEXT", help="inline option (give 4)")
    src.add_argument("--answer", choices=list(LETTERS), help="correct option of an inline question")
    paths = p.add_argument_group("inputs and outputs")
    paths.add_argument("--classifier", default="data/train/classifier", help="trained classifier directory")
    paths.add_argument(
        "--prompts", default="data/prepared/prompts.parquet", help="prepared prompts (references)"
    )
    paths.add_argument("--html", help="HTML page to write (default: explain_<record>.html)")
    paths.add_argument("--save", help="also save the explanation as JSON here")
    how = p.add_argument_group("attribution")
    how.add_argument("--explain", choices=list(LETTERS), help="option to explain (default: argmax BetP)")
    how.add_argument("--method", choices=["eg", "ig"], default="eg", help="Expected or Integrated Gradients")
    how.add_argument("--reference", choices=["train", "zero"], default="train", help="reference prompts")
    how.add_argument("--refs", type=int, default=32, help="training reference prompts (default 32)")
    how.add_argument("--samples", type=int, default=64, help="EG samples (default 64)")
    how.add_argument("--points", type=int, default=64, help="IG points per reference (default 64)")
    how.add_argument("--samples-per-call", type=int, default=8, help="gradient samples per batch (default 8)")
    how.add_argument("--precision", choices=["float32", "bfloat16", "float16"], default="float32")
    how.add_argument("--seed", type=int, default=11)
    how.add_argument("--top", type=int, default=10, help="tokens to print (default 10)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.attribution.config import AttributionConfig
    from xurs_pipeline.attribution.explain import explain

    inline = args.question is not None
    if inline == (args.record_id is not None):
        raise ValueError("give either --record-id, or --question with four --option")
    if inline and len(args.option) != 4:
        raise ValueError(f"--option: an inline question needs exactly 4 options, got {len(args.option)}")
    prompts = Path(args.prompts)
    needs_prompts = args.reference == "train" or not inline
    if needs_prompts and not prompts.is_file():
        raise FileNotFoundError(
            f"--prompts {prompts}: not found; run `dvc repro prepare` first, or use --reference zero "
            "with an inline question"
        )
    config = AttributionConfig(
        method=args.method,
        reference=args.reference,
        refs_per_collection=args.refs if args.reference == "train" else 1,
        n_samples=args.samples,
        ig_points=args.points,
        samples_per_call=args.samples_per_call,
        precision=args.precision,
        seed=args.seed,
        progress=True,
    )
    explanation = explain(
        args.classifier,
        record_id=args.record_id,
        question=args.question,
        options=args.option or None,
        answer=LETTERS.index(args.answer) if args.answer else None,
        prompts_path=prompts if needs_prompts else None,
        config=config,
        option=LETTERS.index(args.explain) if args.explain else None,
    )
    print(explanation.format_top(args.top))
    html = Path(args.html or f"explain_{explanation.record_id}.html")
    explanation.to_html(html)
    print(f"wrote {html}")
    if args.save:
        print(f"saved {explanation.save(args.save)}")
    return 0
