"""Tables and claims from a small synthetic records set with known answers."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO

from rollout_equality.condition.baseline import wilson_interval
from rollout_equality.config.load import validated
from rollout_equality.reporting.claims import claims
from rollout_equality.reporting.stats import depth_rates, model_rates, rollout_summary, special_token_shares, with_seeds
from rollout_equality.reporting.writers import latex_tabular, write_latex


def validated_claims() -> dict:
    """The shipped config's claims as a run sees them (validated, defaults filled in)."""
    repo = REPO
    config = yaml.safe_load((repo / "config.yaml").read_text())
    config = validated(config)
    return config["claims"]


SPEC = validated_claims()


def synthetic_records():
    """dinov2_small: 10 inputs × 4 layers; holds everywhere on content, and in layers 0–2 with all tokens.
    ftt_seed0 on adult: 10 inputs × 3 layers, holds for 9 of 30 pairs."""
    rows = []
    for i in range(10):
        for layer in range(4):
            for ts in ("content", "all"):
                h = ts == "content" or layer < 3
                rows.append(
                    {
                        "model": "dinov2_small",
                        "seed": None,
                        "dataset": "imagenet_val",
                        "input_id": f"x{i}",
                        "layer": layer,
                        "n_layers": 4,
                        "token_set": ts,
                        "holds": h,
                        "holds_direct": h,
                    }
                )
        for layer in range(3):
            h = (i * 3 + layer) % 10 < 3
            rows.append(
                {
                    "model": "ftt_seed0",
                    "seed": 0,
                    "dataset": "adult",
                    "input_id": f"t{i}",
                    "layer": layer,
                    "n_layers": 3,
                    "token_set": "content",
                    "holds": h,
                    "holds_direct": h,
                }
            )
    return pd.DataFrame(rows)


def rates_of(records):
    """What write_suite_tables gives claims and ftt_table: the model rates with the runs' seeds."""
    return with_seeds(model_rates(records), records)


def test_model_rates_known_answers():
    rates = model_rates(synthetic_records())
    r = rates.set_index(["model", "token_set"])
    assert r.loc[("dinov2_small", "content"), "rate"] == 1.0 and r.loc[("dinov2_small", "all"), "rate"] == 0.75
    assert r.loc[("dinov2_small", "all"), "pairs"] == 40 and r.loc[("dinov2_small", "all"), "inputs"] == 10
    low, high = wilson_interval(30, 40)
    assert r.loc[("dinov2_small", "all"), "ci_low"] == pytest.approx(low)
    assert r.loc[("dinov2_small", "all"), "ci_high"] == pytest.approx(high)
    assert r.loc[("ftt_seed0", "content"), "rate"] == pytest.approx(0.3)
    assert (rates["agreement"] == 1).all()


def test_depth_rates_show_late_failures():
    d = depth_rates(synthetic_records())
    allt = d[(d.model == "dinov2_small") & (d.token_set == "all")].sort_values("layer")
    assert allt["rate"].tolist() == [1, 1, 1, 0] and allt["depth"].tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1])


def test_claims_statuses():
    baseline = pd.DataFrame(
        {
            "n": [3, 16, 256],
            "trials": 10000,
            "holds": [3300, 2550, 2500],
            "rate": [0.33, 0.255, 0.25],
            "ci_low": [0.32, 0.246, 0.242],
            "ci_high": [0.34, 0.264, 0.259],
        }
    )
    c = claims(SPEC, rates_of(synthetic_records()), baseline)
    first = c.iloc[0]
    assert (
        first["status"] == "reproduced" and first["ours"] == "25.0%–25.5%" and first["note"] == "n = 3: 33.0%, left out"
    )
    got = {(row.claim[:10], row.subject.split(" ")[0]): row.status for row in c.itertuples()}
    assert got[("DINOv2 (3 ", "dinov2_small")] == "reproduced"  # 100% content
    assert got[("the same m", "dinov2_small")] == "reproduced"  # 75% [60%, 86%] meets 82–97%
    assert got[("DINOv2 (3 ", "dinov2_base")] == "not run"
    assert got[("DeiT-B: 91", "deit_base")] == "not run"
    ftt = c[c.subject.str.startswith("ftt:adult")]
    assert len(ftt) == 1 and ftt.iloc[0]["status"] == "reproduced"  # 30% within 11–44%
    assert c[c.subject.str.startswith("ftt:california")].iloc[0]["status"] == "not run"
    far = synthetic_records().assign(holds=False, holds_direct=False)
    row = claims(SPEC, rates_of(far), None).set_index("subject").loc["dinov2_small on imagenet_val"].iloc[0]
    assert row["status"] == "not reproduced" and row["ours"] == "0.0% [0.0%, 8.8%], below the range"


