"""The float32-screened sweep gives the float64 sweep's records bit for bit.

Every comparison runs the same matrices through the default engine (the screen) and through the float64 sweep
alone (``Engine(screen=False)``, :class:`rollout_equality.condition.dobrushin.Engine`) and asks for identical bits: κ,
κ(½(I+A)), slack, counts, witnesses, holds, holds_direct, κ of the rollout products. The screen is also forced on
for every size and band (:data:`ALWAYS_SCREEN`: ``screen_min_n = 2``, ``screen_max_work = inf``), so that no
fallback to the float64 sweep hides a wrong re-check.
"""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollout_equality.condition.kernels as K
from rollout_equality.condition.dobrushin import DEFAULT_ENGINE, Engine, _analyse, equality_condition, kappa
from rollout_equality.condition.kernels.sweep import _block_tv

FIELDS = ("kappa", "kappa_half", "bound", "slack", "n_max_pairs", "witness", "holds", "holds_direct")


def _normalise(W):
    return W / W.sum(axis=-1, keepdims=True)


def _softmax(S):
    S = S - S.max(axis=-1, keepdims=True)
    return _normalise(np.exp(S))


def adversarial(kind: str, n: int, seed: int, scale: float) -> np.ndarray:
    """One (n, n) row-stochastic float64 matrix of a family that stresses the screen: near-ties, peaked
    rows, rows differing in one entry, near-uniform rows, float32 softmax rows."""
    rng = np.random.default_rng(seed)
    if kind == "dirichlet":
        return rng.dirichlet(np.full(n, scale), size=n)
    if kind == "permuted_rows":  # every row a permutation of one row: many exact and near ties
        base = rng.dirichlet(np.full(n, 0.3))
        A = np.array([rng.permutation(base) for _ in range(n)])
        return _normalise(A * (1 + scale * rng.standard_normal(A.shape)).clip(0.5))
    if kind == "one_entry":  # rows equal to one row but for one entry moved by scale
        base = rng.dirichlet(np.full(n, 1.0))
        A = np.tile(base, (n, 1))
        for i in range(n):
            k, m = rng.integers(0, n, 2)
            d = min(scale, A[i, k])
            A[i, k] -= d
            A[i, m] += d
        return A
    if kind == "peaked":  # nearly hard attention, a sink column in half the rows
        S = scale * rng.standard_normal((n, n))
        S[: n // 2, 0] += 3 * scale
        return _softmax(S)
    if kind == "near_uniform":  # untrained attention: every row close to 1/n
        return _softmax(scale * rng.standard_normal((n, n)))
    if kind == "one_hot_mix":  # one-hot rows, some of them tied exactly, mixed with uniform rows
        A = np.eye(n)[rng.integers(0, max(1, n // 3), n)]
        mix = rng.random(n) < 0.3
        A[mix] = (1 - scale) * A[mix] + scale / n
        return A
    if kind == "float32_softmax":  # what a model gives: float32 rows, analysed in float64
        S = (scale * rng.standard_normal((n, n))).astype(np.float32)
        e = np.exp(S - S.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float64)
    if kind == "duplicate_rows":  # groups of identical rows: ties at every TV value
        rows = rng.dirichlet(np.full(n, scale), size=max(1, n // 4))
        return rows[rng.integers(0, len(rows), n)]
    raise ValueError(kind)


KINDS = (
    "dirichlet",
    "permuted_rows",
    "one_entry",
    "peaked",
    "near_uniform",
    "one_hot_mix",
    "float32_softmax",
    "duplicate_rows",
)
SCALES = {
    "dirichlet": (0.01, 0.1, 1.0, 10.0, 1e4),
    "permuted_rows": (0.0, 1e-12, 1e-9, 1e-7, 1e-5),
    "one_entry": (1e-12, 1e-9, 6e-8, 1e-6, 1e-3),
    "peaked": (5.0, 20.0, 80.0),
    "near_uniform": (1e-6, 1e-3, 0.05, 0.3),
    "one_hot_mix": (0.0, 1e-9, 0.5),
    "float32_softmax": (0.1, 2.0, 10.0),
    "duplicate_rows": (0.05, 1.0, 100.0),
}


ALWAYS_SCREEN = Engine(screen_min_n=2, screen_max_work=np.inf)
"""The screen for every n ≥ 2 and every band (no fallback to the float64 sweep)."""

FLOAT64 = Engine(screen=False)
"""The float64 sweep alone: the reference."""


def rollout_products(stack: np.ndarray) -> np.ndarray:
    """R_l = B_l ⋯ B_0, B_l = ½(I + A_l): the matrices whose κ the rollout takes (computed once, so that both
    kernels see the same bits; the products themselves are not what is compared here)."""
    B = 0.5 * (np.eye(stack.shape[-1]) + stack)
    R = B.copy()
    for layer in range(1, len(B)):
        R[layer] = B[layer] @ R[layer - 1]
    return R


def assert_same_records(stack: np.ndarray, atol: float, screen: Engine = DEFAULT_ENGINE) -> None:
    """Condition fields, κ and κ of the rollout products of a stack of matrices: with the engine ``screen`` and
    with the float64 sweep alone, bit for bit.

    On the kernels' serial twins (the same arithmetic, :func:`test_serial_twins_screen_as_the_parallel_kernels`):
    thousands of small calls to a thread team are slow on a machine shared with other work."""
    R = rollout_products(stack)
    row_sum_atol = 1e-5 * len(stack)
    records = {}
    for name, engine in (("ref", FLOAT64), ("got", screen)):
        engine = dataclasses.replace(engine, serial=True)
        records[name] = (
            equality_condition(stack, atol=atol, engine=engine),
            kappa(stack, engine=engine),
            kappa(R, row_sum_atol, engine=engine),
        )
    ref, got = records["ref"], records["got"]
    for field in FIELDS:
        a, b = getattr(ref[0], field), getattr(got[0], field)
        assert np.array_equal(a, b), (field, a, b)
    assert np.array_equal(ref[1], got[1]), ("kappa", ref[1], got[1])
    assert np.array_equal(ref[2], got[2]), ("rollout kappa", ref[2], got[2])


@st.composite
def stacks(draw, max_n=300):
    """1-3 matrices of one size, each of its own family (a batch whose band changes from matrix to matrix)."""
    n = draw(st.one_of(st.integers(2, 40), st.integers(41, max_n)))
    mats = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(KINDS))
        scale = draw(st.sampled_from(SCALES[kind]))
        mats.append(adversarial(kind, n, draw(st.integers(0, 2**32 - 1)), scale))
    return np.stack(mats)


@settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,  # the same examples in every run (CI included)
    suppress_health_check=[HealthCheck.too_slow],
)
@given(stacks(), st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]))
def test_screened_records_are_the_float64_records(stack, atol):
    assert_same_records(stack, atol, ALWAYS_SCREEN)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(stacks(max_n=200), st.sampled_from([0.0, 1e-9]))
def test_screened_records_with_the_default_limits(stack, atol):
    """With the default engine's screen_min_n and screen_max_work (small matrices and large bands go float64)."""
    assert_same_records(stack, atol)


@pytest.mark.parametrize("kind", ["dirichlet", "peaked", "near_uniform", "one_entry"])
def test_screened_records_at_n_1370(kind):
    """The largest paper size (DINOv2 at 518 px): one matrix of each hard family."""
    stack = adversarial(kind, 1370, 1370, SCALES[kind][1])[None]
    assert_same_records(stack, 1e-9, ALWAYS_SCREEN)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 8, 9, 33, 67, 130, 257, 258, 259])
