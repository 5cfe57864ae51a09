"""Attention extraction: every model family, special-token masks, padding, eager guard, offline loading."""

import time

import numpy as np
import pytest
import torch
from models_tiny import FAMILIES, MINILM, build
from PIL import Image

from rollout_equality.extract import NoAttentionError, load
from rollout_equality.extract.transformers_backend import head_average
from rollout_equality.measure import measure_inputs
from rollout_equality.models import ModelUnavailableError, prepare_model

TEXTS = ["The cat sat on the mat.", "Attention rollout multiplies the layers of a transformer together.", "Hi"]


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)) for h, w in [(48, 64), (64, 40), (50, 50)]]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {name: build(name, root) for name in FAMILIES}


@pytest.mark.parametrize("name", [n for n, f in FAMILIES.items() if f[1] == "image"])
def test_vision_families(name, built, images):
    _, _, _, n_special = FAMILIES[name]
    ex = load(built[name], "cpu")
    out = ex(images)
    assert len(out) == len(images)
    for layers, special in out:
        L, n, _ = layers.shape
        assert L >= 2 and layers.dtype == np.float32
        assert np.allclose(layers.sum(-1), 1, atol=1e-5)
        assert special.dtype == bool and special[:n_special].all() and not special[n_special:].any()
    # a square patch grid follows the special tokens
    n_patches = out[0][0].shape[1] - n_special
    assert int(np.sqrt(n_patches)) ** 2 == n_patches


@pytest.mark.parametrize("name", ["roberta", "distilbert", "bert"])
def test_text_families_special_tokens(name, built):
    ex = load(built[name], "cpu", max_tokens=32)
    enc = [ex.tokenizer(t, truncation=True, max_length=32)["input_ids"] for t in TEXTS]
    for (layers, special), ids in zip(ex(TEXTS), enc):
        assert layers.shape[1:] == (len(ids), len(ids))  # padding removed
        expected = np.array([i in ex.tokenizer.all_special_ids for i in ids])
        assert np.array_equal(special, expected)
        assert special[0] and special[-1] and not special[1:-1].any()  # <s> … </s>, [CLS] … [SEP]
        assert np.allclose(layers.sum(-1), 1, atol=1e-5)


def test_truncation_to_max_tokens(built):
    ex = load(built["bert"], "cpu", max_tokens=8)
    ((layers, special),) = ex(["one two three four five six seven eight nine ten eleven twelve"])
    assert layers.shape[-1] == 8 and special[0] and special[-1]


@pytest.mark.parametrize("name", ["bert", "roberta", "dinov2_reg", "timm_deit_distilled"])
def test_batched_run_gives_the_batch_size_1_records(name, built, images):
    """Padding is removed per input: a batch of 3 gives the records of three runs of 1.

    Booleans, counts and witnesses are equal; the floats agree to float32 rounding
    (matrix products of different batch shapes round differently in the last bits).
    """
    ex = load(built[name], "cpu", max_tokens=32)
    inputs = TEXTS if FAMILIES[name][1] == "text" else images
    ids = [f"x{i}" for i in range(len(inputs))]
    batched, batched_ro, _ = measure_inputs(ex, ids, inputs, model=name, dataset="d", batch_size=3)
    single, single_ro, _ = measure_inputs(ex, ids, inputs, model=name, dataset="d", batch_size=1)
    assert len(batched) == len(single) == 2 * len(inputs) * ex.n_layers
    for a, b in zip(batched, single):
        for key in (
            "input_id",
            "layer",
            "token_set",
            "n_tokens",
            "holds",
            "holds_direct",
            "n_max_pairs",
            "witness_i",
            "witness_j",
        ):
            assert a[key] == b[key], (key, a, b)
        for key in ("kappa", "kappa_half", "bound", "slack"):
            assert a[key] == pytest.approx(b[key], abs=1e-5)
    for a, b in zip(batched_ro, single_ro):
        assert a["kappa_rollout"] == pytest.approx(b["kappa_rollout"], abs=1e-5)


