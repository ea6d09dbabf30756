"""What ``local``'s second method costs: occlusion_token (prefix cache, batch 16) against IG with 36 gradient
evaluations (``local``'s mean per question, BENCHMARKS.md section 5) per question, on ``local``'s model shape
(SmolLM2-135M read out at block 20 of 30, a random belief14 head: the cost does not depend on the weights'
values) and ``local``'s test prompts (synthetic_direct, families [120, 12, 24]), alternating, CPU float32.

    python bench/bench_local_compare.py [--questions 3]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import _common as C
import pandas as pd

from xurs_pipeline.attribution.config import AttributionConfig
from xurs_pipeline.attribution.inputs import natural_pool, select_questions
from xurs_pipeline.attribution.methods import QuestionInputs, method_for
from xurs_pipeline.data.config import DataConfig
from xurs_pipeline.data.dataset import data_config_hash, prepare_dataset

KEEP_LAYERS = 20  # conf/model/smollm2_135m_block20.yaml


def local_prompts(tokenizer: object) -> pd.DataFrame:
    """``local``'s prepared prompts (cached once under .cache/)."""
    out = C.BENCH_CACHE / "local_prepared"
    if not (out / "prompts.parquet").is_file():
        data = DataConfig(source="synthetic_direct", families=[120, 12, 24])
        prepare_dataset(data, tokenizer, out, data_config_hash(data))
    return pd.read_parquet(out / "prompts.parquet")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=3)
    args = p.parse_args()
    started = time.perf_counter()
    C.print_header(
        "local: occlusion_token vs IG per question",
        f"python bench/bench_local_compare.py --questions {args.questions}",
    )
    model, pad_id, tokenizer = C.smollm2()
    model.backbone.layers = model.backbone.layers[:KEEP_LAYERS]
    model.backbone.config.num_hidden_layers = KEEP_LAYERS
    prompts = local_prompts(tokenizer)
    test = prompts[prompts["split"] == "test"]
    base = AttributionConfig(progress=False, target="predicted", reference="zero", refs_per_collection=1)
    configs = {
        "occlusion_token": replace(base, method="occlusion_token"),
        "IG, 36 points": replace(base, method="ig", ig_points=36),
    }
    ig = configs["IG, 36 points"]
    pool = natural_pool(model, prompts, ig, None)
    chosen = replace(ig, record_ids=list(test["record_id"].head(args.questions)))
    questions = select_questions(prompts, chosen, None)
    wall: dict[str, list[float]] = {name: [] for name in configs}
    rows: dict[str, list] = {name: [] for name in configs}
    for q in questions:
        for name, cfg in configs.items():
            start = time.perf_counter()
            refs = pool if cfg.method == "ig" else None
            rows[name].append(method_for(cfg).explain(QuestionInputs(model, q, refs, cfg, pad_id)).rows[0])
            wall[name].append(time.perf_counter() - start)
    print(f"questions: {len(questions)}, tokens {[len(q.input_ids) for q in questions]}\n")
    table = C.cost_rows(configs, wall, rows)
    print(C.markdown_table(["method", "s / question (median)", "range", "forwards", "gradients"], table))
    print(f"\nocclusion_token / IG: {C.median_ratio(wall, 'occlusion_token', 'IG, 36 points'):.2f}x")
    C.print_footer(started)


if __name__ == "__main__":
    main()