def test_screen_bound_holds(n):
    """|tv32 − tv64| ≤ c1·tv32 + c2 (screen_bound) for every pair of hard matrices of every tile shape."""
    worst = 0.0
    for seed, kind in enumerate(KINDS):
        for scale in SCALES[kind]:
            A = adversarial(kind, n, seed, scale)
            A32 = A.astype(np.float32)
            tv32 = np.zeros((n, n), np.float32)
            for b in range((n + 3) // 4):
                _block_tv(A32, tv32, 4 * b, np.float32(1.0))  # the sweep's float32 compilation
            tv64 = K.upper_tv(A)
            c1, c2 = K.screen_bound(n, A.sum(axis=1).max())
            iu = np.triu_indices(n, 1)
            t32 = tv32[iu].astype(np.float64)
            err = np.abs(t32 - tv64[iu])
            assert (err <= c1 * t32 + c2).all(), (kind, scale)
            worst = max(worst, (err / (c1 * t32 + c2)).max())
    assert worst > 0  # the float32 sweep does differ: the test can fail


def test_work_reports_the_band_and_the_fallback():
    """A Dirichlet matrix re-checks a few tiles; a matrix of equal rows re-checks every pair (all tie), and the
    matrices after it in the batch take the float64 sweep alone (work -1); the records stay the same."""
    n = 96
    peaked = adversarial("dirichlet", n, 0, 1.0)
    equal = np.tile(adversarial("dirichlet", n, 1, 1.0)[0], (n, 1))
    stack = np.stack([peaked, equal, peaked])
    work, kwork = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64)
    pairs = n * (n - 1) // 2
    serial = Engine(serial=True)
    _analyse(stack, 1e-9, 1e-5, serial, condition=True, work=work)
    _analyse(stack, 0.0, 1e-5, serial, condition=False, work=kwork)
    assert 0 < work[0] < pairs / 10 and work[1] == pairs and work[2] == -1
    assert 0 < kwork[0] < pairs / 10 and kwork[1] == pairs and kwork[2] == -1
    _analyse(stack, 1e-9, 1e-5, dataclasses.replace(FLOAT64, serial=True), condition=True, work=work)
    assert (work == -1).all()
    assert_same_records(stack, 1e-9)


