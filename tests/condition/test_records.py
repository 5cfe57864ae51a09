"""Records: the analysis of one input (rollout_equality.condition.analysis), the Parquet schema, provenance and
errors."""

import numpy as np
import pytest

from rollout_equality.condition.analysis import analyse
from rollout_equality.condition.attention import Attention
from rollout_equality.condition.dobrushin import equality_condition, restrict, rollout
from rollout_equality.condition.records import LAYER_SCHEMA, ROLLOUT_SCHEMA, read_metadata, read_records, write_records


def attention(L=3, n=6, seed=0):
    return np.random.default_rng(seed).dirichlet(np.full(n, 0.5), size=(L, n)).astype(np.float32)


def analyse_input(layers, special, input_id):
    """The layer and rollout rows of one input's head-averaged attention."""
    ((rows, ro, heads, heads_ro),) = analyse([Attention(layers, special)], [input_id], model="m", dataset="d")
    assert heads == heads_ro == []  # nothing beyond the head average by default
    return rows, ro


def test_analyse_input_matches_the_library():
    layers = attention()
    special = np.array([True, False, False, False, False, True])
    rows, ro = analyse_input(layers, special, "i0")
    assert len(rows) == 2 * 3 and len(ro) == 2 * 3
    content = restrict(layers.astype(np.float64), ~special)
    for row in rows:
        A = content[row["layer"]] if row["token_set"] == "content" else layers[row["layer"]].astype(np.float64)
        expected = equality_condition(A)
        assert row["n_tokens"] == (4 if row["token_set"] == "content" else 6) and row["n_layers"] == 3
        assert row["holds"] == expected.holds and row["kappa"] == expected.kappa
        assert (row["witness_i"], row["witness_j"]) == (expected.witness or (-1, -1))
    content_ro = [r for r in ro if r["token_set"] == "content"]
    assert [r["kappa_rollout"] for r in content_ro] == pytest.approx(rollout(content).kappa_rollout.tolist())


def test_records_round_trip_with_schema_and_provenance(tmp_path):
    rows, ro = analyse_input(attention(), np.array([1, 0, 0, 0, 0, 0], bool), "i0")
    path, rollout_file = tmp_path / "m" / "d.parquet", tmp_path / "m" / "d.rollout.parquet"
    write_records(path, rollout_file, rows, ro, {"model": {"name": "m"}, "condition": {"atol": 1e-9}})
    df = read_records(path)
    assert list(df.columns) == LAYER_SCHEMA.names and len(df) == 6
    assert list(read_records(rollout_file).columns) == ROLLOUT_SCHEMA.names
    assert read_metadata(path)["condition"]["atol"] == 1e-9 and read_metadata(rollout_file) == read_metadata(path)


def test_analyse_input_errors():
    with pytest.raises(ValueError, match="every token is special"):
        analyse_input(attention(n=3), np.ones(3, bool), "x")
    with pytest.raises(ValueError, match="mask has shape"):
        analyse_input(attention(n=3), np.zeros(4, bool), "x")
    with pytest.raises(ValueError, match="layers, n, n"):
        analyse_input(np.eye(3), np.zeros(3, bool), "x")


def test_analysis_on_a_pool_gives_the_same_records():
    """One task per (input, token set, label) on worker threads, serial kernels: the records of the analysis
    in the calling thread, bit for bit and in order, for inputs of different sizes."""
    from concurrent.futures import ThreadPoolExecutor

    batch = []
    for n in (6, 40, 9, 40, 130):
        special = np.zeros(n, bool)
        special[[0, -1]] = True
        batch.append((attention(L=4, n=n, seed=n + len(batch)), special))
    ids = [f"x{i}" for i in range(len(batch))]
    here = analyse(batch, ids, model="m", dataset="d")
    with ThreadPoolExecutor(max_workers=3) as pool:
        on_pool = analyse(batch, ids, model="m", dataset="d", pool=pool)
        # an input that cannot be analysed raises its error from the pool too
        bad = attention(L=2, n=5)
        bad[1, 3] = [0.0, 0.0, 1.0, 0.0, 0.0]  # content row 3 of layer 1 attends only to the special token 2
        special = np.zeros(5, bool)
        special[2] = True
        with pytest.raises(ValueError, match="cannot be renormalised"):
            analyse([batch[0], (bad, special)], ["ok", "bad"], model="m", dataset="d", pool=pool)
    assert here == on_pool
    assert [records.layer[0]["input_id"] for records in on_pool] == ids


def test_missing_records_name_the_step(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the measure step"):
        read_records(tmp_path / "m" / "d.parquet")
    with pytest.raises(ValueError, match="no records"):
        write_records(tmp_path / "x.parquet", tmp_path / "x.rollout.parquet", [], [], {})


def test_the_records_provenance_names_what_was_measured_not_where_it_lay():
    """The model record in a records file leaves out the folder and the files' modification times: the same model
    gives the same record bytes in any project folder, virtual environment or copy of the files."""
    from rollout_equality.acquire.models import model_record

    info = {
        "name": "m",
        "local": "package:p",
        "distribution": {"name": "p", "version": "1.0"},
        "path": "/work/.venv/lib/python3.11/site-packages/p/model",
        "files": {"model.safetensors": {"size": 3, "sha256": "ab"}},
        "stamps": {"model.safetensors": 1700000000000000000},
    }
    assert model_record(info) == {k: v for k, v in info.items() if k not in ("path", "stamps")}
    moved = {**info, "path": "/elsewhere/p/model", "stamps": {"model.safetensors": 1}}
    assert model_record(moved) == model_record(info)


def test_every_column_is_described_once_and_docs_outputs_lists_them():
    from rollout_equality.condition.records import COLUMNS, SCHEMAS
    from tools.documents import outputs

    assert set(COLUMNS) == {name for schema in SCHEMAS.values() for name in schema.names}
    table = outputs.records_table().splitlines()
    assert [line.split("|")[1].strip() for line in table[2:]] == [f"`{c}`" for c in COLUMNS]
    assert "| `seed` | int32 | layer, rollout, heads, heads rollout |" in table[
        3
    ] and "| `depth` | int16 | rollout, heads rollout |" in "\n".join(table)
