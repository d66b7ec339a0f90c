"""Two-sided tangent distance (Simard et al.) and the nearest-neighbour classifier `nn`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from lkm.errors import DataError
from lkm.methods import METHODS, NearestNeighbor
from lkm.numerics.kernels import DISTANCES, DistanceCache, sq_dists, squared_euclidean
from lkm.numerics.tangent import tangent_sq_distances, tangent_vectors


@pytest.fixture(scope="module")
def usps(data_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    h5py = pytest.importorskip("h5py")
    with h5py.File(data_dir / "usps" / "usps.h5", "r") as f:
        X, y = f["train/data"][:].astype(np.float64), f["train/target"][:]
        Xt, yt = f["test/data"][:].astype(np.float64), f["test/target"][:]
    return X, y, Xt, yt


def _brute_force(x: np.ndarray, y: np.ndarray) -> float:
    """min ||(x + Txᵀa) − (y + Tyᵀb)||² by lstsq on the 14-column system."""
    Tx, Ty = tangent_vectors(x[None], (16, 16))[0], tangent_vectors(y[None], (16, 16))[0]
    M = np.hstack([Tx.T, -Ty.T])
    e = x - y
    coef = np.linalg.lstsq(M, -e, rcond=None)[0]
    return float(np.sum((e + M @ coef) ** 2))


def test_tangent_distance_is_a_symmetric_nonnegative_lower_bound(usps) -> None:
    X = usps[0][:60]
    D = tangent_sq_distances(X)
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0.0) and np.all(D >= 0.0)
    A, B = X[:25], X[25:]
    DAB, DBA = tangent_sq_distances(A, B), tangent_sq_distances(B, A)
    np.testing.assert_allclose(DAB, DBA.T, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(DAB, D[:25, 25:], rtol=1e-9, atol=1e-10)
    E = squared_euclidean(A, B)
    assert np.all(DAB <= E * (1 + 1e-12) + 1e-12)  # a = b = 0 is feasible
    assert np.median(DAB / E) < 0.9  # and the minimum uses the tangents
    assert np.all(tangent_sq_distances(A, A.copy()).diagonal() < 1e-10)


def test_batched_solution_equals_per_pair_lstsq(usps) -> None:
    X = usps[0]
    rng = np.random.default_rng(0)
    A, B = X[rng.choice(len(X), 20, replace=False)], X[rng.choice(len(X), 20, replace=False)]
    D = tangent_sq_distances(A, B)
    pairs = rng.integers(0, 20, size=(20, 2))
    brute = np.array([_brute_force(A[i], B[j]) for i, j in pairs])
    np.testing.assert_allclose(D[pairs[:, 0], pairs[:, 1]], brute, rtol=1e-8)


def test_certified_cholesky_route_equals_the_eigh_pseudo_inverse(usps, monkeypatch) -> None:
    """The unrolled Cholesky of the 7 × 7 systems (certified λ_min) gives the eigh
    route's distances; pairs it cannot certify (repeated and blank images) take eigh."""
    from lkm.numerics import tangent

    X = usps[0][:120].copy()
    X[100:110] = X[:10]  # duplicated images: S singular
    X[110:] = 0.0  # blank images: no tangents
    A, B = X[:70], X[50:]
    fast = tangent_sq_distances(A, B)
    # S = I - CᵀC, C = Q_x Q_yᵀ (orthonormal rows) sharing 0-3 directions, or nearly so
    rng = np.random.default_rng(0)
    Qx, Qy = (np.linalg.qr(rng.normal(size=(60, 40, 7)))[0].transpose(0, 2, 1) for _ in range(2))
    shared = np.arange(60) % 4
    for n, k in enumerate(shared):
        Qy[n, :k] = Qx[n, :k] + (10.0 ** -(n % 8)) * rng.normal(size=(k, 40)) * (n % 3 > 0)
        Qy[n] = np.linalg.qr(Qy[n].T)[0].T
    C = Qx @ Qy.transpose(0, 2, 1)
    S = np.eye(7) - C.transpose(0, 2, 1) @ C
    h = rng.normal(size=(60, 7))
    gain, certified = tangent._inverse_quadratic_forms(S, h)
    lam = np.linalg.eigvalsh(S)[:, 0]
    assert 10 < certified.sum() < 50
    assert np.all(lam[certified] > tangent.CERTIFY_FACTOR * tangent.PAIR_RCOND)  # a lower bound: never too lax
    exact = np.einsum("ni,ni->n", h[certified], np.linalg.solve(S[certified], h[certified, :, None])[..., 0])
    np.testing.assert_allclose(gain[certified], exact, rtol=1e-8)
    monkeypatch.setattr(tangent, "_inverse_quadratic_forms", lambda S, h: (np.zeros(len(S)), np.zeros(len(S), bool)))
    np.testing.assert_allclose(fast, tangent_sq_distances(A, B), rtol=1e-10, atol=1e-10)


def test_a_shifted_digit_is_tangent_close_and_different_digits_are_not(usps) -> None:
    from scipy.ndimage import shift

    X, y = usps[0], usps[1]
    ratios = []
    for i in range(10):
        img = X[i].reshape(16, 16)
        for moved in (shift(img, (0.0, 0.5), order=1), shift(img, (1.0, 0.0), order=1), np.roll(img, 1, axis=1)):
            td = tangent_sq_distances(X[i][None], moved.reshape(1, -1))[0, 0]
            ratios.append(td / squared_euclidean(X[i][None], moved.reshape(1, -1))[0, 0])
    # measured (smoothing sigma 1): median 0.22, largest 0.44 of the squared Euclidean distance
    assert np.median(ratios) < 0.3 and max(ratios) < 0.5, ratios
    a = X[np.flatnonzero(y == 0)[:10]]
    b = X[np.flatnonzero(y == 1)[:10]]
    ratio = tangent_sq_distances(a, b) / squared_euclidean(a, b)
    assert np.median(ratio) > 0.4  # a 0 does not become a 1 by small transformations


