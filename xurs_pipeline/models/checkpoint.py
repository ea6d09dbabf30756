"""Build, save and load ``RandomSetClassifier`` checkpoints.

A classifier directory holds ``classifier.json`` (head shape, feature layers and pooling, adaptation,
padding side, and the backbone's directory and weights SHA-256), ``head.safetensors``, and by adaptation:
nothing more for ``head_only`` (the backbone directory is referenced, not copied), ``adapter/`` (peft)
for ``lora``, and a full ``backbone/`` directory for ``partial`` (its weights changed). Loading checks
that the referenced backbone is the one the checkpoint was trained on, that the tensor files are intact
and the head finite, and (given the training run's config hash) that the checkpoint was trained under
this config.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from peft import PeftModel
from safetensors.torch import save_file
from transformers import PreTrainedTokenizerBase

from xurs_pipeline.io import (
    ArtifactError,
    Provenance,
    check_safetensors,
    read_json,
    read_safetensors,
    write_json,
)
from xurs_pipeline.models.atomic_dir import atomic_directory
from xurs_pipeline.models.backbone import (
    BACKBONE_INFO,
    Backbone,
    load_backbone_dir,
    read_backbone_info,
    write_backbone_dir,
)
from xurs_pipeline.models.classifier import RandomSetClassifier, feature_width
from xurs_pipeline.models.config import DEFAULT_FEATURE_LAYERS, ModelConfig
from xurs_pipeline.models.heads import RandomSetHead, saved_head_arguments

CLASSIFIER_INFO = "classifier.json"
CLASSIFIER_SCHEMA = "classifier"
CLASSIFIER_PROVENANCE = Provenance(CLASSIFIER_SCHEMA, 1)


def build_classifier(
    backbone: Backbone, model: ModelConfig | None = None, seed: int = 0
) -> RandomSetClassifier:
    """A fresh head (seeded) on a loaded backbone directory; backbone provenance goes into ``meta``.

    ``model`` (default: ``ModelConfig()``) gives the head: its input width follows from ``feature_layers`` and
    ``pooling`` (see ``RandomSetClassifier.features``), its kind, width, depth, dropout, output and
    conversion from ``head``, ``head_hidden``, ``head_depth``, ``head_dropout``, ``output_kind`` and
    ``conversion``.
    """
    m = model if model is not None else ModelConfig()
    width = feature_width(backbone.model.config.hidden_size, m.feature_layers, m.pooling)
    head = RandomSetHead(
        width,
        m.output_kind,
        m.head,
        m.head_hidden,
        m.conversion,
        seed=seed,
        depth=m.head_depth,
        dropout=m.head_dropout,
    )
    classifier = RandomSetClassifier(
        backbone.model, head, backbone.tokenizer.padding_side, m.feature_layers, m.pooling
    )
    classifier.meta.update(
        backbone_dir=str(backbone.directory.resolve()),
        backbone_sha256=backbone.info["weights_sha256"],
        adaptation="head_only",
    )
    return classifier


def save_classifier(
    classifier: RandomSetClassifier,
    directory: str | Path,
    tokenizer: PreTrainedTokenizerBase | None = None,
    config_hash: str = "",
) -> Path:
    """Write ``classifier`` atomically to ``directory`` (``tokenizer`` is needed for ``partial`` only).

    ``config_hash`` (the training run's, ``xurs_pipeline.config.train_run_hash``) goes into the provenance
    of ``classifier.json``; :func:`load_classifier` can then refuse a checkpoint of another config.
    """
    adaptation = classifier.meta.get("adaptation", "head_only")
    if "backbone_sha256" not in classifier.meta:
        raise ValueError("classifier.meta has no backbone_sha256: build it with build_classifier")
    final = Path(directory)
    info = {
        "head": classifier.head.describe(),
        "features": {"layers": list(classifier.feature_layers), "pooling": classifier.pooling},
        "adaptation": adaptation,
        "padding_side": classifier.padding_side,
        "backbone_sha256": classifier.meta["backbone_sha256"],
        # relative only: the checkpoint's bytes (hence DVC's hashes) must not depend on where the project
        # lies, or every copy (`dvc exp run --temp`, a fresh clone) retrains nothing but reruns all readers
        "backbone_dir": os.path.relpath(classifier.meta["backbone_dir"], final.resolve()),
    }
    with atomic_directory(final) as tmp:
        save_file(
            {k: v.detach().contiguous() for k, v in classifier.head.state_dict().items()},
            tmp / "head.safetensors",
        )
        if adaptation == "lora":
            classifier.backbone.save_pretrained(tmp / "adapter")
        elif adaptation == "partial":
            if tokenizer is None:
                raise ValueError(
                    "save_classifier: a partially tuned backbone is saved whole; pass its tokenizer"
                )
            origin = {"kind": "partial", "base_sha256": classifier.meta["backbone_sha256"]}
            write_backbone_dir(classifier.backbone, tokenizer, tmp / "backbone", origin)
        write_json(info, tmp / CLASSIFIER_INFO, Provenance(CLASSIFIER_SCHEMA, 1, config_hash))
    return final


def _referenced_backbone(directory: Path, info: dict, backbone_dir: str | Path | None) -> Path:
    """The backbone directory the checkpoint refers to, after checking its weights hash."""
    found = Path(backbone_dir) if backbone_dir is not None else directory / info["backbone_dir"]
    if not (found / BACKBONE_INFO).is_file():
        raise ArtifactError(
            f"{directory}: its backbone directory is missing (looked in {found}); run the backbone stage or "
            "pass backbone_dir"
        )
    sha = read_backbone_info(found)["weights_sha256"]
    if sha != info["backbone_sha256"]:
        raise ArtifactError(
            f"{directory}: checkpoint from another model: trained on backbone weights "
            f"{info['backbone_sha256'][:12]}..., but {found} holds {sha[:12]}..."
        )
    return found


def load_classifier(
    directory: str | Path,
    backbone_dir: str | Path | None = None,
    config_hash: str = "",
    merge_lora: bool = False,
) -> tuple[RandomSetClassifier, PreTrainedTokenizerBase]:
    """(classifier in eval mode with every weight frozen, tokenizer) from :func:`save_classifier`.

    With ``config_hash`` the checkpoint must have been saved under it (ArtifactError otherwise). With
    ``merge_lora`` a LoRA classifier's adapters are merged into its base weights (peft's
    ``merge_and_unload``: the same function to the rounding of the weights' dtype, fewer kernels per
    layer; ``attribution.merge_lora``); otherwise it is returned as trained, adapters beside the weights.
    """
    path = Path(directory)
    info = read_json(path / CLASSIFIER_INFO, Provenance(CLASSIFIER_SCHEMA, 1, config_hash))
    base_dir = _referenced_backbone(path, info, backbone_dir)
    loaded = load_backbone_dir(path / "backbone" if info["adaptation"] == "partial" else base_dir)
    backbone_model, tokenizer = loaded.model, loaded.tokenizer
    if info["adaptation"] == "lora":
        for weights in sorted((path / "adapter").glob("*.safetensors")):
            check_safetensors(weights)
        backbone_model = PeftModel.from_pretrained(backbone_model, path / "adapter")
        if merge_lora:
            backbone_model = backbone_model.merge_and_unload()
    # Classifiers saved before feature layers and pooling were choices read the final layer's last token.
    features = {"layers": list(DEFAULT_FEATURE_LAYERS), "pooling": "last", **info.get("features", {})}
    expected_in = feature_width(loaded.model.config.hidden_size, features["layers"], features["pooling"])
    head = RandomSetHead(**saved_head_arguments(info["head"]))
    load_head_weights(head, path, expected_in=expected_in)
    classifier = RandomSetClassifier(
        backbone_model, head, info["padding_side"], features["layers"], features["pooling"]
    )
    classifier.meta.update(
        backbone_dir=str(base_dir.resolve()),
        backbone_sha256=info["backbone_sha256"],
        adaptation=info["adaptation"],
    )
    tokenizer.padding_side = info["padding_side"]
    return classifier.eval().requires_grad_(False), tokenizer


def load_head_weights(head: RandomSetHead, directory: str | Path, expected_in: int | None = None) -> None:
    """Copy saved head weights into ``head`` (warm start, App. B.1); errors if the heads differ in
    anything but dropout (a training-time setting: the weights compute the same function)."""
    path = Path(directory)
    info = read_json(path / CLASSIFIER_INFO, CLASSIFIER_PROVENANCE)
    saved = {**saved_head_arguments(info["head"]), "dropout": head.dropout.p}  # dropout not compared
    if saved != head.describe() or (expected_in is not None and saved["in_features"] != expected_in):
        raise ArtifactError(
            f"{path}: checkpoint from another model or head: saved head {saved}, expected {head.describe()}"
        )
    weights = read_safetensors(path / "head.safetensors")
    counts = {name: int((~torch.isfinite(tensor)).sum()) for name, tensor in weights.items()}
    bad = {name: n for name, n in counts.items() if n}
    if bad:
        raise ArtifactError(
            f"{path / 'head.safetensors'}: non-finite head weights (NaN/inf count per tensor: {bad}); the "
            "checkpoint is unusable. Retrain (`dvc repro train`), e.g. with a lower train.lr_head."
        )
    head.load_state_dict(weights)


def warm_start_head(classifier: RandomSetClassifier, directory: str | Path) -> None:
    """Initialise ``classifier``'s head from a saved classifier trained on the same backbone weights."""
    info = read_json(Path(directory) / CLASSIFIER_INFO, CLASSIFIER_PROVENANCE)
    ours = classifier.meta.get("backbone_sha256", "?")
    if info["backbone_sha256"] != ours:
        raise ArtifactError(
            f"train.init_head_from={str(directory)!r}: checkpoint from another model (backbone "
            f"{info['backbone_sha256'][:12]}..., this run uses {ours[:12]}...)"
        )
    load_head_weights(classifier.head, directory)
