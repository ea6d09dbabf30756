"""Why EG/IG over training references miss App. B.4's tolerance: the explained width along straight paths.

For a few questions of the positive control (``controlled_direct``: the trained default model, test questions
without the result) and a few of their training references, prepared as Sec. 3.3 says, this script measures
on the trained SmolLM2 model (the ``train`` stage's classifier, ``dvc repro train`` first):

1. F(α), the explained answer's width at Z(α) = B + α (X - B), at ``--dense`` equally spaced α (no gradient),
   with its total variation, largest slope and the head's largest mass (saturation) along the path;
2. the endpoint check: F on the path at α = 1 and α = 0 against the engine's input width and prepared
   reference width (a mismatch would be a bug: mask, positions, padding or dtype);
3. the slope check: the engine's dF/dα = (X - B) · ∇F(Z(α)) at Gauss-Legendre nodes against a central finite
   difference of F (a non-differentiable step or a wrong gradient would show here);
4. the per-reference completeness residual R = |Σ e - (F(X) - F(B))| of fixed Gauss-Legendre IG at
   ``--points`` per reference (the engine, ``attribution.plan.ig_plan``), and the ``kronrod`` estimator's
   evaluations to reach ``--kronrod-tolerance`` on the same reference;
5. Captum's ``IntegratedGradients`` (gausslegendre) on the same function at one point count, vs the engine.

Writes a PNG (F along each path; R against points) and prints the tables (Markdown) for BENCHMARKS.md.

    python bench/diagnose_paths.py --questions 2 --refs 2 --points 8 16 32 64 128 256 \
        --png results/diagnosis/paths.png
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from _trained import experiment_parser, load

from xurs_pipeline.attribution.endpoints import input_width, prepared_widths, prompt_of
from xurs_pipeline.attribution.estimators import AdaptiveKronrod, PathProblem
from xurs_pipeline.attribution.gradients import accumulate
from xurs_pipeline.attribution.inputs import reference_pool, select_questions
from xurs_pipeline.attribution.model import Objective, Prompt, frozen, widths_and_betp
from xurs_pipeline.attribution.plan import SamplingPlan, ig_plan
from xurs_pipeline.attribution.quadrature import KronrodSpec
from xurs_pipeline.attribution.references import PreparedReferences, prepare_training


@torch.no_grad()
def path_values(
    model,
    prompt: Prompt,
    refs: PreparedReferences,
    r: int,
    alphas: np.ndarray,
    target: int,
    target_fn: str,
    batch: int = 16,
) -> tuple[np.ndarray, np.ndarray]:
    """F_target(Z(α)) and the head's largest mass at each α (n,), forward only."""
    x = prompt.embeds
    base = refs.embeds(model.embed, torch.tensor([r]), x)  # (1, L, d)
    values, top_mass = [], []
    with frozen(model):
        for start in range(0, len(alphas), batch):
            a = torch.as_tensor(alphas[start : start + batch], dtype=x.dtype)[:, None, None]
            z = base + a * (x - base)
            n = z.shape[0]
            out = model(z, prompt.attention_mask.expand(n, -1), prompt.position_ids.expand(n, -1))
            values.append(widths_and_betp(out.masses, target_fn)[0][:, target])
            top_mass.append(out.masses.float().max(-1).values)
    return torch.cat(values).numpy(), torch.cat(top_mass).numpy()