def test_a_result_outside_the_claimed_range_says_on_which_side():
    from rollout_equality.reporting.claims import side

    assert [side(0.82, 0.97, *ci) for ci in ((0.98, 1.0), (0.5, 0.81), (0.5, 0.82), (0.97, 0.99))] == [
        "above the range",
        "below the range",
        "",
        "",
    ]
    records = synthetic_records()  # dinov2_small: 100% on content tokens
    content = records[(records["model"] == "dinov2_small") & (records["token_set"] == "content")]
    above = pd.concat([content.assign(token_set="all", input_id=content["input_id"] + f"_{k}") for k in range(10)])
    c = claims(SPEC, rates_of(pd.concat([content, above])), None)
    row = c[(c["claim"] == SPEC["all_tokens"]["text"]) & (c["subject"] == "dinov2_small on imagenet_val")].iloc[0]
    assert row["status"] == "not reproduced" and row["ours"] == "100.0% [99.0%, 100.0%], above the range"
    baseline = pd.DataFrame(
        {"n": [5, 16, 256], "trials": 1000, "holds": [400, 260, 100], "rate": [0.4, 0.26, 0.1]}
        | {"ci_low": [0.37, 0.23, 0.08], "ci_high": [0.43, 0.29, 0.12]}
    )
    first = claims(SPEC, rates_of(records), baseline).iloc[0]
    assert first["status"] == "not reproduced"
    assert first["ours"] == "10.0%–40.0%; above the range at n = 5; below the range at n = 256"


def test_ftt_claim_pools_the_seeds_and_shows_the_recipe_range():
    from rollout_equality.reporting.claims import SENSITIVITY, macros

    records = synthetic_records()
    seed0 = records[records["model"] == "ftt_seed0"]
    seed1 = seed0.assign(model="ftt_seed1", seed=1, holds=False, holds_direct=False)
    ablation = pd.DataFrame(
        {
            "setting": ["reference", "two_logits"],
            "changes": ["reference recipe", "binary_head=two_logits"],
            "seeds": [3, 3],
            "content_rate": [0.09, 0.42],
            "content_ci_low": [0.08, 0.40],
            "content_ci_high": [0.10, 0.44],
        }
    )
    both = pd.concat([records, seed1])
    c = claims(SPEC, rates_of(both), None, ablation=ablation, ablation_claim="ftt")
    ftt = c[c.subject.str.startswith("ftt:adult")]
    assert len(ftt) == 1  # one row for the table, not one per seed
    row = ftt.iloc[0]
    assert row["subject"] == "ftt:adult on adult (2 seeds pooled)" and row["ours"].startswith("15.0% [")
    assert row["note"].startswith("seeds 0.0%–30.0% (seed0: 30.0%, seed1: 0.0%)")
    sens = c[c["status"] == SENSITIVITY].iloc[0]
    assert sens["ours"] == "9.0%–42.0% across settings; reference recipe 9.0%"
    assert sens["note"] == "settings within the paper's range: two_logits"
    # the range is not one of the abstract's numbers: the macros do not count it
    assert "\\newcommand{\\NClaims}{%d}" % (len(c) - 1) in macros(c, None, SPEC)


def test_rollout_summary():
    ro = pd.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "input_id": ["a", "a", "b", "b"],
            "token_set": "all",
            "n_tokens": 5,
            "depth": [0, 1, 0, 1],
            "n_layers": 2,
            "kappa_rollout": [0.9, 0.5, 0.9, 0.7],
            "product_kappa_half": [0.9, 0.5, 0.9, 0.8],
            "product_bound": [0.95, 0.6, 0.95, 0.9],
        }
    )
    s = rollout_summary(ro).iloc[0]
    assert (
        s["inputs"] == 2
        and s["kappa_rollout"] == pytest.approx(0.6)
        and s["tight_half"] == 0.5
        and s["tight_bound"] == 0
    )


