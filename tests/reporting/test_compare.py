"""`rollout-equality compare A B`: two runs' tables compared row by row within each number's uncertainty.

The moved copies are derived from whatever docs/offline holds (its counts and scores shifted), so that they stay
true when docs/offline is regenerated.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO

from rollout_equality.condition.baseline import wilson_interval
from rollout_equality.config.load import validated
from rollout_equality.reporting.claims import claims
from rollout_equality.reporting.compare import ROUNDING_ATOL, TABLES, BadTables, compare, holm
from rollout_equality.reporting.stats import depth_rates, model_rates, rollout_summary, special_token_shares, with_seeds
from rollout_equality.reporting.suite_tables import ftt_scores
from rollout_equality.reporting.writers import write_csv

KEPT = REPO / "docs" / "offline"

# What a new user's run on an AMD EPYC gave against the kept Intel run (CHANGELOG 2026-12-02, issue 38): the
# FT-Transformer rows moved by these amounts, every transformer row was the same bytes.
AMD_HOLDS = {  # (model, dataset, token_set): holds on the AMD machine minus the kept holds
    ("ftt_seed0", "adult_uci", "all"): 268 - 272,
    ("ftt_seed0", "adult_uci", "content"): 228 - 226,
    ("ftt_seed2", "breast_cancer", "all"): 119 - 120,
}
AMD_SCORES = {  # (dataset, seed): test score on the AMD machine minus the kept one
    ("adult_uci", "0"): 0.858178 - 0.858731,
    ("diabetes", "0"): 56.5797 - 56.527538,
    ("diabetes", "1"): 59.1306 - 59.210323,
    ("diabetes", "2"): 58.5957 - 57.339752,
}


def read(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / f"{name}.csv", dtype=str, keep_default_na=False)


def write(df: pd.DataFrame, folder: Path, name: str) -> None:
    df.to_csv(folder / f"{name}.csv", index=False, lineterminator="\n")


def kept_copy(folder: Path) -> Path:
    """The tables docs/offline keeps, with the claims table its numbers give under the shipped config's claims."""
    folder.mkdir()
    for name in TABLES:
        if (KEPT / f"{name}.csv").is_file():
            shutil.copyfile(KEPT / f"{name}.csv", folder / f"{name}.csv")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config = validated(config)
    rates = pd.read_csv(KEPT / "model_rates.csv").astype({"seed": "Int64"})
    table = claims(
        config["claims"],
        rates,
        pd.read_csv(KEPT / "random_baseline.csv"),
        pd.read_csv(KEPT / "depth_rates.csv"),
        special=pd.read_csv(KEPT / "special_tokens.csv"),
    )
    write_csv(table, folder / "claims.csv")
    return folder


def set_holds(df: pd.DataFrame, mask: pd.Series, shift: int, holds: str = "holds", total: str = "pairs") -> None:
    """Shift the count ``holds`` of the row ``mask`` by ``shift``, its rate and Wilson interval with it."""
    (i,) = df.index[mask]
    k, n = int(df.at[i, holds]) + shift, int(df.at[i, total])
    assert 0 <= k <= n, f"cannot shift {df.loc[i].tolist()} by {shift}"
    low, high = wilson_interval(k, n) if n else (np.nan, np.nan)
    rate = "rate" if "rate" in df.columns else "share"
    df.loc[i, [holds, rate, "ci_low", "ci_high"]] = [str(k), *(f"{v:.6f}" for v in (k / n, low, high))]


def key_mask(df: pd.DataFrame, **key: str) -> pd.Series:
    mask = pd.Series(True, index=df.index)
    for column, value in key.items():
        mask &= df[column] == value
    return mask


