"""``xurs explain``: attribute one question's credal width to its tokens (prints top tokens, writes HTML).

Attribute the credal width W_c = Pl({c}) - Bel({c}) of one answer to the input tokens with any
attribution method (--method): the paper's Expected Gradients (Eq. 3), Integrated Gradients,
adaptive Gauss-Kronrod IG or the certified estimator, or occlusion per token or span, span Shapley
values, gradient L2, gradient x input, layer IG or Sequential IG. Prints the explained, predicted,
correct answers, the completeness residual R (Eq. 9) with the report's verdict where the method has
one, its cost in forwards and gradient evaluations and the highest-ranked tokens; writes an HTML
page (tokens shaded by attribution, the [Bel, Pl] interval of every option) under
<paths.results>/explain/. The question is a record of the prepared data (--record-id) or given
inline (--question and four --option). Settings, classifier and references are the pipeline's
(params.yaml: attribution section, paths.artifacts), so a test record's page matches the report's;
the flags below override them.
A classifier or prompts made with another config than --params (another project's, or older than
params.yaml), prompts of another tokenizer, and flags the command would ignore (--answer or --option
with --record-id, a flag of another method than --method's, --refs, --reference or --alignment where the
method reads no training references or none at all, --seed where it draws nothing at random, --path-block
without --path blocks, --compare with the method itself) are refused.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from xurs_pipeline.attribution.config import (
    METHOD_KEYS,
    METHODS,
    PATH_METHODS,
    PATHS,
    REFERENCE_ALIGNMENTS,
    REPLACEMENTS,
    STOP_RULES,
    AttributionConfig,
    with_method,
)
from xurs_pipeline.commands.args import command, positive_int
from xurs_pipeline.commands.explain_inputs import check, refuse_ignored_flags, refuse_unread_flags

if TYPE_CHECKING:
    from xurs_pipeline.explain import Explanation

LETTERS = "ABCD"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        __doc__,
        run,
        epilog="examples:\n"
        "  xurs explain --record-id family000_case00_unresolved   # a question `local` explains\n"
        "  xurs explain --question 'A man has a fever and a rash.' --option Measles --option Mumps \\\n"
        "      --option Rubella --option Flu --reference zero --samples 64\n"
        "  xurs explain --record-id family000_case00_unresolved --method occlusion_token  # Eq. 8 per token\n"
        "which method to trust on your model, and how to read --compare: docs/attribution-methods.md\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _question_arguments(p.add_argument_group("question"))
    _file_arguments(p.add_argument_group("inputs and outputs (defaults: the pipeline's, from --params)"))
    how = p.add_argument_group("attribution (defaults: the params' attribution section)")
    _method_arguments(how)
    _reference_arguments(how)
    _budget_arguments(how)


def _question_arguments(src: argparse._ArgumentGroup) -> None:
    """A prepared record, or an inline question with its four options and correct one."""
    src.add_argument("--record-id", help="record id in the prepared prompts (see --prompts)")
    src.add_argument("--question", help="inline question text")
    src.add_argument("--option", action="append", default=[], metavar="TEXT", help="inline option (give 4)")
    src.add_argument("--answer", choices=list(LETTERS), help="correct option of an inline question")


def _file_arguments(paths: argparse._ArgumentGroup) -> None:
    """The config, classifier and prompts read; the page and JSON written."""
    paths.add_argument(
        "--params",
        default="params.yaml",
        help="composed pipeline config: attribution settings, paths.artifacts, paths.results and the "
        "report's residual threshold (default: params.yaml)",
    )
    paths.add_argument("--classifier", help="classifier directory (default <artifacts>/train/classifier)")
    paths.add_argument(
        "--prompts", help="prepared prompts: records and references (default <artifacts>/prepared/...)"
    )
    paths.add_argument("--html", help="HTML page to write (default: <results>/explain/<record>.html)")
    paths.add_argument("--save", help="also save the explanation as JSON here")


def _method_arguments(how: argparse._ArgumentGroup) -> None:
    """The explained option, the method (and one to compare) and the token methods' own keys."""
    how.add_argument("--explain", choices=list(LETTERS), help="option to explain (attribution.target)")
    how.add_argument(
        "--method",
        choices=METHODS,
        metavar="METHOD",
        help=f"one of {', '.join(METHODS)} (attribution.method): the paper's estimators "
        f"{', '.join(PATH_METHODS)} integrate gradients from references and report the residual R; the "
        "others explain the same width by other means (docs/attribution-methods.md)",
    )
    how.add_argument(
        "--compare",
        choices=METHODS,
        metavar="METHOD",
        help="also explain the question with this method and show both side by side on the page (the tokens "
        "they agree on and where they differ, each labelled with what the swap control found for it)",
    )
    how.add_argument(
        "--replacement",
        choices=REPLACEMENTS,
        help="occlusion_*, shapley_span: an occluded token's row becomes zero, the prompt's mean row or the "
        "first reference's row",
    )
    how.add_argument(
        "--span-tokens", type=positive_int, help="occlusion_span, shapley_span: positions per span"
    )
    how.add_argument("--layer-ig-steps", type=positive_int, help="layer_ig: integration points")
    how.add_argument(
        "--sequential-ig-steps", type=positive_int, help="sequential_ig: integration points per token"
    )


