"""Seeded two-dimensional two-class generators (offline data for quick runs and figures).

Each generator takes keyword-only parameters, all of which the registry YAML supplies as
defaults (``params`` of the entry); the same parameters give the same arrays, bit for
bit, because every random draw comes from ``numpy.random.default_rng(random_state)`` (or
scikit-learn's seeded ``make_moons``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from lkm.errors import DataError

Generated = tuple[np.ndarray, np.ndarray]


def moons(*, n_samples: int, noise: float, random_state: int) -> Generated:
    """Two interleaving half circles, :func:`sklearn.datasets.make_moons`; labels 0 / 1."""
    from sklearn.datasets import make_moons

    return make_moons(n_samples=n_samples, noise=noise, random_state=random_state)


def _class_sizes(n_samples: int) -> tuple[int, int]:
    return n_samples - n_samples // 2, n_samples // 2


def _shuffled(rng: np.random.Generator, X: np.ndarray, y: np.ndarray) -> Generated:
    order = rng.permutation(len(y))
    return X[order], y[order]


def _blob_mixture(
    centers_by_label: Mapping[int, Sequence[tuple[float, float]]], n_samples: int, spread: float,
    random_state: int,
) -> Generated:
    """Labels +1 and -1 (half the points each, the extra one to +1), each a mixture of
    isotropic Gaussian blobs of standard deviation ``spread`` around its centers; the blob
    of every point is drawn uniformly."""
    rng = np.random.default_rng(random_state)
    sizes = dict(zip((1, -1), _class_sizes(n_samples), strict=True))
    parts = []
    for label, centers in centers_by_label.items():
        blob = rng.integers(len(centers), size=sizes[label])
        parts.append(np.asarray(centers)[blob] + rng.normal(scale=spread, size=(sizes[label], 2)))
    X = np.vstack(parts)
    y = np.repeat([1, -1], [sizes[1], sizes[-1]])
    return _shuffled(rng, X, y)


GAUSSIAN_MEANS = ((0.0, 0.0), (2.0, 2.0))


def gaussians(*, n_samples: int, variance: float, random_state: int) -> Generated:
    """Two Gaussian classes with means (0, 0) (label -1) and (2, 2) (label +1) and
    covariance ``variance``·I, half the samples each: the artificial set of Li, Chen and
    Tang (defaults: 150 per class, variance 0.5)."""
    rng = np.random.default_rng(random_state)
    sizes = _class_sizes(n_samples)
    X = np.vstack(
        [
            rng.normal(loc=mean, scale=np.sqrt(variance), size=(size, 2))
            for mean, size in zip(GAUSSIAN_MEANS, sizes, strict=True)
        ]
    )
    y = np.repeat([-1, 1], sizes)
    return _shuffled(rng, X, y)


def xor(*, n_samples: int, random_state: int) -> Generated:
    """Continuous XOR: points uniform on [-1, 1]², label sign(x1·x2) (+1 on the axes)."""
    rng = np.random.default_rng(random_state)
    X = rng.uniform(-1.0, 1.0, size=(n_samples, 2))
    y = np.where(X[:, 0] * X[:, 1] >= 0, 1, -1)
    return X, y


RING_INNER_RADIUS, RING_ANNULUS = 1.0, (1.2, 2.0)


def ring(*, n_samples: int, noise: float, random_state: int) -> Generated:
    """A disc inside a ring (this project's design): label +1 uniform on the unit disc,
    label -1 uniform on the annulus 1.2 ≤ r ≤ 2, both blurred by isotropic Gaussian noise
    of standard deviation ``noise``. The boundary is a circle (r ≈ 1.1): no linear rule
    beats the majority class, a local or Gaussian-kernel classifier nearly reaches the
    noise floor."""
    rng = np.random.default_rng(random_state)
    n_inner, n_outer = _class_sizes(n_samples)
    lo, hi = RING_ANNULUS
    radius = np.concatenate(
        [
            RING_INNER_RADIUS * np.sqrt(rng.uniform(0.0, 1.0, n_inner)),  # uniform in area
            np.sqrt(rng.uniform(lo**2, hi**2, n_outer)),
        ]
    )
    angle = rng.uniform(0.0, 2.0 * np.pi, n_samples)
    X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    X += rng.normal(scale=noise, size=X.shape)
    y = np.repeat([1, -1], [n_inner, n_outer])
    return _shuffled(rng, X, y)


#: Blob centres of :func:`lpl_synthetic`: three per class, alternating along x1, so the
#: class boundary is a wave (curved, crossing the x1 axis twice), inside roughly [-3, 3]².
LPL_SYNTHETIC_CENTERS = {
    1: ((-2.0, -1.0), (0.0, 1.5), (2.0, -1.0)),
    -1: ((-2.0, 1.5), (0.0, -1.0), (2.0, 1.5)),
}


def lpl_synthetic(*, n_samples: int, spread: float, random_state: int) -> Generated:
    """A 2-D two-class set for Tsuji et al.'s Fig. 3 and Fig. 4 (this project's design:
    the paper shows its synthetic set only as a picture and does not define it).

    Each class is an equal-weight mixture of three isotropic Gaussian blobs of standard
    deviation ``spread``: label +1 around (-2, -1), (0, 1.5), (2, -1) (an arch) and label
    -1 around (-2, 1.5), (0, -1), (2, 1.5) (a V). Neighbouring blobs of different classes
    are 2 to 2.5 apart, so with the registry's ``spread`` 0.6 the classes overlap (Bayes
    error about 8 %, by Monte Carlo with the true densities) and the boundary is a wave. Half the points per class (the extra one to +1);
    the blob of every point is drawn uniformly, so any ``n_samples`` >= 2 works.
    """
    return _blob_mixture(LPL_SYNTHETIC_CENTERS, n_samples, spread, random_state)


# -- Shin and Cho's artificial problems (NPPS, Pattern Recognition Letters 2004, Figs. 5-7)
# The paper only draws them (they come from Shin and Cho, PAKDD 2003) and gives no
# formulas: the three generators below are this project's designs after the figures and
# the reported training sizes and test errors (Table 2: 600 / 500 / 1000 training
# patterns, about 10 %, 13 % and 4 % test error). Each draws ``n_samples`` i.i.d. points;
# a spec takes the paper's training count and a test set from one draw with a hold-out
# split (e.g. 750 points, train_size 0.8 -> 600 + 150).

#: Centres of the four blobs of :func:`npps_xor`: label +1 on the diagonal quadrants.
NPPS_XOR_CENTERS = {1: ((1.0, 1.0), (-1.0, -1.0)), -1: ((-1.0, 1.0), (1.0, -1.0))}


def npps_xor(*, n_samples: int, spread: float, random_state: int) -> Generated:
    """Continuous XOR (our design of Shin and Cho's Fig. 5): four isotropic Gaussian blobs
    of standard deviation ``spread`` at (±1, ±1), label +1 around (1, 1) and (-1, -1),
    label -1 around (-1, 1) and (1, -1); half the points per class, the blob of each
    point uniform. The Bayes rule is sign(x1·x2); its error is 2p(1-p) with
    p = Φ(-1/spread) (9.1 % at the registry's spread 0.6, near the paper's 9.67 %)."""
    return _blob_mixture(NPPS_XOR_CENTERS, n_samples, spread, random_state)


def npps_sine(*, n_samples: int, noise: float, random_state: int) -> Generated:
    """Sine function (our design of Shin and Cho's Fig. 6): points uniform on
    [0, 2π] x [-2, 2], label +1 above the curve x2 = sin(x1) and -1 below it (equal areas,
    so the classes are about balanced), then both coordinates blurred by Gaussian noise of
    standard deviation ``noise``: the classes overlap in a band along the sine curve."""
    rng = np.random.default_rng(random_state)
    X = np.column_stack([rng.uniform(0.0, 2.0 * np.pi, n_samples), rng.uniform(-2.0, 2.0, n_samples)])
    y = np.where(X[:, 1] > np.sin(X[:, 0]), 1, -1)
    X = X + rng.normal(scale=noise, size=X.shape)
    return X, y


def npps_checkerboard(*, n_samples: int, cells: int, random_state: int) -> Generated:
    """``cells`` x ``cells`` checkerboard (our design of Shin and Cho's Fig. 7, 4 x 4):
    points uniform on [0, cells]², label +1 where floor(x1) + floor(x2) is even and -1
    where it is odd. Noise-free: the only errors are where the boundary is learned
    imperfectly (the paper reports about 4 % with 1000 training points)."""
    rng = np.random.default_rng(random_state)
    X = rng.uniform(0.0, float(cells), size=(n_samples, 2))
    y = np.where((np.floor(X[:, 0]) + np.floor(X[:, 1])) % 2 == 0, 1, -1)
    return X, y


def npps_overlap(*, n_samples: int, separation: float, random_state: int) -> Generated:
    """Two unit-variance isotropic Gaussian classes in 2-D, label -1 around (0, 0) and +1
    around (``separation``, 0), half the points each (this project's design for Shin and
    Cho's Fig. 3). Moving the classes closer at fixed ``n_samples`` (M) enlarges the
    overlap region, i.e. the number v of patterns near the decision boundary x1 =
    separation / 2, which fast NPPS's cost should follow (O(vM)) and naive NPPS's should
    not (O(M²))."""
    rng = np.random.default_rng(random_state)
    sizes = _class_sizes(n_samples)
    X = np.vstack([
        rng.normal(size=(sizes[0], 2)),
        rng.normal(size=(sizes[1], 2)) + np.array([separation, 0.0]),
    ])
    y = np.repeat([-1, 1], sizes)
    return _shuffled(rng, X, y)


def yang_toy(*, n_samples: int, level: float, noise: float, random_state: int) -> Generated:
    """Regression targets, not classes: x uniform on [0, 1] (one feature), y = level +
    noise·ε, ε ~ N(0, 1). Yang, King, Lyu's toy set (Fig. 1: level 1, noise 0.005; the
    first half of the rows trains, the second half tests)."""
    rng = np.random.default_rng(random_state)
    X = rng.uniform(0.0, 1.0, size=(n_samples, 1))
    return X, level + noise * rng.standard_normal(n_samples)


#: Generator name in the registry -> function.
GENERATORS: dict[str, Callable[..., Generated]] = {
    "moons": moons,
    "gaussians": gaussians,
    "xor": xor,
    "ring": ring,
    "lpl_synthetic": lpl_synthetic,
    "npps_xor": npps_xor,
    "npps_sine": npps_sine,
    "npps_checkerboard": npps_checkerboard,
    "npps_overlap": npps_overlap,
    "yang_toy": yang_toy,
}


def generate(generator: str, params: Mapping, *, dataset: str) -> Generated:
    """Run ``generator`` with ``params`` after checking their names and basic types."""
    if generator not in GENERATORS:
        raise DataError(f"dataset '{dataset}': unknown generator {generator!r}")
    fn = GENERATORS[generator]
    accepted = set(inspect.signature(fn).parameters)
    unknown = sorted(set(params) - accepted)
    missing = sorted(accepted - set(params))
    if unknown or missing:
        problem = (
            f"unknown parameter(s) {unknown}" if unknown else f"missing parameter(s) {missing}"
        )
        raise DataError(f"dataset '{dataset}': {problem}; it takes {sorted(accepted)}")
    for key in ("n_samples", "random_state"):
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise DataError(f"dataset '{dataset}': {key} must be an integer, got {value!r}")
    if params["n_samples"] < 2:
        raise DataError(
            f"dataset '{dataset}': n_samples must be at least 2, got {params['n_samples']}"
        )
    for key in ("noise", "variance", "spread", "separation"):
        if key in params and not (isinstance(params[key], (int, float)) and params[key] >= 0):
            raise DataError(
                f"dataset '{dataset}': {key} must be a number >= 0, got {params[key]!r}"
            )
    if "cells" in params and not (
        isinstance(params["cells"], (int, np.integer)) and not isinstance(params["cells"], bool)
        and params["cells"] >= 2
    ):
        raise DataError(f"dataset '{dataset}': cells must be an integer >= 2, got {params['cells']!r}")
    return fn(**params)
