"""Local subspace classifiers (Cevikalp, Larlus, Douze, Jurie): HKNN, LDCV, NHKNN, NLDCV."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from lkm.errors import DataError
from lkm.methods import METHODS, resolve_estimator
from lkm.methods.subspace import HKNN, LDCV, NHKNN, NLDCV
from lkm.numerics.kernels import DistanceCache


def _random(seed: int, n: int = 60, d: int = 30, C: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.repeat(np.arange(C), n // C)
    return X, y, rng.normal(size=(40, d))


def test_registered_keys() -> None:
    for key, cls in {"hknn": HKNN, "ldcv": LDCV, "nhknn": NHKNN, "nldcv": NLDCV}.items():
        assert resolve_estimator(key) is cls and METHODS[key] is cls


def test_hknn_point_on_affine_hull_has_distance_zero() -> None:
    rng = np.random.default_rng(1)
    d, K = 12, 4
    centres = np.array([np.zeros(d), np.full(d, 5.0)])
    X = np.vstack([c + rng.normal(size=(K, d)) for c in centres])
    y = np.repeat(["a", "b"], K)
    alpha = np.array([0.7, -0.4, 1.2, -0.5])  # affine weights (sum 1), some outside the hull
    q = alpha @ X[:K]
    model = HKNN(n_neighbors=K).fit(X, y)
    dist = model.class_distances(q[None])
    assert dist[0, 0] < 1e-10
    assert dist[0, 1] > 1.0
    assert model.predict(q[None])[0] == "a"
    # a point off the hull: its distance is its residual's norm (checked against lstsq)
    p = q + rng.normal(size=d)
    Z = (X[:K] - X[:K].mean(axis=0)).T
    r = p - X[:K].mean(axis=0)
    beta = np.linalg.lstsq(Z, r, rcond=None)[0]
    assert model.class_distances(p[None])[0, 0] == pytest.approx(np.linalg.norm(r - Z @ beta), rel=1e-10)


def test_duplicate_neighbour_does_not_change_distances() -> None:
    X, y, Xq = _random(2)
    base = HKNN(n_neighbors=4).fit(X, y)
    # duplicate every class's rows: each class's 4 neighbours now hold 2 distinct points twice
    doubled = HKNN(n_neighbors=8).fit(np.vstack([X, X]), np.concatenate([y, y]))
    np.testing.assert_allclose(doubled.class_distances(Xq), base.class_distances(Xq), rtol=1e-9, atol=1e-12)
    # a single duplicated neighbour (K = 5 with one point twice) equals K = 4 without it
    nearest = np.argmin(((X[y == 0] - Xq[0]) ** 2).sum(axis=1))
    Xd = np.vstack([X, X[y == 0][nearest]])
    yd = np.append(y, 0)
    five = HKNN(n_neighbors=5).fit(Xd, yd).class_distances(Xq[:1])
    np.testing.assert_allclose(five[0, 0], base.class_distances(Xq[:1])[0, 0], rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_nhknn_linear_equals_hknn(seed: int) -> None:
    """d = 30 >= C·K = 12: the distances differ by a per-query constant (squared), so the
    predictions coincide (NHKNN's docstring)."""
    X, y, Xq = _random(seed)
    hknn = HKNN(n_neighbors=4).fit(X, y)
    nhknn = NHKNN(n_neighbors=4, kernel="linear").fit(X, y)
    np.testing.assert_array_equal(nhknn.predict(Xq), hknn.predict(Xq))
    gap = hknn.class_distances(Xq) ** 2 - nhknn.class_distances(Xq) ** 2
    assert np.ptp(gap, axis=1).max() < 1e-9 * gap.max()
    assert gap.min() > 0.0  # the part of x_q - μ outside R(S_T)
    # LDCV and NLDCV-linear: the same identity for the pooled null space
    np.testing.assert_array_equal(
        NLDCV(n_neighbors=4, kernel="linear").fit(X, y).predict(Xq), LDCV(n_neighbors=4).fit(X, y).predict(Xq)
    )


def test_ldcv_full_rank_within_scatter_raises() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 19))
    y = np.repeat(np.arange(7), 10)
    LDCV(n_neighbors=3).fit(X, y)  # 7·2 = 14 < 19
    with pytest.raises(DataError, match=r"K=4 with C=7 classes .* d=19 .* K <= 3"):
        LDCV(n_neighbors=4).fit(X, y)  # 7·3 = 21 >= 19
    # the kernel version is not limited by d
    assert NLDCV(n_neighbors=7, q=20.0).fit(X, y).predict(X[:5]).shape == (5,)


