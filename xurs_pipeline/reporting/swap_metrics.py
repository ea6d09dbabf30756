"""The swap study's DVC metric view, ``methods.json`` (``tasks/swap.py`` writes it; ``dvc metrics show``
reads it), from its ``summary.json`` (``evaluation/swap/study.py``): nothing is computed here.

- per model whose labels name a cue, the share of probes where it behaves as trained (``as_trained_<role>``);
- per method (:func:`faithfulness_metrics`): the training-rule swap accuracy and the agreement on every
  decided probe with their lower bounds; the plan's verdict; on ``plan.JUDGE`` and every other judging
  yardstick, per cell the clear agreement with its clustered interval and n, and where the label rankers
  are wrong; the planted embedding mechanisms; the planned comparisons' Holm-adjusted p values;
- per yardstick (``yardsticks``): whether it judges, whether it ranks the degraded copies of the methods it
  credits below them (the known-ranking check), and that check's p per credited method and degradation.
"""

from __future__ import annotations

from typing import Any

from xurs_pipeline.evaluation.swap import plan


def faithfulness_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """The faithfulness result's per-method view (module docstring)."""
    out: dict[str, Any] = {}
    for m, by in result["methods"].items():
        view: dict[str, Any] = {"verdict": by["verdict"], "planted_embeddings": by["planted_embeddings"]}
        for y in dict.fromkeys([plan.JUDGE, *result["judges"]]):
            view[y] = {
                name: {k: c[k] for k in ("clear", "clear_low", "clear_high", "clear_n")}
                for name, c in by[y]["cells"].items()
            }
            view[y]["label_rankers_wrong"] = by[y]["label_rankers_wrong"]
        view["p_holm"] = {
            f"{t['yardstick']}:{t['method']}-{t['against']}": t["p_holm"] for t in by["comparisons"]
        }
        out[m] = view
    return out


def yardstick_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Per yardstick: judges, ranks_degraded and the known-ranking check's p per credited method and
    degradation (none where it credits no method: the check is vacuous)."""
    return {
        y: {
            "judges": v["judges"],
            "ranks_degraded": v["ranks_degraded"],
            "known_ranking_p": {
                m: {d: c["p"] for d, c in by.items()} for m, by in v["known_ranking"].items()
            },
        }
        for y, v in result["yardsticks"].items()
    }


def method_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """``methods.json`` (module docstring) from the study's ``summary.json``."""
    keys = ("swap", "swap_low", "agreement", "agreement_low")
    out: dict[str, Any] = {
        f"as_trained_{role}": v["share"] for role, v in summary["behaves_as_trained"].items()
    }
    out.update({m: {k: v[k] for k in keys} for m, v in summary["methods"].items()})
    for m, view in faithfulness_metrics(summary["faithfulness"]).items():  # every yardstick, model, order
        out.setdefault(m, {}).update(view)
    out["yardsticks"] = yardstick_metrics(summary["faithfulness"])
    return out
