"""Seeded two-dimensional two-class generators (offline data for quick runs and figures).

Each generator takes keyword-only parameters, all of which the registry YAML supplies as
defaults (``params`` of the entry); the same parameters give the same arrays, bit for
bit, because every random draw comes from ``numpy.random.default_rng(random_state)`` (or
scikit-learn's seeded ``make_moons``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

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
    rng = np.random.default_rng(random_state)
    sizes = dict(zip((1, -1), _class_sizes(n_samples), strict=True))
    parts = []
    for label, centers in LPL_SYNTHETIC_CENTERS.items():
        blob = rng.integers(len(centers), size=sizes[label])
        parts.append(np.asarray(centers)[blob] + rng.normal(scale=spread, size=(sizes[label], 2)))
    X = np.vstack(parts)
    y = np.repeat([1, -1], [sizes[1], sizes[-1]])
    return _shuffled(rng, X, y)


#: Generator name in the registry -> function.
GENERATORS: dict[str, Callable[..., Generated]] = {
    "moons": moons,
    "gaussians": gaussians,
    "xor": xor,
    "ring": ring,
    "lpl_synthetic": lpl_synthetic,
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
    for key in ("noise", "variance", "spread"):
        if key in params and not (isinstance(params[key], (int, float)) and params[key] >= 0):
            raise DataError(
                f"dataset '{dataset}': {key} must be a number >= 0, got {params[key]!r}"
            )
    return fn(**params)