def test_rows_summing_above_two_take_the_float64_sweep():
    """The bound assumes row sums ≤ 2; a larger tolerance lets rows past it through, swept in float64."""
    A = adversarial("dirichlet", 40, 3, 1.0)
    A[5] *= 2.5
    res = _analyse(A[None], 1e-9, 10.0, ALWAYS_SCREEN, condition=True)
    assert res.work[0] == -1
    ref = _analyse(A[None], 1e-9, 10.0, FLOAT64, condition=True)
    assert all(np.array_equal(a, b) for a, b in zip(res, ref))


def test_bad_input_is_refused_by_the_screened_kernels():
    A = adversarial("dirichlet", 50, 4, 1.0)
    A[7, 3] = -0.1
    with pytest.raises(ValueError, match="negative entry"):
        equality_condition(A, engine=ALWAYS_SCREEN)
    with pytest.raises(ValueError, match="negative entry"):
        kappa(A, engine=ALWAYS_SCREEN)


def _kernel_outputs(M, atol, serial, fill=np.nan, screen=True, condition=True):
    """Every output of the kernel (the screen forced on: no fallback; or the float64 sweep alone), called with its
    work arrays filled with ``fill`` beforehand, and the TVs it left in its work array (with the screen, -1 where a
    pair was not re-checked)."""
    n, m = M.shape[-1], len(M)

    def work(dtype=np.float64):
        with np.errstate(over="ignore"):  # ±1e300 is ±inf in float32
            return np.full((n, n), fill, dtype)

    ws = K.Workspace(work(), work(), work(np.float32), work(np.float32))
    out = K.Outputs.empty(m)
    settings = K.Settings(
        condition=condition,
        atol=atol,
        row_sum_atol=1e-5,
        screen=screen,
        screen_min_n=2,
        screen_max_work=np.inf,
    )
    assert (K.analyse_batch_serial if serial else K.analyse_batch)(M, settings, *out, *ws)
    return out, ws.tv


def _screened_kernels(M, atol, serial, fill=np.nan):
    """The screened kernel's outputs for the condition test and for κ alone, and the TVs of the condition test."""
    out, tv = _kernel_outputs(M, atol, serial, fill)
    k, _ = _kernel_outputs(M, atol, serial, fill, condition=False)
    return (*out, k.kappa, k.work), tv


@pytest.mark.parametrize("serial", [True, False])
def test_every_unit_re_checked_is_the_float64_sweep(serial):
    """A band wider than any TV (atol 10) sends every unit of pairs back to float64: the re-checked TVs are the
    float64 sweep's bit for bit, for every unit shape (inside pairs, 4 × 4 tiles, the last n mod 4 columns, a
    partial last block) and in sizes the offline suite meets; so is every output."""
    for n in (*range(2, 14), 63, 64, 65, 66, 67, 215, 257):
        kind = KINDS[n % len(KINDS)]
        M = adversarial(kind, n, n, SCALES[kind][1])[None]
        ref, tv64 = _kernel_outputs(M, 10.0, serial, screen=False)
        out, tv = _kernel_outputs(M, 10.0, serial)
        iu = np.triu_indices(n, 1)
        assert ref.work[0] == -1 and out.work[0] == len(iu[0]), n  # every pair re-checked
        assert np.array_equal(tv[iu], tv64[iu]), (n, kind)
        assert all(np.array_equal(a, b) for a, b in zip(ref[:4], out[:4])), (n, kind)