def amd_copy(folder: Path) -> Path:
    """A copy of the kept tables whose FT-Transformer rows carry the AMD machine's numbers: the rates, one layer of
    each moved rate in depth_rates, the pairs failing on all tokens in special_tokens, and the test scores."""
    kept_copy(folder)
    rates, depth, special = read(folder, "model_rates"), read(folder, "depth_rates"), read(folder, "special_tokens")
    for (model, dataset, token_set), shift in AMD_HOLDS.items():
        set_holds(rates, key_mask(rates, model=model, dataset=dataset, token_set=token_set), shift)
        layers = depth[key_mask(depth, model=model, dataset=dataset, token_set=token_set)]
        room = layers["holds"].astype(int) if shift < 0 else layers["pairs"].astype(int) - layers["holds"].astype(int)
        set_holds(depth, depth.index == room.idxmax(), shift)
        if token_set == "all":  # a pair that stops holding on all tokens fails there
            i = special.index[key_mask(special, model=model, dataset=dataset)][0]
            special.at[i, "failing_all"] = str(int(special.at[i, "failing_all"]) - shift)
            set_holds(special, special.index == i, 0, holds="content_holds", total="failing_all")
    scores = read(folder, "ftt_scores")
    for (dataset, seed), shift in AMD_SCORES.items():
        mask = key_mask(scores, dataset=dataset, seed=seed)
        scores.loc[mask, "test"] = f"{float(scores.loc[mask, 'test'].iloc[0]) + shift:.6f}"
    moved = {"model_rates": rates, "depth_rates": depth, "special_tokens": special, "ftt_scores": scores}
    for name, df in moved.items():
        write(df, folder, name)
    return folder


def run(a: Path, b: Path) -> subprocess.CompletedProcess:
    """The command line, as a reader runs it."""
    cmd = [sys.executable, "-m", "rollout_equality", "compare", str(a), str(b)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def lines(out: str) -> dict[str, str]:
    """{table key: class} of the report's row lines."""
    found = {}
    for line in out.splitlines():
        verdict, _, rest = line.partition(": ")
        if verdict in ("within uncertainty", "different", "other inputs", "missing"):
            found[rest.split(" — ")[0]] = verdict
    return found


def test_holm_known_answer_and_step_down():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> non-decreasing: 0.06 for the last
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0] and holm([]).size == 0
    # step-down: less strict than Bonferroni (0.012 × 3 > 0.025 keeps it, 0.012 × 2 rejects it)
    adjusted = holm([0.001, 0.012, 0.5])
    assert adjusted[1] == pytest.approx(0.024) and adjusted[1] <= 0.025 < 3 * 0.012


def test_the_amd_machines_ftt_rows_are_within_uncertainty_of_the_kept_run(tmp_path):
    """docs/offline against a copy whose FT-Transformer rows carry the numbers of a run on another processor: every
    moved row is within uncertainty, nothing else moved, exit 0."""
    kept, amd = kept_copy(tmp_path / "kept"), amd_copy(tmp_path / "amd")
    res = run(kept, amd)
    assert res.returncode == 0, res.stdout + res.stderr
    moved = lines(res.stdout)
    assert set(moved.values()) == {"within uncertainty"}
    rates_moved = {f"model_rates {'/'.join(k)}" for k in AMD_HOLDS}
    scores_moved = {f"ftt_scores {d}/{s}" for d, s in AMD_SCORES}
    assert rates_moved | scores_moved <= set(moved)
    assert {k.split()[0] for k in moved} == {"model_rates", "depth_rates", "special_tokens", "ftt_scores"}
    assert "0 different, 0 other inputs, 0 missing" in res.stdout.splitlines()[-1]
    # the seeds' spread is what the scores are set against: diabetes seed 2 moved by one seed spread, not more
    (line,) = [x for x in res.stdout.splitlines() if "ftt_scores diabetes/2" in x]
    assert "seed spread" in line and "t p = " in line


def test_a_transformer_falling_from_100_to_80_percent_is_different(tmp_path):
    kept, moved = kept_copy(tmp_path / "kept"), kept_copy(tmp_path / "moved")
    rates = read(moved, "model_rates")
    full = (rates["seed"] == "") & (rates["token_set"] == "content") & (rates["pairs"] == "240")
    full &= rates["rate"].astype(float) == 1
    i = rates.index[full][0]  # a transformer that holds at every one of its 240 pairs on content tokens
    set_holds(rates, rates.index == i, -48)  # 192 of 240: 80%
    write(rates, moved, "model_rates")
    res = run(kept, moved)
    assert res.returncode == 1, res.stdout + res.stderr
    name = f"model_rates {rates.at[i, 'model']}/{rates.at[i, 'dataset']}/content"
    assert lines(res.stdout) == {name: "different"}
    assert "240/240 (100.0%) against 192/240 (80.0%): Fisher p = " in res.stdout
    assert "1 different, 0 other inputs, 0 missing" in res.stdout.splitlines()[-1]


