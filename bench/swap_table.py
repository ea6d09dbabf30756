"""The swap study's tables in Markdown, from a project where `controlled_swap` ran (docs/swap-control.md).

    python bench/swap_table.py [PROJECT ...]     # default: the current directory
    python bench/swap_table.py --across SEED0 SEED1 ...   # one row per project, and the pooled counts

Reads ``<project>/data/swap/study/summary.json`` (the swap stage's output) and ``params.yaml`` and prints,
per project, the models' accuracy by cue and each ranking's swap accuracy and share difference, with the
attribution settings and residuals that produced them: the tables in docs/swap-control.md are this output.
``--across`` puts several projects (data seeds) in one table, one row each, and pools their probes: each
model's learned cue first k of n, with Wilson 95% intervals (``evaluation.swap.wilson``).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import yaml

from xurs_pipeline.evaluation.swap import wilson
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


ACROSS_HEADER = (
    "| data.seed | A / B accuracy, own cue resolves | swap accuracy [Wilson 95%] | A: cue 1 first "
    "| B: cue 2 first | cue 1 share, A - B [95%] | heads re-initialised: swap accuracy, share difference "
    "| passes |",
    "|---|---|---|---|---|---|---|---|",
)


def _first(study: dict, role: str) -> tuple[int, int]:
    """(k, n): the role's probes whose learned cue ranks first under ``study``."""
    n = int(study[f"n_{role}"])
    return round(study[f"swap_accuracy_{role}"] * n), n


def _interval(k: int, n: int) -> str:
    p = wilson([True] * k + [False] * (n - k))
    return f"{k}/{n} ({p.value:.2f} [{p.low:.2f}, {p.high:.2f}])"


def across(projects: list[Path]) -> str:
    """One row per project (its data seed) and a pooled row over all their probes."""
    lines, pooled = list(ACROSS_HEADER), {"A": [0, 0], "B": [0, 0], "R": [0, 0]}
    for project in projects:
        summary = json.loads((project / "data/swap/study/summary.json").read_text())
        if "studies" not in summary:
            raise SystemExit(f"{project}: swap stages skipped ({summary.get('skipped')})")
        data = yaml.safe_load((project / "params.yaml").read_text())["data"]
        seed = f"{data['seed']}, cue 2 first" if data.get("cue2_first") else str(data["seed"])
        trained, randomised = summary["studies"]["trained"], summary["studies"]["randomised"]
        acc = summary["accuracy"]
        (ka, na), (kb, nb) = _first(trained, "A"), _first(trained, "B")
        (kra, nra), (krb, nrb) = _first(randomised, "A"), _first(randomised, "B")
        for key, (k, n) in (("A", (ka, na)), ("B", (kb, nb)), ("R", (kra + krb, nra + nrb))):
            pooled[key][0] += k
            pooled[key][1] += n
        cells = [
            seed, f"{_f(acc['A']['accuracy_own_cue'])} / {_f(acc['B']['accuracy_own_cue'])}",
            f"{_f(trained['swap_accuracy'])} [{_f(trained['swap_ci_low'])}, {_f(trained['swap_ci_high'])}]",
            f"{ka}/{na}", f"{kb}/{nb}",
            f"{_f(trained['share_difference'], '+.2f')} [{_f(trained['share_ci_low'], '+.2f')}, "
            f"{_f(trained['share_ci_high'], '+.2f')}]",
            f"{_f(randomised['swap_accuracy'])}, {_f(randomised['share_difference'], '+.2f')}",
            "yes" if trained["passes"] else "no",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    (ka, na), (kb, nb), (kr, nr) = pooled["A"], pooled["B"], pooled["R"]
    lines.append(f"| pooled | | {_interval(ka + kb, na + nb)} | {_interval(ka, na)} | {_interval(kb, nb)} | "
                 f"| {_interval(kr, nr)} | |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("projects", nargs="*", type=Path, default=[Path(".")], help="project directories")
    parser.add_argument("--across", action="store_true", help="one table over the projects (data seeds)")
    args = parser.parse_args()
    if args.across:
        print(across(args.projects))
        return
    for project in args.projects:
        print(tables(project), end="\n\n")


if __name__ == "__main__":
    main()
