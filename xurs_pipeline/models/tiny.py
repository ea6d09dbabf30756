"""Tiny random Llama-architecture backbones and in-process tokenizers for tests and the smoke experiment.

Nothing here touches the network: the tokenizer is a byte-level BPE trained with ``tokenizers`` on
the texts it is given, and the model is a randomly initialised ``LlamaForCausalLM`` from a config.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    SmolLM3Config,
    SmolLM3ForCausalLM,
)

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}


def train_tiny_tokenizer(texts: Iterable[str], vocab_size: int = 512) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer (with offsets, BOS prepended, a pad token) on ``texts``.

    Deterministic for the same texts and vocabulary size.
    """
    if vocab_size < 300:
        raise ValueError(f"vocab_size={vocab_size}: must be >= 300 to hold the 256 byte symbols and specials")
    tok = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[SPECIAL_TOKENS[k] for k in ("pad_token", "bos_token", "eos_token", "unk_token")],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    bos = SPECIAL_TOKENS["bos_token"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))]
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIAL_TOKENS)
    fast.padding_side = "left"
    return fast


def tiny_llama_config(
    vocab_size: int,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 1024,
    pad_token_id: int = 0,
) -> LlamaConfig:
    """The config of :func:`build_tiny_llama` (also what ``xurs plan`` counts for ``model.backbone=tiny``)."""
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=pad_token_id,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=True,
        attention_dropout=0.0,
    )


def build_tiny_llama(vocab_size: int, seed: int = 0, **shape: int | None) -> LlamaForCausalLM:
    """A randomly initialised Llama-architecture causal LM, seeded, in eval mode, float32; ``shape``: the
    keyword arguments of :func:`tiny_llama_config` (hidden_size, num_layers, num_heads, ...)."""
    config = tiny_llama_config(vocab_size, **shape)
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)
    return model.eval()


# A fixed, built-in corpus for the tiny tokenizer: MedQA-style prompt text, so that the smoke pipeline's
# tokenizer is the same on every machine and needs no data. Byte-level BPE still encodes any text.
TINY_CORPUS: tuple[str, ...] = (
    "A 45-year-old man presents to the emergency department with chest pain radiating to the left arm.",
    "A 23-year-old woman comes to the physician because of fatigue, fever and a rash on her cheeks.",
    "A 6-year-old boy is brought to the clinic with a cough that has lasted three weeks.",
    "A 67-year-old woman has had progressive shortness of breath on exertion for two months.",
    "His temperature is 38.5°C, pulse is 110/min, respirations are 22/min, blood pressure is 90/60 mm Hg.",
    "Physical examination shows jugular venous distension and bilateral crackles at the lung bases.",
    "Laboratory studies show a hemoglobin of 9.1 g/dL, a leukocyte count of 14,500/mm3 and normal platelets.",
    "A chest x-ray shows a right lower lobe consolidation. An electrocardiogram shows ST elevation.",
    "The serum creatinine is elevated and the urinalysis shows red blood cell casts.",
    "Which of the following is the most likely diagnosis?",
    "Which of the following is the most appropriate next step in management?",
    "Which of the following is the most likely cause of this patient's condition?",
    "Which of the following test results would distinguish between the two conditions?",
    "A. Myocardial infarction\nB. Pulmonary embolism\nC. Aortic dissection\nD. Pericarditis",
    "A. Administer intravenous antibiotics\nB. Perform a lumbar puncture\nC. Order a CT scan\nD. Observe",
    "A. Systemic lupus erythematosus\nB. Rheumatoid arthritis\nC. Sarcoidosis\nD. Lyme disease",
    "Question: A patient reports a headache in the morning and dizziness in the evening.\nAnswer:",
    "The biopsy was positive. The culture was negative. The antibody test was positive for the marker.",
    "The fictional condition Varelian syndrome presents with fever; Morrick disease presents with a rash.",
    "Test results: the Kessel assay was elevated, while the Dornan panel was within normal limits.",
    "The patient was seen in the morning. The patient was seen in the evening. No result was available.",
    "Options: A, B, C, D. Answer: A. Answer: B. Answer: C. Answer: D.",
    "She takes metformin and lisinopril daily and has type 2 diabetes mellitus and hypertension.",
    "He smokes one pack of cigarettes daily and drinks alcohol occasionally; his father had colon cancer.",
    "0 1 2 3 4 5 6 7 8 9 10 20 30 40 50 60 70 80 90 100 mg mL mmol/L %",
)


def build_tiny_backbone(
    vocab_size: int = 512,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """Tokenizer trained on :data:`TINY_CORPUS` plus a matching random tiny Llama: same result every run."""
    tokenizer = train_tiny_tokenizer(TINY_CORPUS, vocab_size=vocab_size)
    model = build_tiny_llama(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        seed=seed,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model, tokenizer


# Architectures of the paper's backbones (Sec. 5.1), for tiny random stand-ins saved as local directories:
# SmolLM3 (grouped-query attention, NoPE on every fourth layer) and Llama-2.
PAPER_ARCHITECTURES = ("smollm3", "llama")
SMOLLM3_END_TOKEN = "<|im_end|>"  # SmolLM3's pad token in conf/model/smollm3_3b.yaml


def save_tiny_paper_model(
    directory: str | Path,
    architecture: str,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
) -> Path:
    """Save a tiny random causal LM of a paper architecture (``PAPER_ARCHITECTURES``) with the in-process
    tokenizer to ``directory``, loadable as ``model.backbone=hf model.source=<directory>``.

    SmolLM3 gets two key/value heads (grouped-query attention, as SmolLM3-3B) and the ``<|im_end|>`` token
    its config pads with; Llama-2 pads with ``</s>``, which the tokenizer has. Returns the directory.
    """
    if architecture not in PAPER_ARCHITECTURES:
        raise ValueError(f"architecture={architecture!r}: must be one of {PAPER_ARCHITECTURES}")
    tokenizer = train_tiny_tokenizer(TINY_CORPUS)
    shape = {
        "vocab_size": len(tokenizer) + (architecture == "smollm3"),
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "max_position_embeddings": 1024,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    if architecture == "smollm3":
        tokenizer.add_special_tokens({"additional_special_tokens": [SMOLLM3_END_TOKEN]})
        config = SmolLM3Config(**shape, num_key_value_heads=max(1, num_heads // 2), tie_word_embeddings=True)
        model_class = SmolLM3ForCausalLM
    else:
        config = LlamaConfig(**shape, num_key_value_heads=num_heads, tie_word_embeddings=False)
        model_class = LlamaForCausalLM
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = model_class(config).eval()
    finally:
        torch.random.set_rng_state(generator_state)
    out = Path(directory)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out