def test_k_larger_than_a_class_is_clipped_and_recorded() -> None:
    X, y, Xq = _random(4)
    X, y = X[:45], y[:45]  # classes of 20, 20, 5
    model = NHKNN(n_neighbors=8, q=60.0).fit(X, y)
    assert model.info_["k_clipped"] == {2: 5}
    assert model.predict(Xq).shape == (40,)
    assert HKNN(n_neighbors=8).fit(X, y).info_["k_clipped"] == {2: 5}


@pytest.mark.parametrize(
    "make", [lambda: HKNN(3), lambda: LDCV(3), lambda: NHKNN(5, q=60.0), lambda: NLDCV(4, sigma=5.0)]
)
def test_invariant_to_row_order_and_label_names(make) -> None:
    X, y, Xq = _random(5)
    ref = make().fit(X, y).predict(Xq)
    perm = np.random.default_rng(0).permutation(len(y))
    np.testing.assert_array_equal(make().fit(X[perm], y[perm]).predict(Xq), ref)
    names = np.array(["zeta", "alpha", "mid"])  # renamed and reordered labels
    np.testing.assert_array_equal(make().fit(X, names[y]).predict(Xq), names[ref])


def test_decision_function_shapes_and_cache() -> None:
    X, y, Xq = _random(6)
    model = HKNN(3).fit(X, y)
    dist = model.class_distances(Xq)
    np.testing.assert_array_equal(model.decision_function(Xq), -dist)
    two = HKNN(3).fit(X[y < 2], y[y < 2])
    d2 = two.class_distances(Xq)
    np.testing.assert_allclose(two.decision_function(Xq), d2[:, 0] - d2[:, 1])
    assert np.array_equal(two.predict(Xq), np.where(d2[:, 1] < d2[:, 0], 1, 0))
    cache = DistanceCache()
    cached = NHKNN(5, q=60.0).fit(X, y, cache=cache)
    np.testing.assert_array_equal(cached.predict(Xq, cache=cache), NHKNN(5, q=60.0).fit(X, y).predict(Xq))
    assert len(cache) == 1
    # the paper's width q (k = exp(-d²/q)) is 2σ²
    paper = NHKNN(5, q=0.18).fit(X, y)
    assert paper.sigma_ == pytest.approx(0.3) and paper.info_["q"] == pytest.approx(0.18)
    np.testing.assert_array_equal(paper.predict(Xq), NHKNN(5, sigma=0.3).fit(X, y).predict(Xq))


def test_non_psd_local_gram_is_shifted_and_counted() -> None:
    from lkm.numerics.kernels import DISTANCES, register_distance, squared_euclidean

    def l1_squared(A: np.ndarray, B: np.ndarray | None) -> np.ndarray:  # exp(-(L1)²/q) is not PSD
        B = A if B is None else B
        return np.abs(A[:, None, :] - B[None, :, :]).sum(axis=-1) ** 2

    register_distance("test_l1sq", l1_squared)
    try:
        rng = np.random.default_rng(7)
        X = rng.normal(size=(90, 3))
        y = np.repeat(np.arange(3), 30)
        model = NHKNN(n_neighbors=10, q=2.0, metric="test_l1sq").fit(X, y)
        pred = model.predict(X)
        assert model.info_["non_psd_local_grams"] > 0
        assert (pred == y).mean() > 0.5
        euclid = NHKNN(n_neighbors=10, q=2.0).fit(X, y)
        euclid.predict(X)
        assert euclid.info_["non_psd_local_grams"] == 0
    finally:
        DISTANCES.pop("test_l1sq")
    assert DISTANCES["euclidean"] is squared_euclidean
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        HKNN(metric="nope").fit(X, y)