def test_screened_outputs_do_not_depend_on_what_the_work_arrays_held():
    """The work arrays are kept between calls (workspace): whatever an earlier call left in them (here NaN, ±inf,
    -1, 0, 2, ±1e300 or noise) does not change an output; batches whose band changes from matrix to matrix."""
    rng = np.random.default_rng(0)
    stacks = [
        adversarial("peaked", 215, 1, 80.0)[None],
        np.stack(
            [
                adversarial(k, 130, i, SCALES[k][0])
                for i, k in enumerate(("permuted_rows", "one_hot_mix", "near_uniform"))
            ]
        ),
        np.stack([adversarial(k, 67, i, SCALES[k][-1]) for i, k in enumerate(("duplicate_rows", "dirichlet"))]),
    ]
    for M in stacks:
        for atol in (0.0, 1e-9, 1e-3):
            ref, _ = _screened_kernels(M, atol, True)
            for fill in (np.inf, -np.inf, -1.0, 0.0, 2.0, 1e300, -1e300):
                got, _ = _screened_kernels(M, atol, True, fill)
                assert all(np.array_equal(a, b) for a, b in zip(ref, got)), (M.shape, atol, fill)
            noise = 3 * rng.standard_normal()
            got, _ = _screened_kernels(M, atol, False, noise)
            assert all(np.array_equal(a, b) for a, b in zip(ref, got)), (M.shape, atol, "parallel")


# Run in fresh interpreters sharing one empty numba cache: "f64" compiles the kernel's serial twin, caches it and
# runs the float64 sweep alone; "both" then loads the twin from the cache and runs the screen on it too, and both
# engines on the parallel kernel, compiled in that process on the first "both" run and loaded from the cache on the
# second. Each prints the serial twin's float64 TVs as a hash and, for "both", the sizes where any other kernel and
# engine gave other TVs for a unit re-checked by the screen (atol 10: a band wider than any TV, every unit).
CACHE_HISTORY = """
import hashlib, json, sys
import numpy as np
from test_screening import KINDS, SCALES, _kernel_outputs, adversarial

def tvs(n, screened, serial=True):
    kind = KINDS[n % len(KINDS)]
    M = adversarial(kind, n, n, SCALES[kind][1])[None]
    _, tv = _kernel_outputs(M, 10.0, serial, screen=screened)
    return tv[np.triu_indices(n, 1)]

sizes = [*range(2, 40), 63, 66, 67, 130, 215]
f64 = [tvs(n, False) for n in sizes]
res = {"f64": hashlib.sha256(b"".join(t.tobytes() for t in f64)).hexdigest()}
if sys.argv[1] == "both":
    others = [(True, True), (False, False), (True, False)]  # (screened, serial)
    res["differ"] = [n for n, t in zip(sizes, f64) if any(not np.array_equal(t, tvs(n, *o)) for o in others)]
print(json.dumps(res))
"""


