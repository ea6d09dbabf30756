"""Where App. B.4's error comes from on a trained model: how rough F is along each reference's path, and
what that makes a lattice of n points a reference cost, plain and warped (``attribution/path_warp.py``).

    OMP_NUM_THREADS=1 python bench/path_roughness.py --experiment local [--override KEY=VALUE ...] \
        [--questions 1] [--refs 4] [--dense 513] [--nodes 16 32 64] [--warp 15 31 63] [--groups 1 4 16] \
        [--segments 32] [--json FILE]

For the first ``--questions`` questions the ``attribute`` stage explains and their first ``--refs`` training
references: F at ``--dense`` equally spaced α along each straight path (forwards, ``PathProblem.values``),
each path's total variation against its gap F(X) - F(B_r), and, taking the piecewise-linear F through those
points as the integrand, the RMS error over 200 random shifts of one reference's scalar integral by the tent
lattice with n points (``certified.tent_nodes``), plain and on the warp of each ``--warp`` forwards. From
the RMS error σ(n) the rule's spread criterion at M references, 1.96 σ / sqrt(M) <= 0.01, gives the points a
reference needs: ``needed_points`` extrapolates σ(n) by the power law through the two largest n. With
``--groups``, on the same integrands, the RMS error over the random shifts of the *averaged* residual,
mean_r rho_r (App. B.4's R), with shifts shared in groups of G references: in a group one u, reference i of
it at u + i / (G n), so the group's nodes together form the lattice of G n points (G = 1: the independent
shifts of ``certify``). Stratifying across references pays where their integrands share their shape. With
``--segments S``, where one reference's error sits at the largest n: the RMS over the shifts of each of S
equal stretches of α's part of the integral against its exact ΔF (``segment_rms``), and how many stretches
hold 80% of their squared errors; each path's turning points (``sign_changes``) are recorded always. The
seconds of one forward and one gradient evaluation on the same question are measured side by side (a warp's
forwards in gradient-evaluation units). Prints one JSON record per question (``--json`` keeps them).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _trained import experiment_parser, explained_questions, load, method_config

from xurs_pipeline.attribution import path_warp
from xurs_pipeline.attribution.certified import Z_95, tent_nodes
from xurs_pipeline.attribution.endpoints import input_width, prepared_widths, prompt_of
from xurs_pipeline.attribution.estimators import PathProblem
from xurs_pipeline.attribution.model import Objective, model_device
from xurs_pipeline.attribution.plan import SamplingPlan
from xurs_pipeline.attribution.question import explained_targets, prepared_collections

SHIFTS = 200
TOLERANCE = 0.01


def problem_of(model, q, pool, at, pad_id: int) -> PathProblem:
    """The question's paths to its first collection, as the ``certified`` estimator sees them."""
    prompt = prompt_of(model, q.input_ids, model_device(model))
    w_x, betp = input_width(model, prompt, at.target_fn)
    targets = explained_targets(at.target, int(betp.argmax()), q.answer_idx)
    refs, _ = prepared_collections(model, q, pool, at, pad_id)[0]
    widths = prepared_widths(model, prompt, refs, at.eval_batch_size, at.target_fn)
    objective = Objective.build(targets, at.route, at.target_fn)
    return PathProblem(model, objective, prompt, refs, widths, w_x, at.samples_per_call, at.reuse_prefix)


def lattice_rms(f: np.ndarray, warp: path_warp.Warp | None, n: int, rng: np.random.Generator) -> np.ndarray:
    """RMS error over random shifts of each reference's n-point lattice integral of the piecewise-linear F
    through f (R, N) (its slopes constant between the dense points): (R,)."""
    errors = np.zeros((len(f), SHIFTS))
    for r in range(len(f)):
        for k, shift in enumerate(rng.uniform(size=SHIFTS)):
            errors[r, k] = lattice_error(f, warp, r, shift, n)
    rms: np.ndarray = np.sqrt((errors**2).mean(1))
    return rms