def test_a_claim_whose_status_flips_is_different(tmp_path):
    kept, flipped = kept_copy(tmp_path / "kept"), kept_copy(tmp_path / "flipped")
    table = read(flipped, "claims")
    i = table.index[table["status"] == "reproduced"][0]
    table.at[i, "status"] = "not reproduced"
    write(table, flipped, "claims")
    res = run(kept, flipped)
    assert res.returncode == 1, res.stdout + res.stderr
    assert lines(res.stdout) == {f"claims {table.at[i, 'claim']}/{table.at[i, 'subject']}": "different"}
    assert "status 'reproduced' against 'not reproduced'" in res.stdout


def test_bad_input_exits_2_naming_the_folder_and_what_is_missing(tmp_path):
    kept = kept_copy(tmp_path / "kept")
    empty = tmp_path / "no_rates"
    shutil.copytree(kept, empty)
    (empty / "model_rates.csv").unlink()
    res = run(kept, empty)
    assert res.returncode == 2 and res.stdout == ""
    assert f"{empty} is not a tables folder: it has no model_rates.csv" in res.stderr
    old = tmp_path / "old"
    shutil.copytree(kept, old)
    write(read(old, "depth_rates").drop(columns="agreement"), old, "depth_rates")
    res = run(old, kept)
    assert res.returncode == 2 and f"{old / 'depth_rates.csv'} has the columns of another version" in res.stderr
    assert "missing agreement" in res.stderr
    assert run(kept, tmp_path / "nowhere").returncode == 2


def test_a_row_of_one_run_only_is_missing_and_a_table_of_one_folder_only_is_not_compared(tmp_path):
    kept, less = kept_copy(tmp_path / "kept"), kept_copy(tmp_path / "less")
    special = read(less, "special_tokens")
    write(special.iloc[1:], less, "special_tokens")
    (less / "claims.csv").unlink()
    result = compare(kept, less)
    (row,) = [r for r in result.rows if r.verdict != "identical"]
    assert row.verdict == "missing" and row.key == tuple(special.iloc[0][["model", "dataset"]])
    assert result.skipped == [f"claims.csv (only in {kept})"] and result.status == 1


def with_inputs(folder: Path, **changed: str) -> Path:
    """``folder`` with an inputs.csv naming a digest for each data set of its model_rates (``changed``: other ones)."""
    datasets = sorted(set(read(folder, "model_rates")["dataset"]))
    digests = {d: changed.get(d, f"{k:064x}") for k, d in enumerate(datasets)}
    write(pd.DataFrame({"dataset": list(digests), "sha256": list(digests.values())}), folder, "inputs")
    return folder


