"""The mathematics: κ, the equality condition, restriction and rollout."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rollout_equality.condition.dobrushin import (
    DEFAULT_ATOL,
    check_stochastic,
    equality_condition,
    kappa,
    pairwise_tv,
    restrict,
    rollout,
)
from rollout_equality.condition.naive import naive_condition, naive_tv

EPS = 1e-12  # float64 rounding allowance for the inequalities


# --------------------------------------------------------------------------- strategies


@st.composite
def rational_stochastic(draw, min_n=1, max_n=8):
    """Rows of small integer weights, normalised: exact ties are common, near-ties impossible."""
    n = draw(st.integers(min_n, max_n))
    w = draw(arrays(np.int64, (n, n), elements=st.integers(0, 6)))
    empty = w.sum(axis=1) == 0
    w[empty, draw(st.integers(0, n - 1))] = 1
    return w / w.sum(axis=1, keepdims=True)


def dirichlet(n, seed, alpha=1.0, batch=()):
    return np.random.default_rng(seed).dirichlet(np.full(n, alpha), size=(*batch, n))


def softmax_rows(scores):
    z = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def structured_matrices():
    rng = np.random.default_rng(7)
    n = 6
    perm = np.eye(n)[rng.permutation(n)]
    block = np.zeros((n, n))
    block[:3, :3] = dirichlet(3, 1)
    block[3:, 3:] = dirichlet(3, 2)
    circulant = np.array([np.roll([0.5, 0.3, 0.2, 0, 0, 0], k) for k in range(n)])
    repeated = dirichlet(n, 3)
    repeated[2] = repeated[0]
    repeated[4] = repeated[0]
    sparse = np.zeros((n, n))
    sparse[np.arange(n), rng.integers(0, n, n)] = 1.0
    return {
        "identity": np.eye(n),
        "rank_one": np.tile(dirichlet(n, 4)[0], (n, 1)),
        "uniform": np.full((n, n), 1 / n),
        "permutation": perm,
        "block_diagonal": block,
        "circulant_ties": circulant,
        "repeated_rows": repeated,
        "one_hot_rows": sparse,
        "near_hard_attention": softmax_rows(40 * rng.standard_normal((n, n))),
        "sink_column": softmax_rows(np.c_[8 + rng.standard_normal((n, 1)), rng.standard_normal((n, n - 1))]),
        "dirichlet_sparse": dirichlet(n, 5, alpha=0.05),
    }


# --------------------------------------------------------------------------- κ


def test_kappa_matches_definition():
    A = dirichlet(9, 0)
    assert kappa(A) == pytest.approx(naive_tv(A).max(), abs=EPS)
    tv = pairwise_tv(A)
    assert np.allclose(tv, naive_tv(A), atol=EPS, rtol=0)
    assert np.array_equal(tv, tv.T)
    assert np.all(np.diag(tv) == 0)


def test_kappa_known_values():
    assert kappa(np.eye(4)) == 1.0
    assert kappa(np.full((4, 4), 0.25)) == 0.0
    assert kappa(np.ones((1, 1))) == 0.0
    assert kappa(np.array([[0.5, 0.5], [0.0, 1.0]])) == pytest.approx(0.5)


def test_kappa_batched_shape_and_values():
    As = dirichlet(5, 1, batch=(3, 2))
    k = kappa(As)
    assert k.shape == (3, 2)
    for idx in np.ndindex(3, 2):
        assert k[idx] == pytest.approx(kappa(As[idx]), abs=0)


@st.composite
def rational_pairs(draw):
    n = draw(st.integers(1, 8))
    return draw(rational_stochastic(n, n)), draw(rational_stochastic(n, n))


@settings(max_examples=150, deadline=None)
@given(rational_pairs())
def test_submultiplicative(pair):
    A, B = pair
    assert kappa(A @ B) <= kappa(A) * kappa(B) + EPS


def test_submultiplicative_random():
    for seed in range(50):
        n = 2 + seed % 12
        A, B = dirichlet(n, seed, alpha=0.3), dirichlet(n, seed + 1000)
        assert kappa(A @ B) <= kappa(A) * kappa(B) + EPS


# --------------------------------------------------------------------------- the condition


def assert_consistent(A, atol=DEFAULT_ATOL):
    r = equality_condition(A, atol=atol)
    ref = naive_condition(A, atol)
    assert r.kappa_half <= r.bound + EPS, "κ(½(I+A)) ≤ ½(1+κ(A)) violated"
    assert r.holds == r.holds_direct, f"characterisation {r.holds} vs direct {r.holds_direct}: {r}"
    assert r.holds == ref["holds"] and r.holds_direct == ref["holds_direct"]
    assert r.kappa == pytest.approx(ref["kappa"], abs=EPS)
    assert r.kappa_half == pytest.approx(ref["kappa_half"], abs=EPS)
    assert r.n_max_pairs == ref["n_max_pairs"]
    assert r.slack == pytest.approx(r.bound - r.kappa_half, abs=0)
    if r.holds:
        i, j = r.witness
        assert i < j
        assert pairwise_tv(A)[i, j] >= r.kappa - 2 * atol
        assert A[i, i] >= A[j, i] - 2 * atol and A[j, j] >= A[i, j] - 2 * atol
    else:
        assert r.witness is None
    return r


@settings(max_examples=300, deadline=None)
@given(rational_stochastic())
def test_characterisation_equals_direct_rational(A):
    assert_consistent(A)


@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0, 10.0])
def test_characterisation_equals_direct_dirichlet(alpha):
    seen = set()
    for seed in range(60):
        r = assert_consistent(dirichlet(2 + seed % 30, seed, alpha))
        seen.add(r.holds)
    assert seen == {True, False}, "both outcomes should occur on random matrices"


@pytest.mark.parametrize("name, A", structured_matrices().items())
def test_characterisation_equals_direct_structured(name, A):
    assert_consistent(A)


def test_exact_identity_for_every_pair():
    """TV^B_ij = ½(1 + TV_ij) − ½[(A_ji − A_ii)₊ + (A_ij − A_jj)₊], the identity behind the theorem."""
    for seed in range(20):
        A = dirichlet(7, seed, alpha=0.5)
        B = 0.5 * (np.eye(7) + A)
        tv, tv_b = naive_tv(A), naive_tv(B)
        d = np.diag(A)
        deficit = np.maximum(A.T - d[:, None], 0) + np.maximum(A - d[None, :], 0)
        predicted = 0.5 * (1 + tv) - 0.5 * deficit
        off = ~np.eye(7, dtype=bool)
        assert np.allclose(tv_b[off], predicted[off], atol=EPS, rtol=0)


def _tv_of_half(A, B, tv_a):
    """TV of the rows of B = ½(I + A) for i < j, each from the sweep's TV^A_ij by the kernels' _tv_half."""
    from rollout_equality.condition.kernels.sweep import _tv_half

    n = len(A)
    tv_b = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            tv_b[i, j] = _tv_half(A, B, tv_a[i, j], i, j)
    return tv_b


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 16, 33, 257])
@pytest.mark.parametrize("alpha", [0.05, 1.0])
def test_one_sweep_gives_both_tv_matrices(n, alpha):
    """TV of B = ½(I + A) from the sweep over A (_tv_half) equals B's TV computed from B's rows alone (every tile
    shape)."""
    from rollout_equality.condition.kernels import upper_tv

    A = dirichlet(n, n + int(10 * alpha), alpha=alpha)
    B = 0.5 * (np.eye(n) + A)
    tv_a = upper_tv(A)
    tv_b = _tv_of_half(A, B, tv_a)
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.allclose(tv_b[upper], naive_tv(B)[upper], atol=1e-14, rtol=0)
    # B is read, not assumed: a B that is not ½(I + A) changes the diagonal terms
    wrong = B.copy()
    wrong[0, 0] -= 0.25
    if n > 1:
        assert not np.allclose(_tv_of_half(A, wrong, tv_a)[0, 1:], tv_b[0, 1:])


def test_edge_case_n1():
    r = equality_condition(np.ones((1, 1)))
    assert (r.holds, r.holds_direct, r.n_max_pairs, r.witness) == (False, False, 0, None)
    assert (r.kappa, r.kappa_half, r.bound, r.slack) == (0.0, 0.0, 0.5, 0.5)


def test_edge_case_rank_one():
    A = np.tile([0.1, 0.2, 0.3, 0.4], (4, 1))
    r = equality_condition(A)
    assert r.kappa == 0.0 and r.holds and r.holds_direct
    assert r.kappa_half == pytest.approx(0.5) and r.n_max_pairs == 6 and r.witness == (0, 1)


def test_identity_and_permutation_hold():
    r = equality_condition(np.eye(5))
    assert r.holds and r.kappa == 1 and r.n_max_pairs == 10
    # 3-cycle: every pair has one row sending all its mass to the other's token
    r = equality_condition(np.eye(3)[[1, 2, 0]])
    assert r.kappa == 1 and not r.holds and not r.holds_direct and r.slack == pytest.approx(0.5)
    # 5-cycle: rows 0 and 2 attend to tokens 1 and 3, neither to the other: equality
    r = equality_condition(np.eye(5)[[1, 2, 3, 4, 0]])
    assert r.holds and r.holds_direct and r.witness == (0, 2)
    # swap: B is uniform, κ(B) = 0 against the bound 1
    r = equality_condition(np.eye(2)[[1, 0]])
    assert not r.holds and r.kappa_half == 0 and r.slack == 1


def test_failure_example_by_hand():
    # rows 0 and 1 are the most distant pair, but row 1 puts more on token 0 than row 0 does
    A = np.array([[0.2, 0.0, 0.8], [0.9, 0.1, 0.0], [0.3, 0.3, 0.4]])
    r = equality_condition(A)
    assert r.n_max_pairs == 1 and not r.holds and not r.holds_direct
    # TV_01 = 0.8 = κ, TV_12 = 0.6, TV_02 = 0.4; by the identity
    # TV^B_01 = ½(1.8) − ½(0.9 − 0.2) = 0.55 and TV^B_12 = ½(1.6) − ½(0.3 − 0.1) = 0.7 = κ(B)
    assert r.kappa == pytest.approx(0.8) and r.kappa_half == pytest.approx(0.7)
    assert r.slack == pytest.approx(0.2)


def defects(A):
    """δ_ij for i < j, as in the module docstring."""
    tv = naive_tv(A)
    i, j = np.triu_indices(len(A), 1)
    return i, j, (tv.max() - tv[i, j]) + np.maximum(A[j, i] - A[i, i], 0) + np.maximum(A[i, j] - A[j, j], 0)


def test_witness_has_the_smallest_defect_and_slack_is_half_of_it():
    for seed in range(40):
        A = dirichlet(3 + seed % 9, seed, alpha=0.2)
        i, j, d = defects(A)
        r = equality_condition(A, atol=0.05)  # a loose tolerance: many near-equalities
        assert r.slack == pytest.approx(0.5 * d.min(), abs=EPS)
        if r.holds:
            k = np.argmin(d)
            assert r.witness == (i[k], j[k])
        else:
            assert d.min() > 0.1


def test_sparse_attention_tiny_entries_agree():
    """Deficits of ~1e-9 on a κ ≈ 1 - 1e-6 pair: both routes must judge alike."""
    A = dirichlet(12, 40, alpha=0.05)
    r = assert_consistent(A)
    i, j, d = defects(A)
    assert d.min() < 1e-8  # the case the split-tolerance definition got wrong
    assert r.slack == pytest.approx(0.5 * d.min(), abs=EPS)


def test_tolerance_groups_near_ties():
    A = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    A = A + np.array([[1e-12, -1e-12, 0], [0, 0, 0], [0, 0, 0]])
    assert equality_condition(A, atol=1e-9).n_max_pairs == 3
    assert equality_condition(A, atol=0.0).n_max_pairs < 3


def test_simultaneous_permutation_invariance():
    rng = np.random.default_rng(11)
    for seed in range(30):
        n = 3 + seed % 10
        A = dirichlet(n, seed, alpha=0.4)
        p = rng.permutation(n)
        PA = A[p][:, p]
        r, rp = equality_condition(A), equality_condition(PA)
        assert (r.holds, r.holds_direct, r.n_max_pairs) == (rp.holds, rp.holds_direct, rp.n_max_pairs)
        assert rp.kappa == pytest.approx(r.kappa, abs=EPS)
        assert rp.kappa_half == pytest.approx(r.kappa_half, abs=EPS)


def test_batched_equals_one_by_one():
    As = dirichlet(6, 21, alpha=0.5, batch=(4, 5))
    rb = equality_condition(As)
    assert rb.holds.shape == (4, 5) and rb.witness.shape == (4, 5, 2)
    for idx in np.ndindex(4, 5):
        r = equality_condition(As[idx])
        assert rb.holds[idx] == r.holds and rb.holds_direct[idx] == r.holds_direct
        assert rb.kappa[idx] == r.kappa and rb.kappa_half[idx] == r.kappa_half
        assert rb.n_max_pairs[idx] == r.n_max_pairs
        assert tuple(rb.witness[idx]) == (r.witness or (-1, -1))


def test_as_dict_flattens_witness():
    d = equality_condition(np.eye(3)).as_dict()
    assert (d["witness_i"], d["witness_j"]) == (0, 1) and d["holds"] is True
    d = equality_condition(np.ones((1, 1))).as_dict()
    assert (d["witness_i"], d["witness_j"]) == (-1, -1)


def test_torch_inputs_match_numpy():
    torch = pytest.importorskip("torch")
    A = dirichlet(17, 5, alpha=0.3, batch=(3,))
    r_np = equality_condition(A)
    r_t = equality_condition(torch.from_numpy(A))
    assert np.array_equal(r_np.holds, r_t.holds) and np.array_equal(r_np.kappa, r_t.kappa)
    # float32 tensors (what models produce) are analysed in float64
    A32 = torch.softmax(torch.randn(2, 9, 9, generator=torch.Generator().manual_seed(0)), dim=-1)
    r32 = equality_condition(A32)
    r64 = equality_condition(A32.double().numpy())
    assert np.array_equal(r32.kappa, r64.kappa)
    assert kappa(torch.eye(3)) == 1.0


def test_results_do_not_depend_on_thread_count(tmp_path):
    """Each pair's sum runs on one thread in a fixed order: 1 and 2 threads give identical bits."""
    import subprocess
    import sys

    code = (
        "import numpy as np, sys; from rollout_equality.condition.dobrushin import pairwise_tv;"
        "A=np.random.default_rng(0).dirichlet(np.ones(301), size=301);"
        "sys.stdout.buffer.write(pairwise_tv(A).tobytes())"
    )
    outs = []
    for threads in ("1", "2"):
        env = {**__import__("os").environ, "NUMBA_NUM_THREADS": threads}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True).stdout)
    assert outs[0] == outs[1] and len(outs[0]) == 301 * 301 * 8


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "A, message",
    [
        (np.ones((2, 3)) / 3, r"square"),
        (np.ones(3) / 3, r"shape \(\.\.\., n, n\)"),
        (np.zeros((0, 0)), r"empty"),
        (np.array([[0.5, np.nan], [0.5, 0.5]]), r"non-finite .* row 0, column 1"),
        (np.array([[0.5, 0.5], [np.inf, 0.5]]), r"non-finite .* row 1, column 0"),
        (np.array([[0.5, 0.5], [1.2, -0.2]]), r"negative entry .* row 1, column 1"),
        (np.array([[0.5, 0.5], [0.3, 0.3]]), r"row 1 of A sums to 0\.6"),
        (np.array([[0.5, 0.6], [0.5, 0.5]]), r"row 0 of A sums to 1\.1"),
    ],
)
def test_bad_input_raises(A, message):
    for fn in (check_stochastic, kappa, pairwise_tv, equality_condition):
        with pytest.raises(ValueError, match=message):
            fn(A)


