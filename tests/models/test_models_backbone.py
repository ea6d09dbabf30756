"""Backbone sources -> a plain HF directory; every bad input names its setting and writes nothing."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from transformers import AutoModelForCausalLM

from xurs_pipeline.models.backbone import (
    BACKBONE_INFO,
    TinySpec,
    configure_tokenizer,
    load_backbone_dir,
    load_source,
    materialize_backbone,
    weights_sha256,
)
from xurs_pipeline.models.gguf import resolve_gguf_path


def test_tiny_backbone_is_reproducible_and_reloads(tiny_backbone_dir, tmp_path) -> None:
    again = materialize_backbone(tmp_path / "again", "tiny")
    info = json.loads((tiny_backbone_dir / BACKBONE_INFO).read_text())
    assert again["weights_sha256"] == info["weights_sha256"] == weights_sha256(tiny_backbone_dir)
    assert info["origin"]["kind"] == "tiny"
    assert (info["pad_token"], info["padding_side"], info["num_layers"]) == ("<pad>", "left", 2)
    loaded = load_backbone_dir(tiny_backbone_dir)
    reference, tokenizer, _ = load_source("tiny")
    ids = torch.tensor([tokenizer("Answer: B").input_ids])
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.model(input_ids=ids).last_hidden_state, reference.model(input_ids=ids).last_hidden_state
        )
    assert loaded.tokenizer.get_vocab() == tokenizer.get_vocab()


def test_local_hf_directory_round_trip(tmp_path) -> None:
    model, tokenizer, _ = load_source("tiny", tiny=None)
    model.save_pretrained(tmp_path / "hf")
    tokenizer.save_pretrained(tmp_path / "hf")
    info = materialize_backbone(tmp_path / "out", "hf", str(tmp_path / "hf"), local_files_only=True)
    assert info["origin"] == {"kind": "hf", "source": str(tmp_path / "hf")}
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    for (name, a), (_, b) in zip(model.state_dict().items(), reloaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_unknown_hub_id_offline_names_the_setting(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"model\.source='no-such-org/no-such-model'.*hub id"):
        materialize_backbone(tmp_path / "out", "hf", "no-such-org/no-such-model", local_files_only=True)
    with pytest.raises(
        FileNotFoundError, match=r"model\.source='/nonexistent/dir': local directory not found"
    ):
        materialize_backbone(tmp_path / "out", "hf", "/nonexistent/dir")
    assert list(tmp_path.iterdir()) == []


def test_missing_gguf_file_and_package_name_the_setting(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"model\.source='.*missing\.gguf': GGUF file not found"):
        materialize_backbone(tmp_path / "out", "gguf", str(tmp_path / "missing.gguf"))
    with pytest.raises(FileNotFoundError, match=r"model\.gguf_package='no_such_pkg' is not installed"):
        materialize_backbone(tmp_path / "out", "gguf", "", gguf_package="no_such_pkg", gguf_file="m.gguf")
    assert list(tmp_path.iterdir()) == []


def test_gguf_is_found_inside_a_package_without_importing_it(tmp_path, monkeypatch) -> None:
    package = tmp_path / "site" / "weights_pkg_for_test"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported!')\n")  # needs llama.cpp, say
    (package / "model.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert resolve_gguf_path("", "weights_pkg_for_test", "model.gguf") == package / "model.gguf"
    assert "weights_pkg_for_test" not in sys.modules
    with pytest.raises(FileNotFoundError, match=r"model\.gguf_file='other\.gguf': not found in package"):
        resolve_gguf_path("", "weights_pkg_for_test", "other.gguf")


def test_tokenizer_without_pad_token(tmp_path) -> None:
    model, tokenizer, _ = load_source("tiny")
    tokenizer.pad_token = None
    model.save_pretrained(tmp_path / "hf")
    tokenizer.save_pretrained(tmp_path / "hf")
    with pytest.raises(ValueError, match=r"model\.pad_token='': the tokenizer has no pad token.*</s>"):
        materialize_backbone(tmp_path / "out", "hf", str(tmp_path / "hf"), local_files_only=True)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match=r"model\.pad_token='<nope>': not a token"):
        configure_tokenizer(tokenizer, "<nope>", "left")
    info = materialize_backbone(
        tmp_path / "out", "hf", str(tmp_path / "hf"), pad_token="</s>", local_files_only=True
    )
    assert (info["pad_token"], info["pad_token_id"]) == ("</s>", tokenizer.convert_tokens_to_ids("</s>"))


def test_failed_rebuild_keeps_the_previous_directory(tiny_backbone_dir, tmp_path) -> None:
    out = tmp_path / "backbone"
    materialize_backbone(out, "tiny")
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(FileNotFoundError):
        materialize_backbone(out, "gguf", str(tmp_path / "missing.gguf"))
    assert sorted(p.name for p in out.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir()] == ["backbone"]  # no temporary leftovers


def test_keep_layers_reads_the_source_out_at_that_block(tmp_path) -> None:
    """``model.keep_layers=k``: the saved backbone has k blocks and its final state is the full model's
    block-k state through the final norm (an early exit), so nothing above block k is ever computed."""
    tiny = TinySpec(layers=3)
    full_info = materialize_backbone(tmp_path / "full", "tiny", tiny=tiny)
    info = materialize_backbone(tmp_path / "cut", "tiny", tiny=tiny, keep_layers=2)
    assert (full_info["num_layers"], info["num_layers"]) == (3, 2)
    assert info["origin"]["kept_layers"] == 2
    assert info["origin"]["source_layers"] == 3
    full, cut = load_backbone_dir(tmp_path / "full"), load_backbone_dir(tmp_path / "cut")
    ids = full.tokenizer("a patient has fever", return_tensors="pt").input_ids
    with torch.no_grad():
        block2 = full.model(ids, output_hidden_states=True).hidden_states[2]
        expected = full.model.norm(block2)
        torch.testing.assert_close(cut.model(ids).last_hidden_state, expected)
    with pytest.raises(ValueError, match=r"model\.keep_layers=4: the backbone has 3 blocks"):
        materialize_backbone(tmp_path / "bad", "tiny", tiny=tiny, keep_layers=4)