@pytest.mark.parametrize(
    "estimator", [NHKNN(n_neighbors=4, q=8.0, metric="tangent"), NLDCV(n_neighbors=3, q=8.0, metric="tangent")]
)
def test_tangent_local_grams_gathered_from_the_training_matrix_equal_per_query_ones(estimator, monkeypatch) -> None:
    """A costly metric's local Gram matrices come from one training-set distance matrix
    (FULL_TRAIN_GRAM_MAX): the same numbers as computing each query's neighbours alone."""
    from lkm.methods import subspace

    X, y = load_digits(return_X_y=True)
    X = X[:, :64] / 16.0
    train, query = slice(0, 120), slice(120, 150)
    gathered = estimator.fit(X[train], y[train]).decision_function(X[query])
    monkeypatch.setattr(subspace, "FULL_TRAIN_GRAM_MAX", 0)
    per_query = estimator.fit(X[train], y[train]).decision_function(X[query])
    np.testing.assert_allclose(gathered, per_query, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "estimator",
    [
        NHKNN(n_neighbors=30, sigma=2.0),
        NLDCV(n_neighbors=30, sigma=2.0),
        NHKNN(n_neighbors=30, kernel="linear"),
        NLDCV(n_neighbors=30, q=8.0, metric="tangent"),
        NHKNN(n_neighbors=30, q=3.0, metric="tangent", non_psd="gram"),
    ],
)
def test_whole_class_neighbourhoods_share_one_kernel_pca_with_the_per_query_distances(estimator, monkeypatch) -> None:
    """K at least every class's size: one kernel PCA for all queries gives the per-query
    route's distances (a change of basis and of anchor within each hull), and its counts."""
    from lkm.methods import subspace

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    train, query = slice(0, 150), slice(150, 350)  # classes of 10-20 digits: K = 30 takes all
    shared = estimator.fit(X[train], y[train]).class_distances(X[query])
    info = dict(estimator.info_)
    monkeypatch.setattr(subspace, "SHARE_WHOLE_CLASSES", False)
    per_query = estimator.fit(X[train], y[train]).class_distances(X[query])
    np.testing.assert_allclose(shared, per_query, rtol=1e-9, atol=1e-9 * np.abs(per_query).max())
    assert info == estimator.info_


@pytest.mark.parametrize("estimator", [NHKNN(n_neighbors=30, sigma=2.0), NLDCV(n_neighbors=30, sigma=2.0)])
def test_whole_class_neighbourhoods_do_not_depend_on_training_row_order(estimator) -> None:
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(3).permutation(150)
    ref = estimator.fit(X[:150], y[:150]).decision_function(X[150:300])
    np.testing.assert_array_equal(estimator.fit(X[perm], y[perm]).decision_function(X[150:300]), ref)


def test_digits_accuracy_against_1nn() -> None:
    """sklearn digits (d = 64), one stratified split of 400 test digits (deterministic).
    Measured: 1-NN 0.9825, HKNN K=5 0.9975, LDCV K=2 0.9925, NHKNN K=10 0.9975, NLDCV K=5
    0.9925 (σ = 3.0). Asserted: all within 1 point of 1-NN, HKNN strictly above it."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(0)
    test = np.zeros(len(y), bool)
    for c in range(10):
        test[rng.choice(np.flatnonzero(y == c), 40, replace=False)] = True
    Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
    nn = (KNeighborsClassifier(1).fit(Xtr, ytr).predict(Xte) == yte).mean()
    sigma = np.sqrt(X.shape[1] * X.var())
    accs = {
        "hknn": (HKNN(5).fit(Xtr, ytr).predict(Xte) == yte).mean(),
        "ldcv": (LDCV(2).fit(Xtr, ytr).predict(Xte) == yte).mean(),
        "nhknn": (NHKNN(10, sigma=sigma).fit(Xtr, ytr).predict(Xte) == yte).mean(),
        "nldcv": (NLDCV(5, sigma=sigma).fit(Xtr, ytr).predict(Xte) == yte).mean(),
    }
    assert nn > 0.95
    for name, acc in accs.items():
        assert acc >= nn - 0.01, (name, acc, nn)
    assert accs["hknn"] > nn


@parametrize_with_checks([HKNN(n_neighbors=2), NHKNN(n_neighbors=2, sigma=1.0)])
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


def test_hulls_that_would_fill_the_space_fall_back_to_k_equal_d() -> None:
    """K > d + 1 (K - 1 >= d): every hull would be the whole plane and every distance 0;
    HKNN warns and uses K = d = 2, exactly HKNN(n_neighbors=2), with no tie left."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 2))
    y = np.repeat(np.arange(3), 20)
    Xq = rng.normal(size=(30, 2))
    with pytest.warns(UserWarning, match=r"HKNN: n_neighbors K=5 with d=2 features.*using K=2"):
        model = HKNN(n_neighbors=5).fit(X, y)
    assert model.info_["k_effective"] == 2
    reference = HKNN(n_neighbors=2).fit(X, y)
    np.testing.assert_array_equal(model.class_distances(Xq), reference.class_distances(Xq))
    np.testing.assert_array_equal(model.predict(Xq), reference.predict(Xq))
    assert np.all(model.class_distances(Xq) > 0.0) and model.info_["tie_share"] == 0.0