def test_bad_input_in_batch_names_the_matrix():
    As = dirichlet(3, 0, batch=(2, 2))
    As[1, 0, 2] *= 2
    with pytest.raises(ValueError, match=r"row 2 of matrix \(1, 0\)"):
        equality_condition(As)


def test_row_sum_tolerance_is_explicit():
    A = np.array([[0.5, 0.5 + 1e-7], [0.5, 0.5]])
    equality_condition(A)  # within the default 1e-5
    with pytest.raises(ValueError, match="tolerance 1e-08"):
        equality_condition(A, row_sum_atol=1e-8)


def test_negative_atol_raises():
    with pytest.raises(ValueError, match="atol"):
        equality_condition(np.eye(2), atol=-1.0)


# --------------------------------------------------------------------------- restrict


def test_restrict_renormalises_the_block():
    A = dirichlet(6, 8)
    keep = np.array([False, True, True, False, True, True])
    R = restrict(A, keep)
    idx = np.flatnonzero(keep)
    block = A[np.ix_(idx, idx)]
    assert np.allclose(R, block / block.sum(1, keepdims=True))
    assert np.allclose(R.sum(1), 1)
    assert np.array_equal(R, restrict(A, idx))


def test_restrict_batched():
    As = dirichlet(5, 9, batch=(3,))
    R = restrict(As, [0, 2, 4])
    assert R.shape == (3, 3, 3)
    for b in range(3):
        assert np.array_equal(R[b], restrict(As[b], [0, 2, 4]))