def _reference_arguments(how: argparse._ArgumentGroup) -> None:
    """The references and the paths from them to the input."""
    how.add_argument("--path", choices=PATHS, help="straight, or one token block at a time (ig, kronrod)")
    how.add_argument("--path-block", type=positive_int, help="positions per block of --path blocks")
    how.add_argument("--reference", choices=["train", "zero"], help="reference prompts")
    how.add_argument(
        "--alignment",
        choices=REFERENCE_ALIGNMENTS,
        help="fit training prompts to the question by position (Sec. 3.3) or by token sequence (shared "
        "text in place; attribution.reference_alignment)",
    )
    how.add_argument("--refs", type=positive_int, help="training reference prompts per collection")


def _budget_arguments(how: argparse._ArgumentGroup) -> None:
    """The estimators' samples, points and stopping rule; batch size, precision, seed; the tokens listed."""
    how.add_argument("--samples", type=positive_int, help="EG samples per collection")
    how.add_argument("--points", type=positive_int, help="IG points per reference")
    how.add_argument(
        "--stop",
        choices=STOP_RULES,
        help="kronrod's stopping rule: its error bound, App. B.4's per-reference residuals, or the order of "
        "the prompt's cues certain (read: swap-study probes only)",
    )
    how.add_argument("--samples-per-call", type=positive_int, help="gradient samples per batch")
    how.add_argument("--precision", choices=["float32", "bfloat16", "float16"])
    how.add_argument("--seed", type=int)
    how.add_argument("--top", type=positive_int, help="tokens listed here and on the page (default 10)")