def test_exact_ties_decide_predict_and_decision_function_alike() -> None:
    """A query on all three classes' lines (every distance exactly 0, equal priors): the
    tie rule gives the class of the nearest sample, whatever the label order, and
    argmax(decision_function) agrees with predict (the winner raised by one ulp)."""
    X = np.array([[2.0, 2.0], [3.0, 3.0], [1.0, 0.0], [-1.5, 0.0], [0.0, 0.5], [0.0, -1.0]])
    q = np.array([[0.0, 0.0]])
    for labels in ([0, 0, 1, 1, 2, 2], [2, 2, 0, 0, 1, 1], [1, 1, 2, 2, 0, 0]):
        y = np.array(labels)
        model = HKNN(n_neighbors=2).fit(X, y)
        assert np.all(model.class_distances(q) == 0.0)
        assert model.predict(q)[0] == y[4]  # (0, 0.5) is the nearest sample
        assert model.info_["tie_share"] == 1.0
        decision = model.decision_function(q)
        assert model.classes_[np.argmax(decision, axis=1)][0] == y[4]
        assert np.sort(decision[0])[-1] == np.nextafter(0.0, 1.0) and np.sort(decision[0])[-2] == 0.0
    binary = HKNN(n_neighbors=2).fit(X[2:], np.array([0, 0, 1, 1]))  # two lines through q
    assert binary.predict(q)[0] == 1 and binary.decision_function(q)[0] > 0.0


@pytest.mark.parametrize("seed", range(6))
def test_grouped_k_smallest_selection_equals_the_tie_ruled_one(seed: int) -> None:
    """HKNN's fast per-class selection picks exactly lkm.numerics.neighbors.k_smallest's columns
    (ties by lower index), with heavy ties, constant rows and infinities."""
    from lkm.methods.subspace import _k_smallest_by_groups
    from lkm.numerics.neighbors import k_smallest

    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, size=(40, 300)).astype(float)  # many ties
    scores[0] = 0.0
    scores[1, ::7] = np.inf
    scores[2] = rng.normal(size=300)
    for k in (1, 3, 10, 40):
        np.testing.assert_array_equal(_k_smallest_by_groups(scores, k), k_smallest(scores, k))


def test_ill_conditioned_projection_residuals_equal_the_svd_ones() -> None:
    """Rows with singular values below FAST_COND·s_max (near-duplicate or dependent
    neighbours) take the QR route of the projection residual: the same residuals as an SVD
    of each stack with the same rank cutoff, exact zeros for vectors in the span."""
    from lkm.methods.subspace import DEFAULT_RCOND, FAST_COND, _residual_norms

    rng = np.random.default_rng(0)
    b, m, p = 30, 8, 64
    V = rng.normal(size=(b, m, p))
    V[:, 1] = V[:, 0] + 1e-7 * rng.normal(size=(b, p))  # near-duplicate rows
    V[::3, 2] = 2.0 * V[::3, 3] - V[::3, 4]  # exactly dependent ones
    R = rng.normal(size=(b, 3, p))
    R[:, 0] = V[:, 5] - 0.5 * V[:, 6]  # in the span: residual exactly 0
    expected = np.empty((b, 3))
    for i in range(b):
        _, s, Vt = np.linalg.svd(V[i], full_matrices=False)
        Vt = Vt[s > DEFAULT_RCOND * s[0]]
        expected[i] = np.linalg.norm(R[i] - (R[i] @ Vt.T) @ Vt, axis=-1)
    s = np.linalg.svd(V, compute_uv=False)
    assert (s[:, -1] <= FAST_COND * s[:, 0]).all()  # every stack takes the QR route
    got = _residual_norms(V, R, DEFAULT_RCOND)
    # the near-duplicate direction is known to eps/1e-7 ≈ 2e-9 by any backward-stable method
    np.testing.assert_allclose(got[:, 1:], expected[:, 1:], rtol=1e-8)
    assert (got[:, 0] == 0.0).all()