def test_restrict_zero_mass_row_raises():
    A = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.2, 0.3, 0.5]])
    with pytest.raises(ValueError, match="kept row 0 puts no attention"):
        restrict(A, [0, 2])


@pytest.mark.parametrize(
    "keep, message",
    [
        (np.zeros(3, dtype=bool), "no token"),
        (np.ones(2, dtype=bool), r"shape \(3,\)"),
        ([0, 3], r"0\.\.2"),
        ([1, 1], "duplicates"),
        ([0.5, 1.0], "boolean mask or 1-d integer"),
    ],
)
def test_restrict_bad_keep(keep, message):
    with pytest.raises(ValueError, match=message):
        restrict(np.eye(3), keep)


# --------------------------------------------------------------------------- rollout


def test_rollout_chain_and_definition():
    for seed in range(20):
        n, L = 3 + seed % 8, 1 + seed % 6
        layers = [dirichlet(n, 100 * seed + l, alpha=0.3 + l) for l in range(L)]
        r = rollout(layers)
        assert r.kappa_rollout.shape == (L,)
        assert np.all(r.kappa_rollout <= r.product_kappa_half + EPS)
        assert np.all(r.product_kappa_half <= r.product_bound + EPS)
        # the rollout itself, multiplied out by hand
        R = np.eye(n)
        for l, A in enumerate(layers):
            R = 0.5 * (np.eye(n) + A) @ R
            assert r.kappa_rollout[l] == pytest.approx(naive_tv(R).max(), abs=EPS)
        assert r.product_bound[-1] == pytest.approx(np.prod([0.5 * (1 + kappa(A)) for A in layers]))