def checked_text(flag: str, text: str) -> str:
    """Refuse text that is not valid UTF-8 (undecodable argv bytes arrive as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raw = text.encode("utf-8", "surrogateescape")
        raise ValueError(
            f"{flag}: not valid UTF-8 (byte {raw[err.start : err.start + 1]!r} at character {err.start}); "
            "pass the text UTF-8 encoded"
        ) from None
    return text


def html_target(html: str | None, results: Path, record_id: str) -> Path:
    """Where the page goes: ``--html`` as given, else ``<results>/explain/<page_name(record_id)>``
    (the report's file-name rule, so an id like ``../../x`` never leaves the results folder)."""
    from xurs_pipeline.reporting.html import page_name

    path = Path(html) if html else results / "explain" / page_name(record_id)
    return writable_file("--html", path, page_name(record_id))


def writable_file(flag: str, path: Path, example: str) -> Path:
    """``path`` if a file can be written there: not a directory, no file where a parent directory goes
    (checked before any work, so a bad ``--html`` or ``--save`` costs nothing)."""
    if path.is_dir():
        raise ValueError(f"{flag} {path}: is a directory; give a file name such as {path / example}")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{flag} {path}: {parent} is a file, not a directory")
    return path


# the method's own flags, each named as its attribution key
METHOD_FLAGS = ("replacement", "span_tokens", "layer_ig_steps", "sequential_ig_steps")
# attribution key -> the flag that overrides it
OVERRIDES = {
    "reference": "reference",
    "refs_per_collection": "refs",
    "n_samples": "samples",
    "ig_points": "points",
    "samples_per_call": "samples_per_call",
    "precision": "precision",
    "seed": "seed",
    "path": "path",
    "path_block": "path_block",
    "reference_alignment": "alignment",
    "kronrod_stop": "stop",
}


def chosen_method(base: AttributionConfig, args: argparse.Namespace) -> dict[str, object]:
    """``--method`` and its own flags as config overrides; a flag of another method is refused by name
    (``explain_inputs.refuse_unread_flags``), and the params' keys of a method not chosen go back to their
    defaults."""
    method = args.method or base.method
    refuse_unread_flags(args, method)
    reset = {key: getattr(with_method(base, method), key) for key in METHOD_KEYS}
    flags = {key: getattr(args, key) for key in METHOD_FLAGS}
    return {**reset, "method": method, **{k: v for k, v in flags.items() if v is not None}}


def attribution_config(base: AttributionConfig, args: argparse.Namespace) -> AttributionConfig:
    """The params' attribution settings with the command-line overrides; one question, progress shown."""
    reference = args.reference or base.reference
    overrides = {key: getattr(args, flag) for key, flag in OVERRIDES.items()}
    changed = {key: value for key, value in overrides.items() if value is not None} | chosen_method(
        base, args
    )
    if reference != "train":  # zero and aligned references: one per question, nothing to fit
        changed |= {"n_collections": 1, "refs_per_collection": 1}
        changed.setdefault("reference_alignment", "position")
    target = "predicted" if base.target == "all" else base.target
    return replace(base, **changed, target=target, record_ids=[], max_questions=0, progress=True)


def run(args: argparse.Namespace) -> int:
    from xurs_pipeline.config import load_params
    from xurs_pipeline.explain import INLINE_ID, InlineQuestion, explain
    from xurs_pipeline.models.config import model_name
    from xurs_pipeline.reporting.html_explanation import TOP_TOKENS

    question, options = inline_question(args)
    inline = question is not None
    cfg = load_params(args.params)
    artifacts = Path(cfg.paths.artifacts)
    config = attribution_config(cfg.attribution, args)
    refuse_ignored_flags(args, config)
    prompts = Path(args.prompts or artifacts / "prepared" / "prompts.parquet")
    needs_prompts = config.reference != "zero" or not inline
    if needs_prompts and not prompts.is_file():
        raise FileNotFoundError(
            f"--prompts {prompts}: not found; run `dvc repro prepare` first, or use --reference zero "
            "with an inline question"
        )
    classifier = Path(args.classifier or artifacts / "train" / "classifier")
    check(args, cfg, classifier, prompts if needs_prompts else None)
    html = html_target(args.html, Path(cfg.paths.results), args.record_id or INLINE_ID)
    if args.save:
        writable_file("--save", Path(args.save), "explanation.json")
    residual_max, top = cfg.evaluation.numerics.max_residual_max, args.top or TOP_TOKENS
    explained_inline = (
        InlineQuestion(
            question, options, LETTERS.index(args.answer) if args.answer else None, cfg.data.max_tokens
        )
        if question is not None
        else None
    )
    where = {"record_id": args.record_id, "inline": explained_inline}
    where |= {"prompts_path": prompts if needs_prompts else None}
    option = LETTERS.index(args.explain) if args.explain else None
    explanation = explain(classifier, **where, config=config, option=option)
    explanation = replace(explanation, experiment=cfg.experiment_name, model=model_name(cfg.model))
    print(explanation.format_top(top, residual_max))  # printed first: a failed write loses nothing
    other = None
    if args.compare:
        compared = with_method(config, args.compare)
        other = explain(classifier, **where, config=compared, option=explanation.target)
        print(f"\ncompared with {args.compare}:\n{other.format_top(top, residual_max)}")
    write_outputs(explanation, args, html, (top, residual_max), other)
    return 0


def inline_question(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """The inline question and its options (checked), or (None, []) with --record-id; ValueError naming
    the flag when neither or both are given, or not four options."""
    inline = args.question is not None
    if inline == (args.record_id is not None):
        raise ValueError("give either --record-id, or --question with four --option")
    if inline and len(args.option) != 4:
        raise ValueError(f"--option: an inline question needs exactly 4 options, got {len(args.option)}")
    question = checked_text("--question", args.question) if inline else None
    return question, [checked_text("--option", o) for o in args.option]


def write_outputs(
    explanation: Explanation,
    args: argparse.Namespace,
    html: Path,
    shown: tuple[int, float],
    other: Explanation | None = None,
) -> None:
    """Warn when the residual is over the report's threshold, save the JSON (--save) and write the page;
    ``shown``: (tokens listed, the residual threshold); ``other``: the --compare method's explanation."""
    top, residual_max = shown
    if explanation.residual_verdict(residual_max) == "FAIL":
        print(
            f"xurs explain: warning: residual R = {explanation.residual:.3g} > {residual_max:g} "
            "(evaluation.numerics.max_residual_max): the attribution does not add up to the width "
            "difference; raise --samples (or --points)",
            file=sys.stderr,
        )
    if args.save:
        try:
            print(f"saved {explanation.save(args.save)}")
        except OSError as err:  # the checks above passed, the write failed (permissions, disk): the page next
            print(f"xurs explain: warning: --save {args.save}: not written ({err.strerror})", file=sys.stderr)
    try:
        explanation.to_html(html, top, residual_max, other)
    except OSError as err:
        raise ValueError(
            f"--html {html}: could not write the page ({err.strerror}); the explanation is printed above"
            + ("" if args.save else " (add --save FILE to keep it as JSON)")
        ) from err
    print(f"wrote {html}")