def slopes(model, objective, prompt, refs, r, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The engine's dF/dα and F at ``alphas`` for reference r: ((n,), (n,), prefix length used)."""
    n = len(alphas)
    plan = SamplingPlan(np.full(n, r, dtype=np.int64), alphas, np.full(n, 1.0 / n))
    sums = accumulate(model, objective, prompt, refs, plan, samples_per_call=8)
    return sums.slope[:, 0].numpy(), sums.value[:, 0].numpy(), sums.prefix


def captum_ig(
    model, prompt: Prompt, refs: PreparedReferences, r: int, target: int, target_fn: str, n_steps: int
) -> tuple[float, float]:
    """Captum IntegratedGradients (gausslegendre, n_steps) on F_target: (Σ attributions, Captum's delta)."""
    from captum.attr import IntegratedGradients

    def forward(z: torch.Tensor) -> torch.Tensor:
        n = z.shape[0]
        out = model(z, prompt.attention_mask.expand(n, -1), prompt.position_ids.expand(n, -1))
        return widths_and_betp(out.masses, target_fn)[0][:, target]

    base = refs.embeds(model.embed, torch.tensor([r]), prompt.embeds)
    with frozen(model), torch.enable_grad():
        attr, delta = IntegratedGradients(forward).attribute(
            prompt.embeds,
            baselines=base,
            n_steps=n_steps,
            method="gausslegendre",
            internal_batch_size=8,
            return_convergence_delta=True,
        )
    return float(attr.sum()), float(delta.abs().item())


def main() -> None:
    parser = experiment_parser(__doc__, "controlled_direct", 2)
    parser.add_argument("--refs", type=int, default=2)
    parser.add_argument("--dense", type=int, default=401)
    parser.add_argument("--points", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256])
    parser.add_argument("--captum-points", type=int, default=32)
    parser.add_argument("--png", default="results/diagnosis/paths.png")
    parser.add_argument("--kronrod-tolerance", type=float, default=0.01)
    parser.add_argument("--kronrod-budget", type=int, default=1500)
    args = parser.parse_args()
    C.print_header("Straight paths between a question and its training references", " ".join(sys.argv))
    torch.manual_seed(0)
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = cfg.attribution
    questions = select_questions(prompts, at, None)[: args.questions]
    pool_ids, pool_tokens = reference_pool(prompts, at, None)
    alphas = np.linspace(0.0, 1.0, args.dense)
    curves, rows, conv, checks = [], [], [], []
    for q in questions:
        prompt = prompt_of(model, q.input_ids, torch.device("cpu"))
        w_x, betp = input_width(model, prompt, at.target_fn)
        target = int(betp.argmax())
        objective = Objective.build((target,), "direct", at.target_fn)
        refs = prepare_training(
            q.input_ids, pool_tokens[0][: args.refs], pool_ids[0][: args.refs], pad_id, torch.device("cpu")
        )
        prep_all = prepared_widths(model, prompt, refs, 16, at.target_fn)
        prep = prep_all[:, target]
        for r in range(len(refs)):
            t0 = time.perf_counter()
            f, top = path_values(model, prompt, refs, r, alphas, target, at.target_fn)
            net = float(w_x[target] - prep[r])
            tv = float(np.abs(np.diff(f)).sum())
            slope_fd = np.diff(f) / np.diff(alphas)
            label = f"{q.record_id[:18]} / ref {r}"
            curves.append((label, f, top))
            # slope check at 16 Gauss-Legendre nodes against a central difference of F (h = 1e-3)
            nodes = ig_plan(r, "gausslegendre", 16).alpha
            g, f_nodes, prefix = slopes(model, objective, prompt, refs, r, nodes)
            h = 1e-3
            f_plus, _ = path_values(model, prompt, refs, r, nodes + h, target, at.target_fn)
            f_minus, _ = path_values(model, prompt, refs, r, nodes - h, target, at.target_fn)
            fd = (f_plus - f_minus) / (2 * h)
            f_at_nodes, _ = path_values(model, prompt, refs, r, nodes, target, at.target_fn)
            checks.append(
                (
                    label,
                    abs(f[-1] - float(w_x[target])),
                    abs(f[0] - float(prep[r])),
                    float(np.abs(f_nodes - f_at_nodes).max()),
                    float(np.abs(g - fd).max()),
                    float(np.abs(g).max()),
                    prefix,
                )
            )
            residuals = []
            for n in args.points:
                sums = accumulate(model, objective, prompt, refs, ig_plan(r, "gausslegendre", n), 8)
                residuals.append(abs(float(sums.per_ref[r, 0]) - net))
                print(f"  {label}: Gauss-Legendre {n} points R = {residuals[-1]:.3g}", flush=True)
            one = PreparedReferences((refs.record_ids[r],), None, refs.prepared_ids[r : r + 1], [()])
            problem = PathProblem(model, objective, prompt, one, prep_all[r : r + 1], w_x, 8)
            kr = AdaptiveKronrod(KronrodSpec(args.kronrod_tolerance, args.kronrod_budget)).attribute(problem)
            residuals.append(
                (kr.grad_evals, float(kr.ref_residual.max()), kr.exhausted, int(kr.points[0] // 15))
            )
            conv.append((label, residuals))
            rows.append(
                (
                    label,
                    len(q.input_ids),
                    net,
                    tv,
                    tv / max(abs(net), 1e-12),
                    float(np.abs(slope_fd).max()),
                    float(top.min()),
                    float(np.median(top)),
                    time.perf_counter() - t0,
                )
            )
            print(
                f"done {label}: {rows[-1]}, checks {checks[-1]}, residuals {conv[-1][1]} "
                f"(load {C.load_average()})",
                flush=True,
            )
    print("\n## F along the path (dense grid of", args.dense, "alphas)\n")
    print(
        C.markdown_table(
            [
                "question / reference",
                "tokens",
                "net F(X) - F(B)",
                "total variation",
                "TV / |net|",
                "max |dF/dα|",
                "min top mass",
                "median top mass",
                "s",
            ],
            [
                (a, b, f"{c:.3f}", f"{d:.3f}", f"{e:.1f}", f"{g:.1f}", f"{h:.3f}", f"{i:.3f}", f"{j:.0f}")
                for a, b, c, d, e, g, h, i, j in rows
            ],
        )
    )
    print("\n## Endpoint and slope checks (a bug would show here)\n")
    print(
        C.markdown_table(
            [
                "question / reference",
                "|F_path(1) - F(X)|",
                "|F_path(0) - F(B)|",
                "|F engine - F forward| (nodes)",
                "max |dF/dα engine - finite diff.|",
                "max |dF/dα|",
                "prefix reused",
            ],
            [
                (a, f"{b:.1e}", f"{c:.1e}", f"{d:.1e}", f"{e:.2e}", f"{g:.2f}", p)
                for a, b, c, d, e, g, p in checks
            ],
        )
    )
    print("\n## Residual of fixed Gauss-Legendre IG per reference\n")
    print(
        C.markdown_table(
            [
                "question / reference",
                *[f"{n} pts" for n in args.points],
                f"kronrod to {args.kronrod_tolerance}: evals, R, budget out, intervals",
            ],
            [(a, *[f"{v:.2g}" for v in res[:-1]], "{}, {:.2g}, {}, {}".format(*res[-1])) for a, res in conv],
        )
    )
    # Captum on the first pair, same function, same rule
    q = questions[0]
    prompt = prompt_of(model, q.input_ids, torch.device("cpu"))
    w_x, betp = input_width(model, prompt, at.target_fn)
    target = int(betp.argmax())
    refs = prepare_training(q.input_ids, pool_tokens[0][:1], pool_ids[0][:1], pad_id, torch.device("cpu"))
    objective = Objective.build((target,), "direct", at.target_fn)
    n = args.captum_points
    engine = accumulate(model, objective, prompt, refs, ig_plan(0, "gausslegendre", n), 8)
    total, delta = captum_ig(model, prompt, refs, 0, target, at.target_fn, n)
    net = float(w_x[target] - prepared_widths(model, prompt, refs, 1, at.target_fn)[0, target])
    print(f"\n## Captum IntegratedGradients (gausslegendre, {n} steps) on {q.record_id}, reference 0\n")
    print(
        C.markdown_table(
            ["", "Σ attributions", "|residual|"],
            [
                ("engine", f"{float(engine.e.sum()):.6f}", f"{abs(float(engine.e.sum()) - net):.4g}"),
                ("Captum", f"{total:.6f}", f"{delta:.4g} (Captum's delta)"),
            ],
        )
    )
    png = Path(args.png)
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(curves, conv, alphas, args.points, png)
    print(f"\nplot: {png}; load average at end: {C.load_average()}")


def plot(curves, conv, alphas, points, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    for label, f, _ in curves:
        left.plot(alphas, f, lw=1, label=label)
    left.set(
        xlabel="α (0: training reference B, 1: question X)",
        ylabel="F(α): explained width",
        title="width along the straight path",
    )
    left.legend(fontsize=7)
    for label, res in conv:
        right.loglog(points, np.maximum(res[:-1], 1e-8), marker="o", label=label)
        right.plot([res[-1][0]], [max(res[-1][1], 1e-8)], marker="*", ms=12, color="k")
    right.axhline(0.01, color="k", ls="--", lw=0.8, label="App. B.4 median tolerance")
    right.set(
        xlabel="gradient evaluations per reference",
        ylabel="completeness residual R",
        title="fixed Gauss-Legendre IG (lines) vs kronrod (stars)",
    )
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