def test_rollout_batched_array_input():
    stack = dirichlet(6, 2, batch=(4, 3))  # 4 layers, 3 inputs
    r = rollout(stack)
    assert r.kappa_rollout.shape == (4, 3)
    for b in range(3):
        rb = rollout(list(stack[:, b]))
        assert np.allclose(rb.kappa_rollout, r.kappa_rollout[:, b], atol=EPS, rtol=0)


def test_rollout_bad_input():
    with pytest.raises(ValueError, match="at least one layer"):
        rollout([])
    with pytest.raises(ValueError, match="same shape"):
        rollout([np.eye(2), np.eye(3)])
    with pytest.raises(ValueError, match="layer 1"):
        rollout([np.eye(2), np.array([[0.5, 0.4], [0.5, 0.5]])])


def test_tensors_on_any_device_are_analysed_on_the_cpu_in_float64():
    """A tensor is copied to the CPU as float64 and gives numpy's answer bit for bit (on a GPU too, where present)."""
    torch = pytest.importorskip("torch")
    As = np.concatenate([dirichlet(23, 4, alpha=0.2, batch=(5,)), [np.eye(23)[np.roll(np.arange(23), 1)]]])
    expected = equality_condition(As).as_dict()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        T = torch.from_numpy(As).to(device)
        got = equality_condition(T).as_dict()
        assert all(np.array_equal(got[k], expected[k]) for k in expected), device
        assert np.array_equal(kappa(T), kappa(As)) and np.array_equal(pairwise_tv(T), pairwise_tv(As))
        keep = np.arange(23) > 0  # the Dirichlet matrices (the permutation's row 1 attends to token 0 alone)
        assert np.array_equal(restrict(T[:5], keep), restrict(As[:5], keep))
        assert np.array_equal(rollout(T).kappa_rollout, rollout(As).kappa_rollout)