def test_latex_tables_parse_and_compile(tmp_path):
    rates = model_rates(synthetic_records())
    tex = latex_tabular(rates, formats={"rate": "{:.3f}"})
    assert tex.startswith("\\begin{tabular}") and "\\toprule" in tex and "dinov2\\_small" in tex
    assert tex.count("\\\\") == len(rates) + 1
    write_latex(claims(SPEC, rates_of(synthetic_records()), None), tmp_path / "claims.tex", "records")
    write_latex(rates, tmp_path / "rates.tex", "records")
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed: parsed only")
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\usepackage[utf8]{inputenc}"
        "\\begin{document}\\input{claims}\\input{rates}\\end{document}\n"
    )
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "doc.tex"], cwd=tmp_path, capture_output=True)
    assert res.returncode == 0, res.stdout[-3000:]


def test_suite_figures_and_paper(tmp_path, monkeypatch):
    """Figures from records files; the paper's TeX check names the way out when TeX is missing."""
    import shutil as _shutil

    from rollout_equality.condition.analysis import analyse
    from rollout_equality.condition.records import Dump, read_dump, write_dump, write_records
    from rollout_equality.reporting import figures, paper

    rng = np.random.default_rng(0)
    paths, rollouts = [], []
    for model in ("m1", "m2"):
        rows, ro = [], []
        for i in range(3):
            layers = rng.dirichlet(np.full(6, 0.4), size=(4, 6))
            special = np.array([True, False, False, False, False, True])
            ((r, o, _, _),) = analyse([(layers, special)], [f"x{i}"], model=model, dataset="d")
            rows += r
            ro += o
        path, rollout_file = (
            tmp_path / "records" / model / "d.parquet",
            tmp_path / "records" / model / "d.rollout.parquet",
        )
        write_records(path, rollout_file, rows, ro, {})
        paths.append(path)
        rollouts.append(rollout_file)
    dump = tmp_path / "attention" / "m1" / "d.npz"
    write_dump(dump, Dump("m1", "d", {"x0": (layers, special)}))
    assert read_dump(dump).inputs["x0"][0].dtype == np.float32 and read_dump(dump).model == "m1"
    out = {
        f"{name}_{ext}": tmp_path / "figs" / f"{name}.{ext}" for name in figures.SUITE_FIGURES for ext in ("pdf", "png")
    }
    written = figures.write_suite_figures(paths, rollouts, [dump], out, kinds={"m1": "trained", "m2": "trained"})
    assert len(written) == 8 and all(p.stat().st_size > 1000 for p in written)
    with pytest.raises(ValueError, match="model 'm2' of the records is not under models:"):
        figures.write_suite_figures(paths, rollouts, [dump], out, kinds={"m1": "trained"})
    monkeypatch.setattr(_shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install texlive-latex-base"):
        paper.build_paper(tmp_path / "main.tex", tmp_path / "suite-offline.pdf", "offline")


def test_late_failure_claim_and_ftt_table():
    from rollout_equality.reporting.stats import depth_profile
    from rollout_equality.reporting.suite_tables import ftt_table

    r = synthetic_records()
    late = r.assign(
        model=r["model"].replace({"dinov2_small": "vit_base_16"}),
        token_set=r["token_set"].replace({"content": "x", "all": "content"}),
    )
    c = claims(SPEC, rates_of(late), None, depth_rates(late))
    row = c[c["claim"].str.startswith("DeiT-B, ViT-B/16: failures") & c["subject"].str.startswith("vit_base_16")].iloc[
        0
    ]
    assert row["status"] == "reproduced" and row["ours"] == "first layer below 99% at depth 1.00"
    early = late.copy()
    early.loc[(early["model"] == "vit_base_16") & (early["layer"] == 0), "holds"] = False
    c = claims(SPEC, rates_of(early), None, depth_rates(early))
    row = c[c["claim"].str.startswith("DeiT-B, ViT-B/16: failures") & c["subject"].str.startswith("vit_base_16")].iloc[
        0
    ]
    assert row["status"] == "not reproduced" and row["ours"] == "first layer below 99% at depth 0.00"
    assert (
        depth_profile(depth_rates(r)).set_index(["model", "token_set"]).loc[("dinov2_small", "all")].iloc[-1]
        == "100 100 100 0"
    )
    scores = pd.DataFrame(
        {"dataset": ["adult"], "seed": [0], "metric": ["accuracy"], "test": [0.86], "published": [0.86]}
    )
    t = ftt_table(scores, rates_of(r))
    assert t.iloc[0]["content"] == pytest.approx(0.3) and np.isnan(t.iloc[0]["all"])


def test_the_paper_depends_on_every_file_main_tex_reads(tmp_path):
    """The build rule's inputs come from main.tex's own \\input / \\includegraphics lines, comments skipped."""

    from rollout_equality.reporting.paper import inputs

    main = REPO / "paper" / "main.tex"
    rel = [str(Path(p).relative_to(main.parent)) for p in inputs(main, "offline")]
    assert len(rel) == 13 and len(set(rel)) == 13
    assert {
        "tables/offline/macros.tex",
        "tables/offline/ftt_ablation_section.tex",
        "tables/baseline.tex",
        "figures/baseline_rate.pdf",
        "tables/offline/ftt.tex",
        "tables/offline/rollout_summary.tex",
        "figures/offline/heatmap.pdf",
    } <= set(rel)
    tex = tmp_path / "x.tex"
    tex.write_text(
        "% \\input{tables/\\suite/ignored}\n\\input{tables/\\suite/a}  % \\input{b}\n"
        "\\includegraphics[width=2cm]{figures/c.png}\\input{main}\n"
    )
    assert [str(Path(p).relative_to(tmp_path)) for p in inputs(tex, "s")] == ["tables/s/a.tex", "figures/c.png"]


def test_trained_text_models_outside_the_paper_stand_beside_the_text_claims_labelled_so():
    records = synthetic_records()
    mpnet = records[records["model"] == "dinov2_small"].assign(model="mpnet", dataset="pydoc_topics")
    c = claims(SPEC, rates_of(pd.concat([records, mpnet])), None)
    rows = c[c["subject"].str.startswith("mpnet")]
    assert rows["claim"].tolist() == [
        "DINOv2 (3 sizes), RoBERTa, DistilBERT: ≈100% on content tokens",
        "the same models: 82–97% with special tokens",
    ]
    assert rows["subject"].tolist() == ["mpnet on pydoc_topics (out of sample)"] * 2
    assert rows["status"].tolist() == ["agrees", "agrees"]
    assert all(note.startswith("not a paper model (all-mpnet-base-v2)") for note in rows["note"])
    # right after the paper models' rows of the same claim; nothing for out-of-sample models not run
    first = c.index[c["subject"] == "mpnet on pydoc_topics (out of sample)"][0]
    assert c.loc[first - 1, "subject"] == "distilbert_base" and not c["subject"].str.startswith("minilm").any()


def test_the_paper_counts_only_the_abstract_numbers():
    from rollout_equality.reporting.claims import macros

    records = synthetic_records()
    extra = records[records["model"] == "dinov2_small"].assign(
        model="mpnet", dataset="pydoc_topics", holds=False, holds_direct=False
    )
    c = claims(SPEC, rates_of(pd.concat([records, extra])), None)
    assert set(c.loc[c["subject"].str.startswith("mpnet"), "status"]) == {"disagrees"}
    text = macros(c, None, SPEC)
    n_paper = len(c) - 2
    assert f"\\NClaims}}{{{n_paper}}}" in text
    assert f"\\NClaimsNotReproduced}}{{{int((c['status'] == 'not reproduced').sum())}}}" in text


def test_special_token_share_counts_the_failing_all_token_pairs_that_hold_on_content_tokens():
    r = synthetic_records()  # dinov2_small: all tokens fail in layer 3 (10 pairs), content holds there
    mixed = r[r["model"] == "dinov2_small"].assign(model="roberta_base", dataset="wikitext")
    mixed.loc[
        (mixed["token_set"] == "content") & (mixed["layer"] == 3) & mixed["input_id"].isin(["x0", "x1"]), "holds"
    ] = False
    clean = r[r["model"] == "dinov2_small"].assign(model="distilbert_base", dataset="wikitext", holds=True)
    shares = special_token_shares(pd.concat([r, mixed, clean])).set_index("model")
    assert shares.loc["dinov2_small", ["failing_all", "content_holds", "share"]].tolist() == [10, 10, 1.0]
    assert shares.loc["roberta_base", ["failing_all", "content_holds", "share"]].tolist() == [10, 8, 0.8]
    low, high = wilson_interval(8, 10)
    assert shares.loc["roberta_base", "ci_low"] == pytest.approx(low)
    assert shares.loc["distilbert_base", "failing_all"] == 0 and "ftt_seed0" not in shares.index  # no all rows
    c = claims(
        SPEC,
        rates_of(pd.concat([r, mixed, clean])),
        None,
        special=special_token_shares(pd.concat([r, mixed, clean])),
    )
    rows = c[c["claim"] == SPEC["special_tokens"]["text"]].set_index("subject")
    assert rows.loc["dinov2_small on imagenet_val", "status"] == "reproduced"  # 100% [72%, 100%] meets 90–100%
    assert rows.loc["roberta_base on wikitext", "ours"] == "80.0% [49.0%, 94.3%]"
    assert rows.loc["roberta_base on wikitext", "status"] == "reproduced"  # the interval reaches 90%
    assert rows.loc["roberta_base on wikitext", "note"].startswith("8 of the 10 pairs failing on all tokens")
    assert rows.loc["distilbert_base on wikitext", "ours"] == "no pair fails on all tokens"
    assert rows.loc["dinov2_base", "status"] == "not run"


def test_not_run_says_why_and_a_renamed_subject_fails_naming_the_claim():
    import copy

    from rollout_equality.config.checks import check_references, claim_reasons

    repo = REPO
    config = yaml.safe_load((repo / "config.yaml").read_text())
    config = validated(config)
    reasons = claim_reasons(config, "offline")
    assert reasons["dinov2_small"] == "not in suite 'offline': measured by suite 'paper'"
    assert reasons["ftt:adult"] == "not in suite 'offline': measured by suite 'paper'"
    c = claims(config["claims"], rates_of(synthetic_records()), None, not_run=reasons)
    assert set(c.loc[c["subject"] == "dinov2_base", "note"]) == {"not in suite 'offline': measured by suite 'paper'"}
    lonely = copy.deepcopy(config)
    lonely["suites"]["paper"] = [e for e in lonely["suites"]["paper"] if e["model"] != "deit_base"]
    assert claim_reasons(lonely, "paper")["deit_base"] == "in no suite (add it under suites:)"
    renamed = copy.deepcopy(config)
    renamed["models"]["dinov2_s"] = renamed["models"].pop("dinov2_small")
    renamed["suites"]["paper"][0]["model"] = "dinov2_s"
    with pytest.raises(ValueError, match=r"claims.content: subject 'dinov2_small' is not defined under models"):
        check_references(renamed)
    gone = copy.deepcopy(config)
    del gone["tabular"]["datasets"]["california"]
    gone["tabular"]["suites"]["paper"] = ["adult"]
    with pytest.raises(ValueError, match=r"claims.ftt: subject 'ftt:california' names table 'california'"):
        check_references(gone)


def test_the_claims_latex_table_states_each_claim_once_above_its_rows():
    from rollout_equality.reporting.suite_tables import CLAIMS_COLUMNS
    from rollout_equality.reporting.writers import grouped_longtable

    c = claims(SPEC, rates_of(synthetic_records()), None)
    tex = grouped_longtable(c, "claim", CLAIMS_COLUMNS)
    assert tex.startswith("\\begin{longtable}") and tex.rstrip().endswith("\\end{longtable}")
    for claim in SPEC.values():
        text = claim["text"].replace("%", "\\%").replace("–", "--").replace("≈", "$\\approx$")
        assert tex.count(text) == 1, text
    assert tex.count("\\multicolumn{5}") == len(SPEC) and "claim" not in tex.splitlines()[2]


def test_model_kinds_come_from_the_source_not_the_name():
    from rollout_equality.config.checks import model_kinds

    models = yaml.safe_load((REPO / "config.yaml").read_text())["models"]
    kinds = model_kinds(models)
    assert {m for m, k in kinds.items() if k == "untrained control"} == {
        m for m, e in models.items() if "random_init" in e
    }
    assert kinds["dinov2_small_imgfocus"] == kinds["mpnet"] == kinds["minilm"] == kinds["dinov2_small"] == "trained"
    renamed = {"my_random": models["dinov2_small"], "plain": models["deit_base_random"]}
    assert model_kinds(renamed) == {"my_random": "trained", "plain": "untrained control"}


def test_compared_range_is_the_claim_a_run_is_read_against():
    from rollout_equality.reporting.claims import compared_range

    assert compared_range(SPEC, "trained", "minilm", "content") == (0.95, 1.0, "content")  # out of sample
    assert compared_range(SPEC, "trained", "dinov2_small", "all") == (0.82, 0.97, "all_tokens")
    assert compared_range(SPEC, "trained", "deit_base", "content") == (0.90, 0.92, "deit")
    assert compared_range(SPEC, "trained", "my_model", "content") is None
    assert compared_range(SPEC, "untrained control", "dinov2_small_random", "all") == (0.24, 0.30, "baseline")
    assert compared_range(SPEC, "ftt", "ftt:adult", "content") == (0.11, 0.44, "ftt")
    assert compared_range(SPEC, "ftt", "ftt:breast_cancer", "content") == (0.11, 0.44, "ftt")  # FT-Transformer's claim
    assert compared_range(SPEC, "ftt", "ftt:adult", "all") is None


def test_figures_group_runs_by_kind_and_mark_the_claimed_ranges():
    from rollout_equality.reporting import figures
    from rollout_equality.reporting.stats import model_rates

    records = synthetic_records()
    control = records[records["model"] == "dinov2_small"].assign(model="dinov2_small_random", holds=False)
    late = records[records["model"] == "dinov2_small"].assign(model="mpnet", dataset="pydoc_topics")
    # in the records' order: the control first, FT-Transformer between the trained models
    ordered = pd.concat([control, records[records["model"] == "ftt_seed0"], records[records["model"] != "ftt_seed0"]])
    ordered = pd.concat([ordered, late])
    kinds = {"dinov2_small_random": "untrained control", "dinov2_small": "trained", "mpnet": "trained"}
    groups = figures.run_groups(ordered, kinds)
    assert groups == [
        ("trained", [("dinov2_small", "imagenet_val"), ("mpnet", "pydoc_topics")]),
        ("untrained control", [("dinov2_small_random", "imagenet_val")]),
        ("ftt", [("ftt_seed0", "adult")]),
    ]
    fig = figures.depth_figure(depth_rates(ordered), model_rates(ordered), groups, SPEC)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == [
        "trained models",
        "dinov2_small (imagenet_val)",
        "mpnet (pydoc_topics)",
        "untrained controls (random weights)",
        "dinov2_small_random (imagenet_val)",
        "FT-Transformer (trained on tables)",
        "ftt_seed0 (adult)",
    ]
    content_strip = fig.axes[1]
    bands = sorted(
        (round(p.get_y() + 0.42), round(p.get_x(), 6), round(p.get_x() + p.get_width(), 6))
        for p in content_strip.patches
    )
    assert bands == [(1, 95, 100), (2, 95, 100), (4, 24, 30), (6, 11, 44)]  # rows: trained, control, FT-Transformer
    said = {round(t.get_position()[1]): (t.get_text(), t.get_color()) for t in content_strip.texts}
    assert said[1] == ("100%", "0.1") and said[6] == ("30%", "0.1")  # within the band
    assert said[4] == ("0% ▼", "C3")  # the control's interval lies below the random-matrix range
    assert "trained models: content 95–100%" in fig.texts[-1].get_text().replace("\n", " ")
    figures.plt.close(fig)


def test_the_inputs_table_names_each_data_set_s_manifest_once(tmp_path):
    """inputs.csv (compare's "other inputs"): one row per data set with the digest its records cite; a prepared
    table's per-array digests become one; records of one data set citing two manifests are refused."""
    import json

    from rollout_equality.condition.analysis import analyse
    from rollout_equality.condition.records import write_records
    from rollout_equality.reporting.suite_tables import input_table
    from rollout_equality.runtime import digests

    rng = np.random.default_rng(0)

    def records(model, dataset, sha256):
        ((r, o, _, _),) = analyse(
            [(rng.dirichlet(np.ones(4), size=(2, 4)), np.zeros(4, bool))], ["x"], model=model, dataset=dataset
        )
        path = tmp_path / model / f"{dataset}.parquet"
        write_records(
            path, path.with_suffix(".rollout.parquet"), r, o, {"dataset": {"name": dataset, "sha256": sha256}}
        )
        return path

    table = {"x_train": "a" * 64, "y_train": "b" * 64}
    paths = [records("m1", "text", "1" * 64), records("m2", "text", "1" * 64), records("ftt", "adult", table)]
    found = input_table(paths)
    assert found.to_dict("records") == [
        {"dataset": "adult", "sha256": digests.of_bytes(json.dumps(table, sort_keys=True).encode())},
        {"dataset": "text", "sha256": "1" * 64},
    ]
    with pytest.raises(ValueError, match=r"m3/text.parquet: data set 'text' with manifest 222222222222, other"):
        input_table([*paths, records("m3", "text", "2" * 64)])
    with pytest.raises(ValueError, match="name no data set manifest"):
        input_table([records("m4", "text", None)])