def test_blank_images_have_no_tangents_and_duplicates_are_exact() -> None:
    X = np.vstack([np.zeros(16), np.zeros(16), np.eye(4).ravel(), np.eye(4).ravel()])
    assert np.all(tangent_vectors(X[:2], (4, 4)) == 0.0)
    D = tangent_sq_distances(X, X.copy())  # singular pairs: no tangents, identical tangent spaces
    assert np.all(np.isfinite(D)) and np.all(D >= 0.0)
    np.testing.assert_allclose(D[[0, 1, 2, 3], [1, 0, 3, 2]], 0.0, atol=1e-12)
    assert 0.0 < D[0, 2] <= 4.0  # the blank image has no tangents; the other one does
    np.testing.assert_allclose(D, D.T, atol=1e-12)


def test_non_square_data_gives_a_one_line_error() -> None:
    X = np.random.default_rng(0).random((5, 19))
    with pytest.raises(DataError, match=r"^tangent distance needs square images; got d=19 features$"):
        tangent_sq_distances(X)
    with pytest.raises(DataError, match="needs square images"):
        sq_dists(X, X, DistanceCache(), metric="tangent")
    with pytest.raises(DataError, match="needs square images"):
        NearestNeighbor(metric="tangent").fit(X, [0, 1, 0, 1, 1])
    with pytest.raises(DataError, match=r"image_shape \(4, 5\) has 20 pixels; got d=19"):
        tangent_sq_distances(X, image_shape=(4, 5))


def test_tangent_is_a_registered_distance_and_cached(usps) -> None:
    X = usps[0][:30]
    assert "tangent" in DISTANCES
    cache = DistanceCache()
    D = sq_dists(X, X, cache, metric="tangent")
    assert sq_dists(X, X, cache, metric="tangent") is D
    np.testing.assert_array_equal(D, tangent_sq_distances(X))


def test_nn_with_tangent_distance_beats_euclidean_on_usps(usps) -> None:
    X, y, Xt, yt = usps
    train, test = slice(0, 500), slice(0, 300)
    errors = {}
    for metric in ("euclidean", "tangent"):
        model = NearestNeighbor(metric=metric).fit(X[train], y[train])
        errors[metric] = float(np.mean(model.predict(Xt[test]) != yt[test]))
    # measured: 12.0 % Euclidean, 5.3 % tangent (first 500 training, first 300 test images)
    assert errors["tangent"] <= errors["euclidean"] - 0.02, errors


def test_nn_predicts_the_nearest_label_and_decides_by_class_distances() -> None:
    X = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [6.0, 0.0], [10.0, 0.0]])
    y = np.array(["a", "a", "b", "b", "c"])
    model = NearestNeighbor().fit(X, y)
    Q = np.array([[0.4, 0.0], [5.2, 0.0], [9.0, 0.0]])
    assert list(model.predict(Q)) == ["a", "b", "c"]
    np.testing.assert_allclose(model.decision_function(Q)[0], [-0.16, -4.6**2, -9.6**2])
    two = NearestNeighbor().fit(X[:4], y[:4])
    np.testing.assert_allclose(two.decision_function(Q), [0.16 - 4.6**2, 4.2**2 - 0.04, 64.0 - 9.0])
    assert METHODS["nn"] is NearestNeighbor


def test_nn_is_independent_of_label_names_and_row_order(usps) -> None:
    X, y, Xt, _ = usps
    X, y, Q = X[:300], y[:300], Xt[:100]
    for metric in ("euclidean", "tangent"):
        base = NearestNeighbor(metric=metric).fit(X, y).predict(Q)
        names = np.array(list("zyxwvutsrq"))  # reversed order of the classes
        renamed = NearestNeighbor(metric=metric).fit(X, names[y]).predict(Q)
        np.testing.assert_array_equal(renamed, names[base])
        perm = np.random.default_rng(1).permutation(len(X))
        model = NearestNeighbor(metric=metric).fit(X[perm], y[perm])
        np.testing.assert_array_equal(model.predict(Q), base)
        assert model.info_["tie_share"] == 0.0


def test_nn_ties_go_to_the_lower_training_index() -> None:
    X = np.array([[1.0], [-1.0], [3.0]])
    assert NearestNeighbor().fit(X, [1, 0, 2]).predict([[0.0]])[0] == 1
    assert NearestNeighbor().fit(X[[1, 0, 2]], [0, 1, 2]).predict([[0.0]])[0] == 0


@parametrize_with_checks([NearestNeighbor()])
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


def test_tangent_metric_on_data_that_are_not_square_images_is_one_spec_error_before_any_fit():
    from lkm.engine.runner import build_plan
    from lkm.errors import SpecError
    from lkm.spec import spec_from_dict

    spec = spec_from_dict({"name": "bad", "datasets": ["moons"],
                           "methods": [{"name": "NN", "estimator": "nn"},
                                       {"name": "HK", "estimator": "hknn", "sweep": {"metric": ["euclidean", "tangent"]}}]})
    with pytest.raises(SpecError) as err:
        build_plan(spec, source="s.yaml")
    msg = str(err.value)
    assert msg.startswith("s.yaml: methods[1] (HK): metric 'tangent' on dataset moons (") and "square images" in msg
    assert "\n" not in msg