def test_the_screen_re_checks_as_the_sweep_whichever_kernel_came_from_the_cache(tmp_path):
    """A kernel loaded from numba's on-disk cache and one compiled in this process sum a pair's TV in the same order.

    This was the history-dependent mismatch: the pair sums (the pairs inside a block of four rows and the last
    n mod 4 columns) were a reassociated loop, whose order LLVM chose again in each kernel's module, and a kernel
    compiled in this process called the standalone block function while one loaded from the cache ran its own
    copy; with the float64-only kernel cached and the screened one compiled fresh, the re-checked TVs differed
    from the sweep's in the last bit at most sizes (ties at atol 0 then gave other counts and witnesses). Both
    engines are one kernel now; its serial twin and its parallel form are two compilations, cached apart."""
    from hub_rehearsal.rehearse import python

    here = Path(__file__).resolve().parent  # this module, and conftest's folder above it
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "PYTHONPATH": os.pathsep.join([str(here), str(here.parent), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    first = python(CACHE_HISTORY, env, tmp_path, "f64")
    second = python(CACHE_HISTORY, env, tmp_path, "both")
    third = python(CACHE_HISTORY, env, tmp_path, "both")  # every kernel from the cache now
    assert second["differ"] == [] and third["differ"] == []
    assert first["f64"] == second["f64"] == third["f64"]  # and the float64 sweep's own bits do not move


def test_serial_twins_screen_as_the_parallel_kernels():
    stack = np.stack([adversarial(k, 77, i, SCALES[k][1]) for i, k in enumerate(KINDS)])
    R = rollout_products(stack)
    records = {}
    for serial in (False, True):
        engine = dataclasses.replace(ALWAYS_SCREEN, serial=serial)
        records[serial] = (
            equality_condition(stack, engine=engine),
            kappa(stack, engine=engine),
            kappa(R, 1e-4, engine=engine),
        )
    par, ser = records[False], records[True]
    for field in FIELDS:
        assert np.array_equal(getattr(par[0], field), getattr(ser[0], field)), field
    assert np.array_equal(par[1], ser[1]) and np.array_equal(par[2], ser[2])


# --------------------------------------------------------------------------- real attention


def _records_both_ways(extractor, inputs):
    """The layer and rollout records of each input (rollout_equality.condition.analysis.analyse, what rule measure
    runs after each forward pass), screened and float64-only, from one forward pass."""
    from rollout_equality.condition.analysis import analyse

    with torch_inference():
        batch = extractor(inputs)
    ids = [f"x{i}" for i in range(len(inputs))]
    ref = analyse(batch, ids, model="m", dataset="d", engine=FLOAT64)
    got = [records[:2] for records in analyse(batch, ids, model="m", dataset="d")]
    return [r for records in ref for r in records.layer], [r for records in ref for r in records.rollout], got


def torch_inference():
    import torch

    return torch.inference_mode()


def test_real_minilm_records_are_the_float64_records(tmp_path, monkeypatch):
    """The trained MiniLM shipped on PyPI (6 layers × 12 heads) on real text: every record field the same."""
    import pydoc_data.topics

    from models_tiny import MINILM

    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import prepare_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = {"backend": "transformers", "modality": "text", "local": MINILM}
    ex = load(prepare_model("minilm", spec, tmp_path, tmp_path / "minilm" / "model.json"), "cpu", max_tokens=256)
    texts = [" ".join(t.split()[:150]) for t in list(pydoc_data.topics.topics.values())[:4]]
    rows, rollout, got = _records_both_ways(ex, texts)
    assert len(rows) == 4 * 6 * 2 and max(r["n_tokens"] for r in rows) > 100
    assert rows == [r for g, _ in got for r in g] and rollout == [r for _, g in got for r in g]


def test_untrained_control_records_are_the_float64_records(tmp_path):
    """The offline suite's untrained DINOv2-S control (config.yaml, published size) at 224 px: n = 257, the
    size the overhead target is set at; random weights give nearly uniform attention."""

    import skimage.data
    import yaml
    from PIL import Image

    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import prepare_model

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    spec = config["models"]["dinov2_small_random"]
    ex = load(
        prepare_model("dinov2_small_random", spec, tmp_path, tmp_path / "d" / "model.json"), "cpu", image_backend="pil"
    )
    images = [Image.fromarray(skimage.data.astronaut()), Image.fromarray(skimage.data.coffee())]
    rows, rollout, got = _records_both_ways(ex, images)
    assert {r["n_tokens"] for r in rows} == {257, 256}
    assert rows == [r for g, _ in got for r in g] and rollout == [r for _, g in got for r in g]


def test_ft_transformer_first_block_is_the_float64_answer():
    """FT-Transformer's first block (default architecture, untrained, on breast_cancer rows): 31 tokens,
    nearly uniform rows, the screen forced on (31 is below the default screen_min_n)."""
    import torch
    from rtdl_revisiting_models import FTTransformer
    from sklearn.datasets import load_breast_cancer

    from rollout_equality.tabular.ftt import block_attention

    X = load_breast_cancer().data
    x = torch.tensor((X - X.mean(0)) / X.std(0), dtype=torch.float32)
    torch.manual_seed(0)
    model = FTTransformer(
        n_cont_features=x.shape[1], cat_cardinalities=[], d_out=1, **FTTransformer.get_default_kwargs()
    )
    with torch.no_grad():
        first = block_attention(model, x[:64], None)[:, 0].double().numpy()  # (64, 31, 31)
    assert_same_records(first, 1e-9, ALWAYS_SCREEN)
