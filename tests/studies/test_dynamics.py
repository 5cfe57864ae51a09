"""The dynamics study: simulator, equilibria and their stability, experiments, ALBERT unrolled."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from models_tiny import MINILM
from schema import TINY, validated

from rollout_equality.acquire.models import prepare_model, resolve_local
from rollout_equality.studies.dynamics import albert as al
from rollout_equality.studies.dynamics import sphere as dy
from rollout_equality.studies.dynamics.consensus import EXPERIMENTS, build_heads, run_experiment

ETA, BETA = 0.2, 1.0


@pytest.fixture
def sym_heads():
    F = dy.symmetric_matrix([1.0, 0.5, -0.3], np.random.default_rng(0))
    return dy.Heads(np.eye(3), F)


def eig_sorted(F):
    values, vectors = np.linalg.eigh(F)
    order = np.argsort(-values)
    return values[order], vectors[:, order]


def test_attention_rows_are_softmax_of_the_bilinear_form(sym_heads):
    X = dy.perturb(dy.consensus([1, 0, 0], 4), 0.7, np.random.default_rng(1))
    A = dy.attention(X, sym_heads, BETA)
    assert A.shape == (1, 4, 4)
    logits = BETA * X @ X.T
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(A[0], expected, atol=1e-15)


def test_step_matches_the_definition_for_several_heads():
    rng = np.random.default_rng(2)
    heads = dy.Heads(rng.standard_normal((3, 4, 4)), rng.standard_normal((3, 4, 4)))
    X = rng.standard_normal((5, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Y, A = dy.step(X, heads, 0.1, 2.0)
    expected = np.empty_like(X)
    for i in range(5):
        total = np.zeros(4)
        for h in range(3):
            logits = np.array([2.0 * X[i] @ heads.M[h] @ X[j] for j in range(5)])
            w = np.exp(logits - logits.max())
            w /= w.sum()
            total += sum(w[j] * heads.F[h] @ X[j] for j in range(5))
        y = X[i] + 0.1 * total
        expected[i] = y / np.linalg.norm(y)
    np.testing.assert_allclose(Y, expected, atol=1e-13)
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-14)


def test_consensus_on_v1_is_a_fixed_point_and_small_perturbations_decay(sym_heads):
    values, vectors = eig_sorted(sym_heads.F[0])
    X = dy.consensus(vectors[:, 0], 10)
    Y, _ = dy.step(X, sym_heads, ETA, BETA)
    assert np.abs(Y - X).max() < 1e-14
    J = dy.tangent_jacobian(X, sym_heads, ETA, BETA)
    predicted = dy.consensus_spectrum(sym_heads.F[0], int(np.argmax(np.linalg.eigvals(sym_heads.F[0]).real)), ETA)
    assert dy.spectral_radius(J) == pytest.approx(predicted.max(), abs=1e-6)
    # token differences shrink by 1/(1 + ηλ1), the mean's other directions by (1 + ηλ_k)/(1 + ηλ1)
    assert dy.spectral_radius(J) == pytest.approx(
        max(1 / (1 + ETA * values[0]), abs(1 + ETA * values[1]) / (1 + ETA * values[0])), abs=1e-6
    )
    assert dy.spectral_radius(J) < 1
    starts = dy.perturb(X, 1e-3, np.random.default_rng(3), size=5)
    traj, _ = dy.simulate(starts, sym_heads, ETA, BETA, 200)
    err = np.linalg.norm(traj - X, axis=-1).max(axis=-1)  # (steps + 1, runs)
    assert (err[-1] < 1e-8).all() and (err[-1] < 1e-4 * err[0]).all()


@pytest.mark.parametrize("k", [1, 2])
def test_consensus_on_other_eigenvectors_is_unstable(sym_heads, k):
    values, vectors = eig_sorted(sym_heads.F[0])
    X = dy.consensus(vectors[:, k], 10)
    Y, _ = dy.step(X, sym_heads, ETA, BETA)
    assert np.abs(Y - X).max() < 1e-14  # still a fixed point
    radius = dy.spectral_radius(dy.tangent_jacobian(X, sym_heads, ETA, BETA))
    index = int(np.argmin(np.abs(np.linalg.eigvals(sym_heads.F[0]) - values[k])))
    assert radius == pytest.approx(dy.consensus_spectrum(sym_heads.F[0], index, ETA).max(), abs=1e-6)
    assert radius > 1.05
    traj, _ = dy.simulate(dy.perturb(X, 1e-6, np.random.default_rng(4)), sym_heads, ETA, BETA, 400)
    assert np.linalg.norm(traj[-1] - X, axis=-1).max() > 0.5  # it left
    assert np.abs(dy.alignment(traj[-1], vectors[:, 0])).min() > 1 - 1e-9  # and reached consensus on ±v1
    assert dy.mean_pairwise_distance(traj[-1]) < 1e-6


def test_bipartite_equilibrium_is_locally_stable_and_a_large_kick_ends_in_consensus(sym_heads):
    _, vectors = eig_sorted(sym_heads.F[0])
    ref = dy.bipartite(vectors[:, 0], 5, 5)
    assert np.abs(dy.step(ref, sym_heads, ETA, BETA)[0] - ref).max() < 1e-14
    assert dy.spectral_radius(dy.tangent_jacobian(ref, sym_heads, ETA, BETA)) < 1
    rng = np.random.default_rng(5)
    small, _ = dy.simulate(dy.perturb(ref, 0.05, rng, size=20), sym_heads, ETA, BETA, 600)
    assert set(dy.classify(small[-1], ref, vectors[:, 0], 1e-3)) == {"returned"}
    large, _ = dy.simulate(dy.perturb(ref, 1.5, rng, size=50), sym_heads, ETA, BETA, 600)
    ends = dy.classify(large[-1], ref, vectors[:, 0], 1e-3)
    assert (ends == "consensus").mean() > 0.5


def test_classify_names_each_outcome():
    v = np.array([0.0, 0.0, 1.0])
    ref = dy.bipartite(v, 2, 2)
    other_split = dy.bipartite(v, 3, 1)
    cons = dy.consensus(v, 4)
    spread = dy.perturb(cons, 0.5, np.random.default_rng(0))
    assert list(dy.classify(np.stack([ref, other_split, cons, spread]), ref, v, 1e-6)) == [
        "returned",
        "bipartite",
        "consensus",
        "other",
    ]


def test_principal_eigenpair_flags_a_complex_leading_pair():
    F = np.array([[0.5, -1.0, 0.0], [1.0, 0.5, 0.0], [0.0, 0.0, 0.8]])  # 0.5 ± i beside 0.8
    p = dy.principal_eigenpair(F, eta=1.0)
    assert p["value"] == pytest.approx(0.8) and not p["dominant"] and p["gap"] < 0
    np.testing.assert_allclose(np.abs(p["vector"]), [0, 0, 1], atol=1e-12)
    p = dy.principal_eigenpair(np.diag([2.0, 1.0, -0.5]), eta=0.1)
    assert p["dominant"] and p["value"] == 2.0 and p["gap"] == pytest.approx(0.1)


def test_layer_matrix_is_the_sum_of_head_value_output_products():
    rng = np.random.default_rng(6)
    D, H, dh = 12, 3, 4
    W_q, W_k, W_v = (rng.standard_normal((H * dh, D)) for _ in range(3))
    W_o = rng.standard_normal((D, H * dh))
    heads = dy.heads_from_projections(W_q, W_k, W_v, W_o, H)
    explicit = sum(W_o[:, h * dh : (h + 1) * dh] @ W_v[h * dh : (h + 1) * dh, :] for h in range(H))
    np.testing.assert_allclose(dy.layer_matrix(heads), explicit, atol=1e-12)
    np.testing.assert_allclose(dy.layer_matrix(heads), W_o @ W_v, atol=1e-12)
    np.testing.assert_allclose(heads.M[1], W_q[4:8].T @ W_k[4:8], atol=1e-12)
    # at consensus every head's attention is uniform, so the step is (I + ηF)v whatever the M_h
    v = rng.standard_normal(D)
    X = dy.consensus(v, 6)
    Y, _ = dy.step(X, heads, 0.01, 1.0)
    y = (np.eye(D) + 0.01 * explicit) @ X[0]
    np.testing.assert_allclose(Y[0], y / np.linalg.norm(y), atol=1e-13)
    with pytest.raises(ValueError, match="do not split into 5 heads"):
        dy.heads_from_projections(W_q, W_k, W_v, W_o, 5)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="must have the shape"):
        dy.Heads(np.eye(3), np.eye(4))
    with pytest.raises(ValueError, match=r"tokens must have shape \(\.\.\., n, 3\)"):
        dy.step(np.ones((4, 2)), dy.Heads(np.eye(3), np.eye(3)), 0.1, 1.0)
    with pytest.raises(ValueError, match="unknown dynamics experiment 'spiral'"):
        run_experiment("spiral", {}, 0)


SMALL = validated(
    dynamics={
        **TINY["dynamics"],
        "simulations": {  # defaults from the schema (heads, M, ...)
            "consensus": {"n": 6, "eta": 0.2, "beta": 1.0, "steps": 200, "F": {"symmetric": [1.0, 0.5, -0.3]}},
            "bipartite": {
                "n": 6,
                "eta": 0.2,
                "beta": 1.0,
                "steps": 200,
                "F": {"symmetric": [1.0, 0.5, -0.3]},
                "radii": [0.05, 1.5],
                "trials": 20,
                "tol": 1e-3,
                "uniform_starts": 20,
                "betas": [0.2, 2.0],
            },
            "multihead": {
                "n": 8,
                "heads": 3,
                "M": "random",
                "eta": 0.1,
                "beta": 1.0,
                "steps": 300,
                "F": {"real": [1.0, 0.3, -0.2], "complex": [[0.2, 0.3]], "condition": 2.0},
            },
            "asymmetric": {
                "n": 6,
                "eta": 0.2,
                "beta": 1.0,
                "steps": 200,
                "F": {"real": [1.0, -0.2], "complex": [[0.4, 0.6]]},
            },
        },
    }
)["dynamics"]["simulations"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiments_are_deterministic_and_reach_what_the_theory_says(name):
    a, b = run_experiment(name, SMALL[name], seed=3), run_experiment(name, SMALL[name], seed=3)
    np.testing.assert_array_equal(a["tokens"], b["tokens"])
    for table in ("trajectory", "stability"):
        assert a[table].equals(b[table])
    c = run_experiment(name, SMALL[name], seed=4)
    assert not np.array_equal(a["tokens"], c["tokens"])
    info, stab = a["info"], a["stability"]
    assert info["dominant"]
    cons = stab[stab["equilibrium"] == "consensus"].sort_values("eigenvalue", ascending=False)
    assert cons["stable"].tolist() == [True] + [False] * (len(cons) - 1)
    np.testing.assert_allclose(cons["spectral_radius"], cons["predicted_radius"], atol=1e-6)
    assert (stab["residual"] < 1e-13).all()
    if name == "bipartite":
        basin = a["basin"]
        assert basin["returned_rate"].tolist()[0] == 1.0 and basin["returned_rate"].tolist()[-1] < 0.5
        assert info["basin_radius"] == 0.05
        assert sum(info["uniform_starts"].values()) == 20
        sweep = a["beta_sweep"]  # nearly uniform attention cannot hold two clusters apart; sharp attention can
        assert sweep["stable"].tolist() == [False, True] and sweep["basin_radius"].tolist() == [0.0, 0.05]
    else:
        assert info["final_mean_abs_corr"] > 1 - 1e-6  # consensus on ±v1
        assert info["final_mean_distance"] < 1e-3


def test_multihead_heads_do_not_share_the_layer_eigenvector():
    out = run_experiment("multihead", SMALL["multihead"], seed=3)
    assert max(out["info"]["heads_abs_corr_with_v1"]) < 0.95
    heads = build_heads(SMALL["multihead"], np.random.default_rng(0))
    assert heads.n_heads == 3 and heads.dim == 5


# --------------------------------------------------------------------------- ALBERT

TINY_ALBERT = {
    "model_type": "albert",
    "embedding_size": 16,
    "hidden_size": 32,
    "num_hidden_layers": 12,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "num_hidden_groups": 1,
    "inner_group_num": 1,
}


@pytest.fixture(scope="module")
def tiny_albert(tmp_path_factory):
    root = tmp_path_factory.mktemp("albert")
    spec = {
        "backend": "transformers",
        "modality": "text",
        "random_init": {"seed": 0, "tokenizer": MINILM, "config": TINY_ALBERT},
    }
    info = prepare_model("tiny_albert", spec, root / "models" / "tiny_albert", root / "model.json")
    return info["path"]


SEED = 0  # tiny_albert's random_init seed: its weights are drawn at load


def test_albert_unrolling_equals_the_models_own_forward(tiny_albert):
    model, tokenizer = al.load(tiny_albert, SEED)
    ids = tokenizer("The shared layer is applied again and again to the same tokens.")["input_ids"]
    states, attentions = al.unroll(model, ids, 24)
    assert states.shape == (25, len(ids), 32) and attentions.shape == (24, 4, len(ids), len(ids))
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
    assert len(out.hidden_states) == 13 and len(out.attentions) == 12
    for t in range(13):
        np.testing.assert_allclose(states[t], out.hidden_states[t][0].double().numpy(), atol=1e-6)
    for t in range(12):
        np.testing.assert_allclose(attentions[t], out.attentions[t][0].double().numpy(), atol=1e-6)
    # beyond the trained depth it keeps applying the same layer: step 13 from state 12
    layer = model.encoder.albert_layer_groups[0]
    with torch.no_grad():
        again = layer(torch.tensor(states[12], dtype=torch.float32)[None], None)[0]
    np.testing.assert_allclose(states[13], again.double().numpy(), atol=1e-6)


def layer_heads(model) -> dy.Heads:
    """The oracle of layer_matrix: per-head M_h = W_q^hᵀ W_k^h and F_h = W_O^h W_V^h of the shared layer (biases left out)."""
    att = al.shared_layer(model).albert_layers[0].attention
    w = {name: getattr(att, name).weight.detach().double().numpy() for name in ("query", "key", "value", "dense")}
    return dy.heads_from_projections(w["query"], w["key"], w["value"], w["dense"], att.num_attention_heads)


def test_albert_layer_matrix_is_what_the_attention_block_adds_at_consensus(tiny_albert):
    model, _ = al.load(tiny_albert, SEED)
    F = al.layer_matrix(model)
    np.testing.assert_allclose(F, dy.layer_matrix(layer_heads(model)), atol=1e-10)
    att = model.encoder.albert_layer_groups[0].albert_layers[0].attention
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(32, generator=gen)
    with torch.no_grad():  # random biases (they are initialised to zero), so that they are checked too
        att.value.bias.copy_(torch.randn(32, generator=gen))
        att.dense.bias.copy_(torch.randn(32, generator=gen))
    captured = []
    hook = att.dense.register_forward_hook(lambda m, args, out: captured.append(out))
    with torch.no_grad():
        att(x.expand(1, 7, 32).contiguous(), None)
    hook.remove()
    # all tokens equal: every head's output is W_O^h (W_V^h x + b_V^h), summed, plus b_O
    w = {name: getattr(att, name) for name in ("value", "dense")}
    bias = (
        w["dense"].bias.detach().double().numpy()
        + w["dense"].weight.detach().double().numpy() @ w["value"].bias.detach().double().numpy()
    )
    expected = F @ x.double().numpy() + bias
    np.testing.assert_allclose(captured[0][0].double().numpy(), np.tile(expected, (7, 1)), atol=1e-5)


def test_measure_albert_records_every_step(tiny_albert):
    records, info = al.measure_albert(
        tiny_albert,
        ["one two three four five six", "a short text"],
        ["a", "b"],
        steps=5,
        max_tokens=16,
        show_progress=False,
        seed=SEED,
    )
    assert len(records) == 2 * 6 and records["step"].tolist()[:6] == list(range(6))
    assert records.loc[records.step == 0, "kappa"].isna().all()
    later = records[records.step > 0]
    assert later["kappa"].between(0, 1).all() and later["holds"].notna().all()
    assert (np.diff(later[later.input_id == "a"]["kappa_rollout"]) <= 1e-12).all()  # rollout only contracts
    assert info["hidden_size"] == 32 and info["steps"] == 5 and len(info["leading_eigenvalues"]) == 5
    steps = al.summarise(records)
    assert steps["inputs"].tolist() == [2] * 6 and np.isnan(steps["holds_rate"].iloc[0])


def test_models_that_are_not_one_shared_layer_are_refused(tmp_path):
    with pytest.raises(al.NotSharedLayerError, match="'bert' model"):
        al.load(resolve_local(MINILM))
    spec = {
        "backend": "transformers",
        "modality": "text",
        "random_init": {"seed": 0, "tokenizer": MINILM, "config": {**TINY_ALBERT, "num_hidden_groups": 2}},
    }
    info = prepare_model("grouped", spec, tmp_path / "models" / "grouped", tmp_path / "model.json")
    with pytest.raises(al.NotSharedLayerError, match="num_hidden_groups=2"):
        al.load(info["path"], SEED)


def test_unroll_albert_checks_its_model_files_and_records_what_decides_the_bits(tmp_path):
    """unroll_albert checks the model's files as rule measure does (an edited file names itself and prepare_model,
    and nothing is written) and gives its outputs the provenance the other outputs have."""
    import json

    from rollout_equality.acquire.data import prepare_data
    from rollout_equality.acquire.models import ModifiedFileError

    spec = {
        "backend": "transformers",
        "modality": "text",
        "random_init": {"seed": 0, "tokenizer": MINILM, "config": TINY_ALBERT},
    }
    info = prepare_model("tiny_albert", spec, tmp_path / "models" / "tiny_albert", tmp_path / "model.json")
    data = {"modality": "text", "source": {"pydoc_topics": True}, "n": 2, "seed": 0, "min_words": 8, "max_words": 16}
    prepare_data("pydoc", data, tmp_path / "data")
    out = tmp_path / "out"
    al.unroll_albert(
        info, tmp_path / "data" / "manifest.json", out / "r.parquet", out / "info.json", steps=2, max_tokens=16
    )
    written = json.loads((out / "info.json").read_text())
    assert written["compute"]["device"] == "cpu" and "torch" in written["compute"]["versions"]
    assert written["model"]["files"] == info["files"] and "path" not in written["model"]
    config = Path(info["path"]) / "config.json"
    config.write_text(config.read_text().replace('"num_attention_heads": 4', '"num_attention_heads": 2'))
    with pytest.raises(ModifiedFileError, match=re.escape(str(config)) + ".*prepare_model"):
        al.unroll_albert(
            info, tmp_path / "data" / "manifest.json", out / "again.parquet", out / "again.json", steps=2, max_tokens=16
        )
    assert not (out / "again.parquet").exists() and not (out / "again.json").exists()
