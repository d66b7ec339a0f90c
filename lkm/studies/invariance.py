"""kNN invariance under kernel maps (Shin & Cho, NPPS, Sec. 3).

Theorem 1: with the RBF kernel the k nearest neighbours of every pattern in input
space are its k nearest neighbours in feature space. Theorem 2: the same holds for the
polynomial kernel ``K(x, y) = (x·y + 1)^p`` when every pattern has unit norm; without
unit norm it fails (x = 1, y1 = 2, y2 = -1, p = 2: feature distances 11 and 8).

The study measures, for k = 1..k_max, the fraction of patterns whose set of k nearest
neighbours (excluding the pattern itself) is the same in both spaces. Input-space
squared distances are :func:`lkm.numerics.kernels.squared_euclidean`; feature-space squared
distances come from the kernel matrix, ``K(x,x) + K(y,y) - 2 K(x,y)`` (paper Eq. 3),
with round-off negatives clipped to 0.

Ties. Exact arithmetic preserves ties (the RBF kernel is a function of the distance;
the polynomial kernel of unit vectors a function of the inner product), but in
floating point a tie can come out as a near-tie in one space and not in the other
(duplicate rows, integer-valued data, or an RBF kernel too wide or too narrow for
float64 to resolve ``2 - 2K``). Two rules are reported:

* ``fraction_same`` (the headline, tie-tolerant): a pattern is invariant at k when
  some set of k patterns is a valid k-NN set in *both* spaces. A set is a valid k-NN
  set of a space when it holds every pattern closer than ``d_(k) - tol`` and only
  patterns no farther than ``d_(k) + tol``, ``d_(k)`` being the k-th smallest distance.
  ``tol`` is ``tie_rtol`` times the size of the terms the distance was computed from
  (for pattern i: ``K_ii + max_j K_jj + 2 max_j |K_ij|``, the linear kernel for input
  space), i.e. a relative round-off bound. ``tie_rtol = 0`` counts exact ties only.
* ``fraction_same_strict``: ties broken by the lower pattern index in both spaces
  (:func:`lkm.numerics.neighbors.k_smallest`), sets compared as computed. Lower than
  ``fraction_same`` only where the k-th neighbour is tied (see ``fraction_tied_*``).

The tolerant rule is the headline because the theorems are statements about exact
distances: a miss under it is a genuine reordering, larger than round-off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lkm.numerics.kernels import (
    gaussian_from_sq,
    inner_products,
    polynomial_kernel,
    squared_euclidean,
)
from lkm.numerics.neighbors import k_smallest
from lkm.studies.registry import study

KERNELS = ("rbf", "poly")


def feature_sq_distances(K: np.ndarray) -> np.ndarray:
    """Feature-space squared distances ``K(x,x) + K(y,y) - 2 K(x,y)`` from a square
    kernel matrix (Shin & Cho, Eq. 3); round-off negatives are clipped to 0."""
    K = np.asarray(K, dtype=np.float64)
    d = np.diag(K).copy()
    F = d[:, None] + d[None, :] - 2.0 * K
    np.maximum(F, 0.0, out=F)
    return F


def _tolerance(K: np.ndarray, rtol: float) -> np.ndarray:
    """Per-row absolute tie tolerance for distances computed from ``K``."""
    d = np.diag(K)
    return rtol * (np.abs(d) + np.abs(d).max() + 2.0 * np.abs(K).max(axis=1))


def _check(params: dict[str, Any]) -> None:
    p = params
    if p.get("kernel", "rbf") not in KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(KERNELS)}, got {p.get('kernel')!r}")
    sigma = p.get("sigma", 1.0)
    if sigma != "median" and (isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not sigma > 0):
        raise ValueError(f"sigma: expected a number > 0 or 'median', got {sigma!r}")
    for name, lo in (("degree", 1), ("k_max", 1), ("max_patterns", 2)):
        v = p.get(name, lo)
        if name == "max_patterns" and v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name}: expected an integer >= {lo}, got {v!r}")
    if isinstance(p.get("coef0", 1.0), bool) or not isinstance(p.get("coef0", 1.0), (int, float)):
        raise ValueError(f"coef0: expected a number, got {p.get('coef0')!r}")
    if not isinstance(p.get("normalize", False), bool):
        raise ValueError(f"normalize: expected true or false, got {p.get('normalize')!r}")
    rtol = p.get("tie_rtol", 1e-12)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or rtol < 0:
        raise ValueError(f"tie_rtol: expected a number >= 0, got {rtol!r}")
    rs = p.get("random_state", 0)
    if rs is not None and (isinstance(rs, bool) or not isinstance(rs, int)):
        raise ValueError(f"random_state: expected an integer, got {rs!r}")


@study("knn_invariance", check=_check, tables=("knn_invariance",), figures=("knn_invariance",))
def knn_invariance(
    X: np.ndarray,
    y: np.ndarray,
    *,
    kernel: str = "rbf",
    sigma: float | str = 1.0,
    degree: int = 2,
    coef0: float = 1.0,
    normalize: bool = False,
    k_max: int = 10,
    max_patterns: int | None = 2000,
    random_state: int | None = 0,
    tie_rtol: float = 1e-12,
) -> list[dict[str, Any]]:
    """Fraction of patterns whose k nearest neighbours are the same in input and feature space (Shin & Cho, Sec. 3)."""
    _check(dict(kernel=kernel, sigma=sigma, degree=degree, coef0=coef0, normalize=normalize, k_max=k_max,
                max_patterns=max_patterns, random_state=random_state, tie_rtol=tie_rtol))
    X = np.asarray(X, dtype=np.float64)
    n_rows = X.shape[0]
    if max_patterns is not None and n_rows > max_patterns:  # bounds the O(n²) matrices
        keep = np.sort(np.random.default_rng(random_state).choice(n_rows, max_patterns, replace=False))
        X = X[keep]
    n_zero = 0
    if normalize:
        norms = np.linalg.norm(X, axis=1)
        n_zero = int((norms == 0).sum())  # a zero vector has no unit-norm version: left out
        X = X[norms > 0] / norms[norms > 0, None]
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"knn_invariance needs at least 2 patterns, got {n}")
    k_top = min(k_max, n - 1)

    D = squared_euclidean(X)
    tol_in = _tolerance(inner_products(X), tie_rtol)
    if kernel == "rbf":
        if sigma == "median":
            sigma_value = float(np.sqrt(np.median(D[np.triu_indices(n, 1)])))
            if sigma_value == 0:
                raise ValueError("sigma: 'median' pairwise distance is 0 (most rows are identical)")
        else:
            sigma_value = float(sigma)
        K = gaussian_from_sq(D, sigma_value)
        setting = {"sigma": sigma_value}
        label = f"rbf sigma={sigma_value:.4g}"
    else:
        K = polynomial_kernel(X, degree=degree, coef0=coef0)
        setting = {"degree": degree, "coef0": float(coef0)}
        label = f"poly degree={degree} coef0={coef0:g}"
    if normalize:
        label += ", unit norm"
    F = feature_sq_distances(K)
    tol_f = _tolerance(K, tie_rtol)
    del K
    np.fill_diagonal(D, np.inf)  # a pattern is not its own neighbour
    np.fill_diagonal(F, np.inf)

    idx_in = k_smallest(D, k_top)  # ties: lower index first
    idx_f = k_smallest(F, k_top)
    kth_in = np.take_along_axis(D, idx_in, axis=1)
    kth_f = np.take_along_axis(F, idx_f, axis=1)

    rows = []
    for k in range(1, k_top + 1):
        a, b = np.sort(idx_in[:, :k], axis=1), np.sort(idx_f[:, :k], axis=1)
        strict = (a == b).all(axis=1)
        overlap = np.array([np.intersect1d(r, s, assume_unique=True).size for r, s in zip(a, b, strict=True)]) / k
        # Tie-tolerant rule: is there a set that is a valid k-NN set in both spaces?
        must_in = D < (kth_in[:, k - 1] - tol_in)[:, None]
        allow_in = D <= (kth_in[:, k - 1] + tol_in)[:, None]
        must_f = F < (kth_f[:, k - 1] - tol_f)[:, None]
        allow_f = F <= (kth_f[:, k - 1] + tol_f)[:, None]
        must = must_in | must_f
        allow = allow_in & allow_f
        same = ~(must & ~allow).any(axis=1) & (must.sum(axis=1) <= k) & (allow.sum(axis=1) >= k)
        rows.append({
            "k": k,
            "fraction_same": float(same.mean()),
            "fraction_same_strict": float(strict.mean()),
            "mean_overlap": float(overlap.mean()),
            "fraction_tied_input": float((allow_in.sum(axis=1) > k).mean()),
            "fraction_tied_feature": float((allow_f.sum(axis=1) > k).mean()),
            "n_patterns": int(n),
            "n_rows": int(n_rows),
            "n_features": int(X.shape[1]),
            "n_zero_norm_left_out": n_zero,
            "kernel": kernel,
            **setting,
            "normalize": bool(normalize),
            "tie_rtol": float(tie_rtol),
            "setting": label,
        })
    return rows