def lattice_error(f: np.ndarray, warp: path_warp.Warp | None, ref: int, shift: float, n: int) -> float:
    """Signed error of reference ``ref``'s n-point lattice integral with ``shift`` of the piecewise-linear F
    through f (R, N) (its slopes constant between the dense points)."""
    _, weighted = _weighted_slopes(f, warp, ref, shift, n)
    return float(weighted.mean() - (f[ref, -1] - f[ref, 0]))


def _weighted_slopes(
    f: np.ndarray, warp: path_warp.Warp | None, ref: int, shift: float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The lattice's nodes on reference ``ref``'s path: (α (n,), slope x weight (n,)), the piecewise-linear
    F through f (R, N) as the integrand."""
    dense = f.shape[1]
    s = tent_nodes(shift, n)
    alpha, weight = warp.place(ref, s) if warp is not None else (s, np.ones(n))
    cell = np.clip((alpha * (dense - 1)).astype(int), 0, dense - 2)
    return alpha, (f[ref, cell + 1] - f[ref, cell]) * (dense - 1) * weight


def segment_rms(f: np.ndarray, warp: path_warp.Warp | None, n: int, segments: int, rng) -> np.ndarray:
    """Where one reference's error sits: the RMS over random shifts of each of ``segments`` equal stretches
    of α's share of the n-point lattice integral against that stretch's exact ΔF, in quadrature over the
    references of f (R, N): (segments,). The stretches' errors add up to the integral's."""
    dense = f.shape[1]
    edges = np.linspace(0.0, 1.0, segments + 1)
    squares = np.zeros(segments)
    for r in range(len(f)):
        exact = np.diff(np.interp(edges, np.linspace(0.0, 1.0, dense), f[r]))
        for shift in rng.uniform(size=SHIFTS):
            alpha, weighted = _weighted_slopes(f, warp, r, shift, n)
            share = np.bincount(np.minimum((alpha * segments).astype(int), segments - 1), weighted, segments)
            squares += (share / n - exact) ** 2
    rms: np.ndarray = np.sqrt(squares / (SHIFTS * len(f)))
    return rms


def holding(rms: np.ndarray, share: float = 0.8) -> int:
    """How many of the segments hold ``share`` of their summed squared errors (largest first)."""
    squares = np.sort(rms**2)[::-1]
    if squares.sum() == 0:
        return 0  # no error anywhere
    return int(np.searchsorted(np.cumsum(squares) / squares.sum(), share) + 1)


def sign_changes(f: np.ndarray) -> list[int]:
    """How often each path's ΔF between neighbouring dense points changes sign (its turning points)."""
    steps = np.sign(np.diff(f, axis=1))
    return [int(((row[1:] * row[:-1]) < 0).sum()) for row in steps]


def averaged_rms(f: np.ndarray, warp: path_warp.Warp | None, n: int, group: int, rng) -> float:
    """RMS error over random shifts of mean_r rho_r over the R references of f (R, N), the shifts shared in
    groups of ``group`` (module docstring; the references dealt into groups afresh each draw)."""
    refs = len(f)
    if refs % group:
        raise ValueError(f"--groups {group}: must divide --refs {refs}")
    errors = np.zeros(SHIFTS)
    for k in range(SHIFTS):
        order = rng.permutation(refs).reshape(-1, group)
        for members, u in zip(order, rng.uniform(size=len(order)), strict=True):
            errors[k] += sum(
                lattice_error(f, warp, int(r), (u + i / (group * n)) % 1.0, n) for i, r in enumerate(members)
            )
    return float(np.sqrt(((errors / refs) ** 2).mean()))


def needed_points(nodes: list[int], rms: list[float], refs: int) -> float:
    """Points a reference for 1.96 σ / sqrt(M) <= 0.01 at M = ``refs``, by the power law through the two
    largest n (inf where σ does not fall)."""
    target = TOLERANCE * np.sqrt(refs) / Z_95
    (n1, n2), (s1, s2) = nodes[-2:], rms[-2:]
    if s2 <= target:
        return float(n2)
    if s2 >= s1:
        return float("inf")
    order = np.log(s1 / s2) / np.log(n2 / n1)
    return float(n2 * (s2 / target) ** (1 / order))


def seconds_per_evaluation(problem: PathProblem, count: int = 16) -> tuple[float, float]:
    """(one forward, one gradient evaluation) in seconds on reference 0's path, side by side."""
    index, alpha = np.zeros(count, dtype=np.int64), np.linspace(0.0, 1.0, count)
    start = time.perf_counter()
    problem.values(index, alpha)
    forward = (time.perf_counter() - start) / count
    start = time.perf_counter()
    problem.run(SamplingPlan(index, alpha, np.ones(count)))
    return forward, (time.perf_counter() - start) / count


def measure(problem: PathProblem, args) -> dict:
    """One question's record (module docstring)."""
    refs = list(range(min(args.refs, problem.n_paths)))
    grid = np.linspace(0.0, 1.0, args.dense)
    index = np.repeat(refs, args.dense)
    f = problem.values(index, np.tile(grid, len(refs)))[:, 0].reshape(len(refs), args.dense)
    record: dict = {
        "total_variation": np.abs(np.diff(f, axis=1)).sum(1).round(3).tolist(),
        "gap": (f[:, -1] - f[:, 0]).round(3).tolist(),
        "sign_changes": sign_changes(f),
    }

    def values(i: np.ndarray, a: np.ndarray) -> np.ndarray:
        return np.array([np.interp(x, grid, f[int(r)]) for r, x in zip(i, a, strict=True)])[:, None]

    designs = {"plain": None} | {f"warp{p}": path_warp.fit(values, f[:, :1], f[0, -1:], p) for p in args.warp}
    rng = np.random.default_rng(0)
    for name, warp in designs.items():
        rms = [float(lattice_rms(f, warp, n, rng).mean()) for n in args.nodes]
        record[name] = {
            "rms_by_nodes": dict(zip(map(str, args.nodes), np.round(rms, 4).tolist(), strict=True))
        }
        for m in (16, 64, 256):
            record[name][f"needed_points_m{m}"] = round(needed_points(args.nodes, rms, m), 1)
        if args.segments:
            rms = segment_rms(f, warp, args.nodes[-1], args.segments, rng)
            record[name]["segment_rms"] = np.round(rms, 4).tolist()
            record[name]["segments_holding_80pct"] = holding(rms)
        if args.groups:
            record[name]["averaged_rms_by_group"] = {
                str(n): {str(g): round(averaged_rms(f, warp, n, g, rng), 4) for g in args.groups}
                for n in args.nodes
            }
    record["forward_seconds"], record["gradient_seconds"] = seconds_per_evaluation(problem)
    return record


def main() -> None:
    parser = experiment_parser(__doc__, "local", 1)
    parser.add_argument("--refs", type=int, default=4)
    parser.add_argument("--dense", type=int, default=513)
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--warp", type=int, nargs="+", default=[15, 31, 63])
    parser.add_argument("--segments", type=int, default=0, help="where the error sits: S stretches of α")
    parser.add_argument("--groups", type=int, nargs="*", default=[], help="shifts shared by G references")
    parser.add_argument("--json", help="append the records here (JSON lines)")
    args = parser.parse_args()
    model, prompts, cfg, pad_id = load(args.experiment, args.override)
    at = method_config(cfg, "certified", args.refs, 4096).attribution
    questions, pool = explained_questions(model, prompts, at, args.questions)
    for q in questions:
        record = {"experiment": args.experiment, "question": q.record_id, "dense": args.dense}
        record |= measure(problem_of(model, q, pool, at, pad_id), args)
        print(json.dumps(record), flush=True)
        if args.json:
            with Path(args.json).open("a") as out:
                out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
