"""The graph Laplacian of the symmetrized k-nearest-neighbour graph (Belkin, Niyogi,
Sindhwani, "Manifold regularization", JMLR 2006): the graph term of LapRLS and PLapRLS
(:mod:`lkm.methods.manifold`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from lkm.numerics.kernels import heat_from_sq
from lkm.numerics.neighbors import k_smallest


def knn_laplacian(
    D: NDArray[np.float64], k: int, weights: str, t: float | None, normalized: bool
) -> sp.csr_matrix:
    """Return the graph Laplacian of the symmetrized k-nearest-neighbour graph.

    Belkin, Niyogi and Sindhwani's graph [1]_: each point is
    joined to its k nearest other points (ties by index); ``W = max(W, Wᵀ)`` (an edge
    when either end is among the other's k nearest); weights ``exp(-||x_i - x_j||²/4t)``
    (``"heat"``) or 1 (``"binary"``). The Laplacian is ``L = D - W`` (D the degree
    matrix) or, with ``normalized``, ``I - D^(-1/2) W D^(-1/2)`` (isolated points get a
    zero row).

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Squared distances between the points.
    k : int
        Neighbours per point (at most n - 1 are used).
    weights : {"heat", "binary"}
        Edge weights.
    t : float or None
        The heat weights' time (None: binary weights only).
    normalized : bool
        Whether to return the normalized Laplacian.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, n)
        The Laplacian L.

    References
    ----------
    .. [1] M. Belkin, P. Niyogi and V. Sindhwani, "Manifold regularization: a geometric
       framework for learning from labeled and unlabeled examples", Journal of Machine
       Learning Research 7, pp. 2399-2434, 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.graph_laplacian import knn_laplacian
    >>> D = np.array([[0.0, 1.0, 4.0], [1.0, 0.0, 1.0], [4.0, 1.0, 0.0]])
    >>> knn_laplacian(D, k=1, weights="binary", t=1.0, normalized=False).toarray()
    array([[ 1., -1.,  0.],
           [-1.,  2., -1.],
           [ 0., -1.,  1.]])
    """
    n = D.shape[0]
    k = min(k, n - 1)
    if k <= 0:
        return sp.csr_matrix((n, n))
    far = np.array(D, dtype=np.float64)
    np.fill_diagonal(far, np.inf)
    nearest = k_smallest(far, k)  # the package's one tie rule: equal distances by lower index
    rows = np.repeat(np.arange(n), k)
    cols = nearest.ravel()
    if weights == "heat":
        if t is None:
            raise ValueError("knn_laplacian: heat weights need the time t")
        values = heat_from_sq(far[rows, cols], t)
    else:
        values = np.ones(rows.size)
    W = sp.csr_matrix((values, (rows, cols)), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    degree = np.asarray(W.sum(axis=1)).ravel()
    L: sp.csr_matrix
    if not normalized:
        L = (sp.diags(degree) - W).tocsr()
        return L
    inv_root = np.zeros(n)
    np.divide(1.0, np.sqrt(degree), out=inv_root, where=degree > 0.0)
    S = sp.diags(inv_root)
    L = (sp.diags((degree > 0.0).astype(np.float64)) - S @ W @ S).tocsr()
    return L