def test_real_minilm_offline(tmp_path):
    info = prepare_model(
        "minilm",
        {"backend": "transformers", "modality": "text", "local": MINILM},
        tmp_path,
        tmp_path / "minilm" / "model.json",
    )
    ex = load(info, "cpu", max_tokens=128)
    assert ex.n_layers == 6 and ex.model.config.num_attention_heads == 12 and ex.model.config.hidden_size == 384
    out = ex(TEXTS)
    layers, special = out[0]
    tokens = ex.tokenizer.convert_ids_to_tokens(ex.tokenizer(TEXTS[0])["input_ids"])
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert layers.shape == (6, len(tokens), len(tokens))
    assert np.array_equal(special, [t in ("[CLS]", "[SEP]") for t in tokens])
    rows, ro, _ = measure_inputs(ex, ["a", "b", "c"], TEXTS, model="minilm", dataset="t")
    assert {r["token_set"] for r in rows} == {"content", "all"}
    assert all(r["holds"] == r["holds_direct"] for r in rows)
    assert all(r["kappa_rollout"] <= r["product_kappa_half"] + 1e-12 <= r["product_bound"] + 2e-12 for r in ro)


def test_sdpa_returns_no_attention_and_is_refused(built):
    import transformers

    model = transformers.AutoModel.from_pretrained(built["bert"]["path"], attn_implementation="sdpa").eval()
    tok = transformers.AutoTokenizer.from_pretrained(built["bert"]["path"])
    with torch.inference_mode():
        out = model(**tok(["hello world"], return_tensors="pt"), output_attentions=True)
    attentions = out.attentions or ()
    if attentions:  # a transformers release that falls back to eager: the guard is still tested below
        assert len(attentions) == 2
    with pytest.raises(NoAttentionError, match="eager"):
        head_average((), "bert")


def test_offline_download_fails_fast_with_the_ways_out(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    spec = {"backend": "transformers", "modality": "image", "hub": {"id": "facebook/dinov2-small", "revision": "main"}}
    start = time.perf_counter()
    with pytest.raises(ModelUnavailableError) as err:
        prepare_model("dinov2_small", spec, tmp_path / "dinov2_small", tmp_path / "dinov2_small" / "model.json")
    assert time.perf_counter() - start < 10
    message = str(err.value)
    for part in (
        "dinov2_small",
        "facebook/dinov2-small",
        "HF_HUB_OFFLINE=1",
        "not on disk",
        "snakemake download",
        "local:",
        "offline suite",
    ):
        assert part in message
    assert not (tmp_path / "dinov2_small" / "model.json").exists()


def test_bad_model_entries(tmp_path):
    with pytest.raises(ValueError, match="exactly one of hub, local, random_init"):
        prepare_model("m", {"backend": "transformers", "modality": "text"}, tmp_path, tmp_path / "m.json")
    with pytest.raises(ValueError, match="backend must be one of"):
        prepare_model("m", {"backend": "keras", "modality": "text", "local": "."}, tmp_path, tmp_path / "m.json")
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        prepare_model(
            "m",
            {"backend": "transformers", "modality": "text", "local": str(tmp_path / "nope")},
            tmp_path,
            tmp_path / "m.json",
        )


def test_cli_measure_on_a_text_list(tmp_path):
    import pandas as pd

    from rollout_equality.cli import main

    (tmp_path / "lines.txt").write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "r.parquet"
    code = main(
        [
            "measure",
            "--model",
            MINILM,
            "--name",
            "minilm",
            "--modality",
            "text",
            "--texts",
            str(tmp_path / "lines.txt"),
            "--out",
            str(out),
            "--resources",
            str(tmp_path / "models"),
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    df = pd.read_parquet(out)
    assert len(df) == 3 * 6 * 2 and set(df["input_id"]) == {"line-1", "line-2", "line-3"}
    assert (tmp_path / "r.rollout.parquet").exists() and (tmp_path / "models/minilm/model.json").exists()


def test_cli_measure_offline_hub_model_fails_with_a_message(tmp_path, monkeypatch, capsys):
    from rollout_equality.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    (tmp_path / "lines.txt").write_text("hello\n")
    code = main(
        [
            "measure",
            "--model",
            "FacebookAI/roberta-base",
            "--modality",
            "text",
            "--texts",
            str(tmp_path / "lines.txt"),
            "--out",
            str(tmp_path / "r.parquet"),
            "--resources",
            str(tmp_path / "m"),
        ]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "roberta-base" in err and "HF_HUB_OFFLINE=1" in err and "Traceback" not in err
    assert not (tmp_path / "r.parquet").exists()
