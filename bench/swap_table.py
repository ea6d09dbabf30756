"""The swap study's tables in Markdown, from a project where `controlled_swap` ran (docs/swap-control.md).

    python bench/swap_table.py [PROJECT ...]     # default: the current directory

Reads ``<project>/data/swap/study/summary.json`` (the swap stage's output) and ``params.yaml`` and prints,
per project, the models' accuracy by cue and each ranking's swap accuracy and share difference, with the
attribution settings and residuals that produced them: the tables in docs/swap-control.md are this output.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import yaml

from xurs_pipeline.reporting.swap_card import SwapStudy

ACCURACY_HEADER = (
    "| model | own cue resolves (chance 0.25) | only the other cue resolves (0.5 = reads its own cue's pair) "
    "| names the other cue's condition |",
    "|---|---|---|---|",
)
RANKING_HEADER = (
    "| ranking | swap accuracy (pooled, n) | Wilson 95% CI | model A | model B | cue 1 share, A - B "
    "| bootstrap 95% CI | passes |",
    "|---|---|---|---|---|---|---|---|",
)


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "—" if x is None or not math.isfinite(float(x)) else format(float(x), fmt)


def tables(project: Path) -> str:
    summary = json.loads((project / "data/swap/study/summary.json").read_text())
    if "studies" not in summary:
        return f"{project}: swap stages skipped ({summary.get('skipped')})"
    params = yaml.safe_load((project / "params.yaml").read_text())
    a = params["attribution"]
    settings = (f"data.seed={params['data']['seed']}, attribution: {a['method']}, {a['reference_alignment']} "
                f"alignment, {a['refs_per_collection']} references, target_fn {a['target_fn']}")  # fmt: skip
    if a["method"] == "eg":
        settings += f", {a['n_samples']} samples"
    residuals = ", ".join(
        f"{run} R median {_f(r['median'], '.2g')} max {_f(r['max'], '.2g')} ({r['grad_evals']} evaluations)"
        for run, r in summary["residuals"].items()
    )
    lines = [f"{project} ({settings})", "", f"Residuals: {residuals}.", "", *ACCURACY_HEADER]
    for role, acc in summary["accuracy"].items():
        n_outside, follows = acc["n_follows_other"], acc["follows_other"]
        known = follows is not None and math.isfinite(float(follows))
        named = f"{round(follows * n_outside)} of {n_outside}" if known else "—"
        own = f"{_f(acc['accuracy_own_cue'])} (n {acc['n_own_cue']})"
        other = f"{_f(acc['accuracy_other_cue_only'])} (n {acc['n_other_cue_only']})"
        lines.append(f"| {role} | {own} | {other} | {named} |")
    lines += ["", *RANKING_HEADER]
    names = SwapStudy(summary["studies"], summary.get("accuracy", {})).names
    for name, label in names.items():
        s = summary["studies"][name]
        cells = [
            label, f"{_f(s['swap_accuracy'])} ({s['n']})",
            f"[{_f(s['swap_ci_low'])}, {_f(s['swap_ci_high'])}]",
            _f(s.get("swap_accuracy_A")), _f(s.get("swap_accuracy_B")), _f(s.get("share_difference"), "+.2f"),
            f"[{_f(s.get('share_ci_low'), '+.2f')}, {_f(s.get('share_ci_high'), '+.2f')}]",
            "yes" if s["passes"] else "no",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("projects", nargs="*", type=Path, default=[Path(".")], help="project directories")
    for project in parser.parse_args().projects:
        print(tables(project), end="\n\n")


if __name__ == "__main__":
    main()
