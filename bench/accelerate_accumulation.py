"""Why ``train.loop.fit`` drives gradient accumulation itself: 2 processes vs 1 at the same global batch.

One epoch of the same head on the same 10 examples (global batch 8: 1 process x batch 4 x 2 accumulation
steps, or 2 processes x batch 4 x 1), each way run on 1 and on 2 CPU processes (torchrun, gloo), and the
largest difference of the trained weights between the two process counts:

- ``guide``: accelerate's gradient-accumulation guide as written (a prepared DataLoader,
  ``Accelerator(gradient_accumulation_steps=...)``, ``with accelerator.accumulate(model)``, the
  micro-batch's mean loss);
- ``guide_counted``: the same with the guide's recipe for steps of unequal size (the summed loss scaled
  by accumulation steps x processes over the step's example count, gathered over the processes);
- ``xurs``: ``train.loop.fit`` (``train.data.step_batches``: every optimiser step the mean over the same
  examples at any process count).

    python bench/accelerate_accumulation.py     # about 30 s on 2 CPU cores

The prepared DataLoader's ``even_batches`` makes every process run as many batches as the busiest one by
repeating examples from the start of the epoch, so the 2-process epoch trains on 12 examples where one
process trains on 10; ``even_batches=False`` leaves processes with different numbers of micro-batches,
which then meet at different synchronisations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

N, FEATURES, GLOBAL_BATCH, BATCH = 10, 16, 8, 4


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 4, (N,), generator=g)
    return torch.randn(N, FEATURES, generator=g), labels


def _head() -> torch.nn.Module:
    from xurs_pipeline.models.heads import RandomSetHead
    from xurs_pipeline.train.data import FeatureForward

    return FeatureForward(RandomSetHead(FEATURES, "belief14", "linear", seed=0))


def _guide(counted: bool) -> tuple[torch.Tensor, int]:
    """One epoch as accelerate's guide writes it; returns the weights and the examples this process saw."""
    from accelerate import Accelerator
    from torch.utils.data import DataLoader, TensorDataset

    from xurs_pipeline.models.losses import rs_loss

    x, y = _data()
    accelerator = Accelerator(gradient_accumulation_steps=GLOBAL_BATCH // (BATCH * int(os.environ["P"])))
    model = _head()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    seen, k, p = 0, accelerator.gradient_accumulation_steps, accelerator.num_processes
    for features, labels in loader:
        seen += len(labels)
        with accelerator.accumulate(model):
            parts = rs_loss(model(features), labels, "belief14", 0.1)
            loss = parts.answer_nll + 0.1 * parts.set_term
            if counted:  # the guide's variable-size recipe: the step's examples over every process
                count = accelerator.gather(torch.tensor([len(labels)])).sum()
                loss = loss.sum() * k * p / count
            else:
                loss = loss.mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    weights = torch.cat([q.detach().flatten() for q in accelerator.unwrap_model(model).parameters()])
    return weights, seen


def _xurs() -> tuple[torch.Tensor, int]:
    from accelerate import PartialState

    from xurs_pipeline.train.config import TrainConfig
    from xurs_pipeline.train.data import LabelledSet, step_batches
    from xurs_pipeline.train.loop import Trainee, fit

    x, y = _data()
    model = _head()
    settings = TrainConfig(max_epochs=1, patience=0, batch_size=BATCH, global_batch=GLOBAL_BATCH, lr_head=0.5)
    fit(
        Trainee(model, {"head": list(model.parameters())}, "belief14"),
        LabelledSet(x, y),
        LabelledSet(x, y),
        settings,
    )
    state = PartialState()
    steps = step_batches(list(range(N)), GLOBAL_BATCH, BATCH, state.num_processes, state.process_index)
    seen = sum(len(indices) for _, micro in steps for indices, real in micro if real)
    return torch.cat([q.detach().flatten() for q in model.parameters()]), seen


def worker(out: Path) -> None:
    """One launch's three runs; the main process writes {way: (weights, examples seen by all)}."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    state = PartialState(cpu=True, backend="gloo")
    result = {}
    for way, run in (
        ("guide", lambda: _guide(False)),
        ("guide_counted", lambda: _guide(True)),
        ("xurs", _xurs),
    ):
        weights, seen = run()
        result[way] = (weights.double().tolist(), sum(gather_object([seen])))
    if state.is_main_process:
        out.write_text(json.dumps(result))


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for p in (1, 2):
            out = Path(tmp) / f"{p}.json"
            env = {**os.environ, "P": str(p), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root)}
            cmd = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node",
                str(p),
                __file__,
                "--worker",
                str(out),
            ]
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            runs[p] = json.loads(out.read_text())
    print("| way | examples per epoch, 1 / 2 processes | max abs weight difference, 2 vs 1 process |")
    print("|---|---|---|")
    for way in runs[1]:
        (w1, n1), (w2, n2) = runs[1][way], runs[2][way]
        diff = max(abs(a - b) for a, b in zip(w1, w2, strict=True))
        print(f"| {way} | {n1} / {n2} | {diff:.1e} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(Path(sys.argv[2]))
    else:
        main()