def test_rows_measured_on_other_inputs_are_named_so_and_not_tested(tmp_path):
    """A data set prepared from other inputs (e.g. a corpus that changed with the interpreter) makes its rows "other
    inputs", however far they moved, and nothing else; the runs do not agree (exit 1)."""
    kept = with_inputs(kept_copy(tmp_path / "kept"))
    other = with_inputs(kept_copy(tmp_path / "other"), pydoc_topics="f" * 64)
    rates = read(other, "model_rates")
    mask = key_mask(rates, model="minilm", dataset="pydoc_topics", token_set="content")
    set_holds(rates, mask, -int(rates.loc[mask, "holds"].iloc[0]) // 2)  # half its pairs: different on the same inputs
    write(rates, other, "model_rates")
    res = run(kept, other)
    assert res.returncode == 1, res.stdout + res.stderr
    found = lines(res.stdout)
    pydoc = {k for k in found if "/pydoc_topics" in k}
    assert pydoc and set(found.values()) == {"other inputs"} and set(found) == pydoc
    assert "model_rates minilm/pydoc_topics/content" in pydoc
    assert f"measured on other inputs: data set pydoc_topics's manifest {'0' * 12} against {'f' * 12}" in res.stdout
    assert f"0 different, {len(pydoc)} other inputs, 0 missing" in res.stdout.splitlines()[-1]
    same = compare(kept, with_inputs(kept_copy(tmp_path / "same")))
    assert same.status == 0 and {r.verdict for r in same.rows} == {"identical"}


def test_without_inputs_csv_on_one_side_the_inputs_are_not_compared(tmp_path):
    """Tables written before inputs.csv existed (docs/offline until its next --copy): the rows are compared as
    before, and the report says that their inputs were not."""
    kept, newer = kept_copy(tmp_path / "kept"), with_inputs(kept_copy(tmp_path / "newer"), pydoc_topics="f" * 64)
    result = compare(kept, newer)
    assert result.status == 0 and {r.verdict for r in result.rows} == {"identical"}
    assert result.skipped == [
        f"inputs.csv (only in {newer}): whether the rows were measured on the same inputs is not checked"
    ]


def test_another_measurement_is_different_whatever_its_rate(tmp_path):
    kept, other = kept_copy(tmp_path / "kept"), kept_copy(tmp_path / "other")
    rates = read(other, "model_rates")
    rates.loc[0, "inputs"] = str(int(rates.loc[0, "inputs"]) + 1)
    write(rates, other, "model_rates")
    (row,) = [r for r in compare(kept, other).rows if r.verdict != "identical"]
    assert row.verdict == "different" and "not the same measurement: inputs" in row.line()


def test_a_rerun_that_differs_by_chance_alone_is_not_flagged_and_a_real_move_is(tmp_path):
    """Two runs whose depth rows are drawn independently from the kept rates (no real difference): some rows'
    uncorrected p-values fall below 0.05 by chance, Holm's correction flags none; one row moved by a third of its
    pairs is flagged."""
    rng = np.random.default_rng(0)
    kept, moved = kept_copy(tmp_path / "kept"), kept_copy(tmp_path / "moved")
    rates = read(kept, "depth_rates")
    for folder in (kept, moved):
        depth = rates.copy()
        for i in depth.index:
            k, n = int(depth.at[i, "holds"]), int(depth.at[i, "pairs"])
            set_holds(depth, depth.index == i, int(rng.binomial(n, k / n)) - k)
        write(depth, folder, "depth_rates")
    result = compare(kept, moved)
    by_chance = [r for r in result.rows if any(t.p is not None and t.p < 0.05 for t in r.tests)]
    assert len(by_chance) >= 3 and result.counts()["different"] == 0 and result.status == 0
    assert result.counts()["within uncertainty"] > len(depth) / 2
    big = depth.index[depth["pairs"].astype(int) >= 100][0]
    k, n = int(read(kept, "depth_rates").at[big, "holds"]), int(depth.at[big, "pairs"])
    set_holds(depth, depth.index == big, k - int(depth.at[big, "holds"]) + (-(n // 3) if k >= n // 2 else n // 3))
    write(depth, moved, "depth_rates")
    result = compare(kept, moved)
    assert [r.key for r in result.rows if r.verdict == "different"] == [
        tuple(depth.loc[big, TABLES["depth_rates"].key])
    ]


def test_rollout_medians_of_a_run_without_seeds_may_move_by_rounding_only(tmp_path):
    kept, moved = kept_copy(tmp_path / "kept"), kept_copy(tmp_path / "moved")
    summary = pd.DataFrame(
        {
            "model": ["minilm", "ftt_seed0", "ftt_seed1", "ftt_seed2"],
            "dataset": ["pydoc_topics", "diabetes", "diabetes", "diabetes"],
            "token_set": "all",
            "inputs": ["200", "88", "88", "88"],
            "n_layers": ["6", "3", "3", "3"],
            "kappa_rollout": ["0.500000", "0.300000", "0.400000", "0.350000"],
            "product_kappa_half": "0.600000",
            "product_bound": "0.700000",
            "tight_half": "1.000000",
            "tight_bound": "0.000000",
        }
    )
    write(summary, kept, "rollout_summary")
    summary.loc[0, "kappa_rollout"] = f"{0.5 + ROUNDING_ATOL / 2:.6f}"
    summary.loc[1, "kappa_rollout"] = "0.320000"  # an FT-Transformer seed: against the seeds' spread (0.05)
    write(summary, moved, "rollout_summary")
    result = compare(kept, moved)
    assert {r.key[0]: r.verdict for r in result.rows if r.table == "rollout_summary" and r.verdict != "identical"} == {
        "minilm": "within uncertainty",
        "ftt_seed0": "within uncertainty",
    }
    summary.loc[0, "kappa_rollout"] = f"{0.5 + 2 * ROUNDING_ATOL:.6f}"
    write(summary, moved, "rollout_summary")
    (row,) = [r for r in compare(kept, moved).rows if r.verdict == "different"]
    assert row.key[0] == "minilm" and "beyond rounding" in row.line()


def test_the_schema_is_what_the_tables_write(tmp_path):
    """compare's headers are the ones write_suite_tables and write_ftt_scores write (a change to one fails here)."""
    records = pd.DataFrame(
        {
            "model": "ftt_seed0",
            "seed": 0,
            "dataset": "d",
            "input_id": ["a", "a", "b", "b"],
            "layer": [0, 1, 0, 1],
            "n_layers": 2,
            "token_set": "all",
            "n_tokens": 4,
            "holds": [True, False, True, True],
            "holds_direct": [True, False, True, True],
        }
    )
    rollout = records.rename(columns={"layer": "depth"}).assign(
        kappa_rollout=0.5, product_kappa_half=0.5, product_bound=0.6
    )
    metrics = tmp_path / "metrics.json"
    metrics.write_text(
        json.dumps(
            {"dataset": "d", "seed": 0, "metric": "rmse", "test": 1.0, "best_epoch": 1, "epochs": 2, "n_train": 9}
        )
    )
    written = {
        "model_rates": with_seeds(model_rates(records), records),
        "depth_rates": depth_rates(records),
        "special_tokens": special_token_shares(records),
        "rollout_summary": rollout_summary(rollout),
        "ftt_scores": ftt_scores([metrics]),
        "claims": claims({}, model_rates(records), None),
    }
    suite_tables = {n: t.columns for n, t in TABLES.items() if not n.startswith("supervision_")}  # the study's:
    assert {
        name: tuple(df.columns) for name, df in written.items()
    } == suite_tables  # tests/studies/test_supervision.py


def test_read_tables_names_a_duplicated_key(tmp_path):
    kept = kept_copy(tmp_path / "kept")
    rates = read(kept, "model_rates")
    write(pd.concat([rates, rates.iloc[:1]]), kept, "model_rates")
    with pytest.raises(BadTables, match="model_rates.csv: 2 rows share a key"):
        compare(kept, kept)


def test_the_seed_spread_leaves_out_rows_without_the_value():
    """A table whose column is empty for some rows (the supervision study's test accuracy: only the supervised models
    have a classifier) pools the spread of the rows that have it."""
    from rollout_equality.reporting.compare import seed_spread

    table = TABLES["supervision_scores"]
    frame = pd.DataFrame(
        {
            "objective": ["supervised"] * 3 + ["dino"] * 3,
            "test_accuracy": ["0.95", "0.96", "0.97", "", "", ""],
            "_seed": ["0", "1", "2"] * 2,
        }
    )
    s, df = seed_spread(table, "test_accuracy", [frame], ())
    assert df == 2 and s == pytest.approx(0.01)


# The supervision study's tables: a trained model's rows are tested by its checkpoints.
STUDY_N = 200
"""Inputs of the hand-built study: each model's rate at a layer is a count of these."""
STUDY = {  # (objective, seed): each of 3 layers' count of holding inputs; the seeds spread by 20 at layer 2
    **{("supervised", s): [180 + s, 150 - 2 * s, 60 + 20 * s] for s in range(4)},
    **{("dino", s): [170 + s, 160 + s, 150 + 15 * s] for s in range(4)},
}


def study_folder(folder: Path, holds: dict, weights: dict) -> Path:
    """A supervision study's tables folder (the tables report_supervision writes from records, and its checkpoints
    table) from hand-built head-averaged records: ``holds[(objective, seed)]`` per layer, ``weights[(objective,
    seed)]`` its weights' SHA-256."""
    from rollout_equality.studies.supervision.report import seed_tables

    folder.mkdir()
    records = pd.DataFrame(
        [
            {"model": f"supervision_{o}_s{s}", "dataset": "digits_test", "input_id": f"i{i}", "token_set": "content",
             "layer": layer, "n_layers": len(counts), "holds": i < k, "holds_direct": i < k, "seed": None}
            for (o, s), counts in holds.items()
            for layer, k in enumerate(counts)
            for i in range(STUDY_N)
        ]
    )  # fmt: skip
    tables = {"model_rates": with_seeds(model_rates(records), records), "depth_rates": depth_rates(records)}
    runs = {f"supervision_{o}_s{s}": (o, s) for o, s in holds}
    across = seed_tables(tables["depth_rates"], runs, 0.5)
    across.pop("counts")
    tables.update(across)
    tables["supervision_checkpoints"] = pd.DataFrame(
        [
            {"model": f"supervision_{o}_s{s}", "objective": o, "seed": s, "file": "model.safetensors",
             "bytes": 1000, "sha256": sha, "code_path": "compatible", "cpu": "a CPU"}
            for (o, s), sha in weights.items()
        ]
    )  # fmt: skip
    for name, df in tables.items():
        write_csv(df, folder / f"{name}.csv")
    return folder


def test_a_retrained_model_is_another_draw_and_the_same_checkpoint_the_same_model(tmp_path):
    """Seed 1's supervised model moved by 50 of 200 inputs at layer 2, within its seeds' spread (20 apart): with
    the same checkpoints in both runs that is a different measurement of one model (Fisher); with checkpoints that
    differ it is another draw of the training, within the seeds' spread. Each row's line says which test applied."""
    weights = {key: f"{i:064x}" for i, key in enumerate(STUDY)}
    kept = study_folder(tmp_path / "kept", STUDY, weights)
    moved = {**STUDY, ("supervised", 1): [181, 148, 80 + 50]}
    same = compare(kept, study_folder(tmp_path / "same", moved, weights))
    draw = compare(kept, study_folder(tmp_path / "draw", moved, {**weights, ("supervised", 1): "f" * 64}))
    key = ("supervision_supervised_s1", "digits_test", "content", "2")
    (row_same,) = [r for r in same.rows if r.table == "depth_rates" and r.key == key]
    (row_draw,) = [r for r in draw.rows if r.table == "depth_rates" and r.key == key]
    assert row_same.draw == "same model" and row_same.verdict == "different" and "Fisher" in row_same.line()
    assert "[same checkpoints: tested as the same model]" in row_same.line()
    assert row_draw.draw == "retrained" and row_draw.verdict == "within uncertainty"
    assert "[retrained: checkpoints differ, tested against the seeds' spread]" in row_draw.line()
    assert "the spread of the other supervised seeds" in row_draw.line() and "Fisher" not in row_draw.line()
    # the objective's mean over its 4 seeds (1 retrained) against its seeds' spread; the other objective untouched
    (late,) = [r for r in draw.rows if r.table == "supervision_late" and r.key == ("supervised", "content")]
    assert late.draw == "retrained" and late.verdict == "within uncertainty" and "1 of 4 retrained" in late.line()
    (dino,) = [r for r in draw.rows if r.table == "supervision_late" and r.key == ("dino", "content")]
    assert dino.draw == "same model" and dino.verdict == "identical"
    (contrast,) = [r for r in draw.rows if r.table == "supervision_contrast" and r.key == ("content", "late share", "")]
    assert contrast.draw == "retrained" and contrast.verdict == "within uncertainty"
    assert draw.status == 0 and same.status == 1
    assert "trained models' rows:" in draw.report() and "of retrained ones" in draw.report()
    # a retrained model far outside its seeds' spread is still different (layer 0: the seeds 1 of 200 apart)
    far = compare(kept, study_folder(tmp_path / "far", {**STUDY, ("supervised", 1): [141, 148, 80]},
                                     {**weights, ("supervised", 1): "f" * 64}))  # fmt: skip
    (row_far,) = [r for r in far.rows if r.table == "depth_rates" and r.key == (*key[:3], "0")]
    assert row_far.draw == "retrained" and row_far.verdict == "different"