def _all_pairs(A, tv, atol):
    """The count and witness by a pass over every pair i < j (the definition), from the kernel's TV."""
    n = len(A)
    kappa_a = max((tv[i, j] for i in range(n) for j in range(i + 1, n)), default=0.0)
    count, best, w = 0, np.inf, (-1, -1)
    for i in range(n):
        for j in range(i + 1, n):
            gap = kappa_a - tv[i, j]
            count += gap <= atol
            defect = gap + max(A[j, i] - A[i, i], 0.0) + max(A[i, j] - A[j, j], 0.0)
            if defect < best:
                best, w = defect, (i, j)
    return count, (w if best <= 2 * atol else None)


@pytest.mark.parametrize("atol", [0.0, 1e-9, 1e-3, 0.05, 0.5])
def test_candidate_rows_give_the_all_pairs_answer(atol):
    """The count and witness look only at rows within 2·atol of κ: the same answer as every pair."""
    from rollout_equality.condition.kernels import upper_tv

    rng = np.random.default_rng(5)
    mats = [
        dirichlet(n, seed, alpha=alpha)
        for seed, (n, alpha) in enumerate([(2, 1), (5, 0.1), (9, 0.3), (17, 1), (33, 0.05)])
    ]
    mats += [np.full((6, 6), 1 / 6), np.eye(7)[rng.permutation(7)], 0.5 * (np.eye(8) + np.full((8, 8), 1 / 8))]
    for A in mats:
        r = equality_condition(A, atol=atol)
        count, witness = _all_pairs(A, upper_tv(A), atol)
        assert (r.n_max_pairs, r.witness) == (count, witness)


