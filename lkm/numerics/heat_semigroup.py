"""The heat kernel's semigroup algebra behind Yang, King and Lyu's penalty ``K - 2K' + K''``.

With the *normalized* heat kernel ``K_t = c_t k_t``, ``c_s = (4πs)^(-d/2)``,
``k_s(x, y) = exp(-||x - y||²/4s)``, the semigroup property ``k_t * k_s ∝ k_{t+s}`` gives
``K' = K_{2t}``, ``K'' = K_{3t}`` (Yang et al., eq. (16)), so

    K - 2K' + K'' = c_t [k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}]     (c_{2t}/c_t = 2^(-d/2)).

In unit-diagonal coefficients the penalty is ``(γ/c_t) aᵀ B_t a`` with the bracket
``B_t = k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}`` (:func:`penalty_bracket`); the weights
2^(-d/2), 3^(-d/2) (:func:`semigroup_weights`) and γ/c_t (:func:`normalized_gamma`) are
formed in logs, and ``E = k_t - B_t`` is applied without being formed
(:func:`bracket_correction_product`). The estimators are
:mod:`lkm.methods.manifold`'s PRLS and PLapRLS.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from lkm.errors import NumericalError
from lkm.numerics.kernels import exponent_scale, heat_from_sq, times_scale


def semigroup_weights(d: int) -> tuple[float, float]:
    """Return ``(2^(-d/2), 3^(-d/2))``, the weights of k_{2t} and k_{3t} in the bracket.

    The bracket is ``k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}`` (Yang et al., eq. (16),
    divided by the heat kernel's prefactor). Computed in logs; 0.0 where they underflow,
    e.g. 3^(-d/2) for d > 1290.

    Parameters
    ----------
    d : int
        The number of features.

    Returns
    -------
    w2 : float
        2^(-d/2).
    w3 : float
        3^(-d/2).

    Examples
    --------
    >>> from lkm.numerics.heat_semigroup import semigroup_weights
    >>> semigroup_weights(2)
    (0.5, 0.3333333333333333)
    >>> semigroup_weights(4000)
    (0.0, 0.0)
    """
    return math.exp(-0.5 * d * math.log(2.0)), math.exp(-0.5 * d * math.log(3.0))


def normalized_gamma(gamma: float, d: int, t: float) -> float:
    """Return ``gamma / c_t`` with ``c_t = (4πt)^(-d/2)``, formed in logs.

    The unit-diagonal penalty weight equal to ``gamma`` on the normalized heat kernel's
    penalty (module description, ``unit_diagonal=False``).

    Parameters
    ----------
    gamma : float
        The weight on the normalized heat kernel's penalty (≥ 0).
    d : int
        The number of features.
    t : float
        The heat kernel's time.

    Returns
    -------
    float
        ``gamma / c_t`` (0.0 for gamma = 0).

    Raises
    ------
    NumericalError
        Naming d and t, when the value overflows float64 (high dimension).

    Examples
    --------
    >>> from lkm.numerics.heat_semigroup import normalized_gamma
    >>> round(normalized_gamma(0.01, d=2, t=1.0), 6)
    0.125664
    """
    if gamma == 0.0:
        return 0.0
    log_value = math.log(gamma) + 0.5 * d * math.log(4.0 * math.pi * t)
    if log_value > math.log(np.finfo(np.float64).max):
        raise NumericalError(
            f"normalized heat kernel: gamma/(4*pi*t)^(-d/2) overflows float64 for d={d}, t={t} "
            f"(the prefactor is 10^{-0.5 * d * math.log10(4.0 * math.pi * t):.0f}); use unit_diagonal=True, "
            "where gamma multiplies the same penalty in units of the prefactor"
        )
    return math.exp(log_value)


def penalty_bracket(
    D: NDArray[np.float64], t: float, d: int, k_t: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """Return the penalty bracket ``B_t = k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}``.

    The penalty ``K - 2K' + K''`` of Yang et al. [1]_ (eqs. (9), (16)) for the normalized heat
    kernel, divided by its prefactor c_t (see the module description), from squared
    distances.

    Parameters
    ----------
    D : ndarray of shape (n, m)
        Squared distances.
    t : float
        The heat kernel's time t of k_t = ``exp(-D/4t)``.
    d : int
        The number of features (the semigroup weights depend on it).
    k_t : ndarray of shape (n, m) or None, default=None
        ``exp(-D/4t)`` if already computed (it is copied, not modified).

    Returns
    -------
    ndarray of shape (n, m)
        The bracket B_t.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.heat_semigroup import penalty_bracket
    >>> penalty_bracket(np.array([[0.0, 1.0], [1.0, 0.0]]), t=1.0, d=2).round(4)
    array([[0.3333, 0.203 ],
           [0.203 , 0.3333]])
    """
    w2, w3 = semigroup_weights(d)
    B = heat_from_sq(D, t) if k_t is None else k_t.copy()
    if w2 > 0.0:
        B -= (2.0 * w2) * heat_from_sq(D, 2.0 * t)
    if w3 > 0.0:
        B += w3 * heat_from_sq(D, 3.0 * t)
    return B


def bracket_correction_product(
    D: NDArray[np.float64], t: float, d: int, a: NDArray[np.float64], block: int = 256
) -> NDArray[np.float64]:
    """Return ``E a`` with ``E = k_t - B_t = 2·2^(-d/2) k_{2t} - 3^(-d/2) k_{3t}``.

    The part of Yang, King and Lyu's penalty bracket [1]_ (eqs. (9), (16); module
    description) that the semiparametric route drops, applied to a without forming E:
    row blocks of ``k_{6t} = exp(-D/24t)``, with ``k_{3t} = k_{6t}²`` and
    ``k_{2t} = k_{6t}³`` (one exponential per entry).

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Squared distances between the expansion points.
    t : float
        The heat kernel's time.
    d : int
        The number of features.
    a : ndarray of shape (n, k)
        Coefficients.
    block : int, default=256
        Rows per block.

    Returns
    -------
    ndarray of shape (n, k)
        ``E a``.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.heat_semigroup import bracket_correction_product, penalty_bracket
    >>> D = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> a = np.array([[1.0], [-2.0]])
    >>> E = np.exp(-D / 4.0) - penalty_bracket(D, t=1.0, d=2)
    >>> bool(np.allclose(bracket_correction_product(D, 1.0, 2, a), E @ a))
    True
    """
    w2, w3 = semigroup_weights(d)
    out = np.zeros((D.shape[0], a.shape[1]))
    if w2 == 0.0 and w3 == 0.0:
        return out
    rows = min(block, D.shape[0])
    k6, k3 = np.empty((rows, D.shape[1])), np.empty((rows, D.shape[1]))  # reused: no allocation per block
    for start in range(0, D.shape[0], rows):
        m = min(rows, D.shape[0] - start)
        k2_block, k3_block = k6[:m], k3[:m]
        times_scale(D[start:start + m], exponent_scale(24.0 * t), negate=True, out=k2_block)
        np.exp(k2_block, out=k2_block)  # k_{6t}
        np.multiply(k2_block, k2_block, out=k3_block)  # k_{3t}
        k2_block *= k3_block  # k_{2t}
        out[start:start + m] = (2.0 * w2) * (k2_block @ a) - w3 * (k3_block @ a)
    return out