def test_threads_keep_their_own_work_arrays():
    """Two threads testing matrices of different sizes at once get the answers of one thread alone."""
    from concurrent.futures import ThreadPoolExecutor

    batches = [dirichlet(n, n, alpha=0.3, batch=(6,)) for n in (31, 57, 31, 57, 12, 57)]
    alone = [equality_condition(b) for b in batches]
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(equality_condition, batches * 3))
    for r, ref in zip(together, alone * 3):
        assert np.array_equal(r.kappa, ref.kappa) and np.array_equal(r.kappa_half, ref.kappa_half)
        assert np.array_equal(r.witness, ref.witness) and np.array_equal(r.n_max_pairs, ref.n_max_pairs)


@pytest.mark.parametrize("n", [2, 9, 130, 257, 300])
def test_restrict_sums_each_row_in_order(n):
    """Each kept row is divided by its sum taken in the order of the kept indices (bit for bit), as numpy
    sums the fancy-indexed block of a stack of layers (what the records of earlier runs were built from)."""
    rng = np.random.default_rng(n)
    for batch in [(), (3,), (2, 2)]:
        A = dirichlet(n, n + len(batch), alpha=0.3, batch=batch)
        for keep in [np.arange(n) > 0, rng.permutation(n)[: max(1, n - 3)], np.arange(n) % 3 != 0]:
            idx = np.flatnonzero(keep) if keep.dtype == bool else keep
            block = A[..., idx[:, None], idx[None, :]]
            mass = np.zeros(block.shape[:-1])
            for c in range(len(idx)):
                mass = mass + block[..., c]
            got = restrict(A, keep)
            assert got.shape == block.shape and got.flags["C_CONTIGUOUS"]
            assert np.array_equal(got, block / mass[..., None])
            if batch == (3,):  # a stack of layers, as the records use it: numpy's own sum is this one
                assert np.array_equal(got, block / block.sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("n", [1, 2, 5, 9, 64, 257])
def test_serial_engine_gives_the_parallel_answers_bit_for_bit(n):
    """A serial engine runs the serial twins of the kernels; the results are the parallel kernels' exactly (each
    pair's sum is taken in the same order either way)."""
    import rollout_equality.condition.kernels as K
    from rollout_equality.condition.dobrushin import Engine, _kernel, rollout_kappa

    A = dirichlet(n, n, alpha=0.2, batch=(4,))
    keep = np.arange(n) % 4 != 0 if n > 1 else np.ones(1, bool)
    serial = Engine(serial=True)
    assert _kernel("analyse_batch", serial) is K.analyse_batch_serial
    assert _kernel("analyse_batch", Engine()) is K.analyse_batch
    parallel = (equality_condition(A), kappa(A), restrict(A, keep), rollout_kappa(A))
    alone = (
        equality_condition(A, engine=serial),
        kappa(A, engine=serial),
        restrict(A, keep, engine=serial),
        rollout_kappa(A, engine=serial),
    )
    p, s = parallel[0], alone[0]
    for field in ("kappa", "kappa_half", "n_max_pairs", "witness", "holds", "holds_direct"):
        assert np.array_equal(getattr(p, field), getattr(s, field)), field
    for a, b in zip(parallel[1:], alone[1:]):
        assert np.array_equal(a, b)


def test_engines_are_per_call_not_process_wide():
    """Two threads analysing at once with other engines each get their own engine's work (the screen's re-checked
    pairs, or -1 for the float64 sweep alone) and the same results."""
    import threading

    from rollout_equality.condition.dobrushin import Engine, _analyse

    A = dirichlet(96, 1, alpha=1.0, batch=(3,))
    engines = [Engine(serial=True), Engine(screen=False, serial=True), Engine(screen_min_n=100, serial=True)]
    expect_screen = [True, False, False]
    seen: dict[int, list] = {k: [] for k in range(len(engines))}
    barrier = threading.Barrier(len(engines))

    def run(k):
        barrier.wait()
        for _ in range(20):
            seen[k].append(_analyse(A, 1e-9, 1e-5, engines[k], condition=True))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(engines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ref = seen[1][0]
    for k, outs in seen.items():
        assert len(outs) == 20
        for out in outs:
            assert ((out.work > 0) if expect_screen[k] else (out.work == -1)).all(), (k, out.work)
            assert all(np.array_equal(a, b) for a, b in zip(out[:4], ref[:4]))


def test_engine_settings_are_checked():
    from rollout_equality.condition.dobrushin import Engine

    with pytest.raises(ValueError, match="screen_min_n"):
        Engine(screen_min_n=0)
    with pytest.raises(ValueError, match="screen_max_work"):
        Engine(screen_max_work=-0.1)
    with pytest.raises(ValueError, match="screen_max_work"):
        Engine(screen_max_work=float("nan"))


def test_half_identity_is_numpys_half_of_identity_plus_a():
    import rollout_equality.condition.kernels as K

    for n in (1, 7, 257):
        A = dirichlet(n, n, alpha=0.1, batch=(3,))
        for kernel in (K.half_identity_batch, K.half_identity_batch_serial):
            B = np.empty_like(A)
            kernel(A, B)
            assert np.array_equal(B, 0.5 * (np.eye(n) + A))
