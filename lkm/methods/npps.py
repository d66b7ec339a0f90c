"""Neighborhood property based pattern selection (NPPS), Shin and Cho, Sec. 2 and Fig. 4.

NPPS keeps, ahead of SVM training, only the patterns likely to lie near the decision
boundary. With ``kNN(x)`` the k nearest *other* training patterns of x (Euclidean, in
input space, which Sec. 3 justifies: Theorem 1 shows the RBF mapping preserves k-NN
sets) and ``P_j = k_j / k`` the proportion of class j among them, J classes:

* ``Neighbors_Entropy(x, k) = Σ_j P_j · log_J(1 / P_j)``  (Sec. 2, first property),
* ``Neighbors_Match(x, k) = |{x' ∈ kNN(x) : label(x') = label(x)}| / k``  (second),
* [Selecting Condition]  ``Neighbors_Entropy > 0`` and ``Neighbors_Match ≥ β / J``,
* [Expanding Condition]  ``Neighbors_Entropy > 0``  (third property, fast NPPS).

*Naive* NPPS evaluates every pattern; *fast* NPPS (Fig. 4) evaluates a random initial
set and then only the neighbours of the patterns meeting the Expanding Condition,
each pattern at most once (see :func:`npps_select`).

:class:`NPPS` is the selection as an imbalanced-learn style sampler
(``fit_resample``); :class:`NPPSSVM` is the paper's pipeline, NPPS followed by a LIBSVM
C-SVM (:class:`~lkm.methods.svm.SVMClassifier`) on the SELECTED patterns (Table 2).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import BaseEstimator
from sklearn.utils import Tags, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from lkm.errors import ParameterClipped
from lkm.methods.base import (
    SCALE,
    SIGMA_CONSTRAINT,
    LocalKernelClassifier,
    check_feature_scale,
    densify,
)
from lkm.methods.svm import SVMClassifier
from lkm.numerics.kernels import DistanceCache
from lkm.numerics.neighbors import (
    APPROXIMATE,
    NEIGHBOR_BACKENDS,
    make_neighbors,
    pair_sq_dists,
    resolve_backend,
    upper_kth,
)
from lkm.numerics.threads import map_row_blocks

#: The text ``NPPSSVM.info_['fallback']`` holds when the SVM was trained on every pattern.
FALLBACK_ALL = "all patterns"
#: Entries of :class:`NPPSSVM`'s ``info_`` that depend on the run (wall times, cache use).
RUN_DEPENDENT_INFO = ("selection_seconds", "svm_seconds", "selection_cached")

_NPPS_CONSTRAINTS: dict[str, list[Any]] = {
    "k": [Interval(Integral, 1, None, closed="left")],
    "beta": [Interval(Real, 0, 1, closed="right")],  # 0 < β ≤ 1 (Sec. 2)
    "method": [StrOptions({"fast", "naive"})],
    "initial_fraction": [Interval(Real, 0, 1, closed="right")],
    "neighbors": [StrOptions(set(NEIGHBOR_BACKENDS))],
    "n_trees": [Interval(Integral, 1, None, closed="left")],
    "search_k": [Interval(Integral, -1, None, closed="left")],
    "random_state": ["random_state"],
    "ef": [Interval(Integral, 1, None, closed="left")],
}


# ---------------------------------------------------------------- the two measures


def neighbor_class_counts(neighbor_labels: np.ndarray, n_classes: int) -> np.ndarray:
    """``k_j`` of Sec. 2: per row, how many of its k neighbours belong to class j.

    ``neighbor_labels``: (m, k) class indices in ``[0, n_classes)``; returns (m, n_classes).
    """
    m = neighbor_labels.shape[0]
    flat = (np.arange(m)[:, None] * n_classes + neighbor_labels).ravel()
    return np.bincount(flat, minlength=m * n_classes).reshape(m, n_classes)


def neighbors_entropy(counts: np.ndarray) -> np.ndarray:
    """``Neighbors_Entropy(x, k) = Σ_j P_j log_J(1/P_j)``, P_j = k_j / k (Sec. 2).

    ``counts``: (m, J) neighbour class counts (:func:`neighbor_class_counts`); 0·log 0 = 0.
    The value is exactly 0 when all k neighbours share one class and lies in (0, 1]
    otherwise (1 when the k neighbours are spread evenly over the J classes).
    """
    counts = np.asarray(counts, dtype=np.float64)
    J = counts.shape[1]
    if J < 2:
        return np.zeros(counts.shape[0])
    P = counts / counts.sum(axis=1, keepdims=True)
    logs = np.log(P, out=np.zeros_like(P), where=P > 0)
    entropy: NDArray[np.float64] = np.maximum(-(P * logs).sum(axis=1) / np.log(J), 0.0)
    return entropy


def neighbors_match(counts: np.ndarray, own_labels: np.ndarray) -> np.ndarray:
    """``Neighbors_Match(x, k)``: fraction of the k neighbours labelled like x (Sec. 2)."""
    counts = np.asarray(counts)
    own = counts[np.arange(counts.shape[0]), own_labels]
    match: NDArray[np.float64] = own / counts.sum(axis=1)
    return match


def _conditions(
    counts: np.ndarray, own_labels: np.ndarray, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """[Expanding Condition] and [Selecting Condition] masks, decided on the integer counts.

    Entropy > 0 exactly when the neighbours are not all of one class
    (``max_j k_j < k``); ``Neighbors_Match ≥ β/J`` is tested as ``k_own · J ≥ β · k`` so
    that boundary cases (e.g. k = 6, J = 3, β = 0.5) do not hinge on rounding.
    """
    k = counts.sum(axis=1)
    J = counts.shape[1]
    expand = counts.max(axis=1) < k
    own = counts[np.arange(counts.shape[0]), own_labels]
    select = expand & (own * J >= beta * k)
    return expand, select


# ---------------------------------------------------------------- the selection


#: Bytes of candidate distance matrix :func:`tie_ruled_neighbors` materializes at once.
CHUNK_BYTES = 8 * 2**20
#: Squared distances whose relative gap is at most this count as tied. Scaling integer
#: features to [-1, 1] (e.g. breast-cancer-wisconsin) leaves round-off of about 1e-15
#: between distances that are equal in the original integers; distinct integer
#: distances differ by far more.
TIE_RTOL = 1e-9


def _candidate_bound(value: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """The largest candidate value a pattern of the true list (or tied with its last
    member, up to :data:`TIE_RTOL`) can have, when ``value`` is the n-th smallest
    candidate value of the row and every value is within ``tol`` of the true one."""
    bound: NDArray[np.float64] = (value + 2 * tol) * (1 + 8 * TIE_RTOL) + 2 * tol
    return bound


class _TieRuledIndex:
    """The training patterns prepared once for many :func:`tie_ruled_neighbors` queries
    (fast NPPS queries once per round).

    Candidates are ranked by |x|² − 2 q·x + |q|² on a centred copy of X (distances do not
    change under a shift; smaller norms tighten the round-off bound) in float32, half the
    time of a float64 matrix product. The value's error is below
    ``(p + 10) u (|q|² + |x|²)`` (u the unit round-off: input rounding, any summation
    order of the p products, the two additions); twice that is the tolerance, so no
    pattern of the true list is lost. Data too large for float32 use float64.
    """

    def __init__(self, X: np.ndarray) -> None:
        self.X = X
        n, p = X.shape
        C = X - X.mean(axis=0)
        norms = np.einsum("ij,ij->i", C, C)
        dtype = np.float32 if n == 0 or norms.max() < 1e30 else np.float64
        self.err_coef = 2 * (p + 10) * float(np.finfo(dtype).eps) / 2
        self.norms = norms
        self.norm_max = norms.max() if n else 0.0
        self.C = C.astype(dtype)
        self.minus_2ct = np.multiply(self.C.T, -2)  # (p, n): each chunk's product is one gemm
        self.norms_cast = norms.astype(dtype)

    def query(self, rows: np.ndarray, n_neighbors: int, n_jobs: int | None = None) -> np.ndarray:
        """See :func:`tie_ruled_neighbors`; chunks of rows on ``n_jobs`` threads."""
        X = self.X
        rows = np.asarray(rows, dtype=np.intp)
        n, m = X.shape[0], rows.size
        if not 1 <= n_neighbors <= n:
            raise ValueError(f"n_neighbors must be in [1, {n}], got {n_neighbors}")
        out = np.empty((m, n_neighbors), dtype=np.intp)
        step = max(1, CHUNK_BYTES // (self.C.itemsize * n))  # chunks depend on n only, not n_jobs

        def chunk(part: slice) -> None:
            start, q_rows = part.start, rows[part]
            mq = q_rows.size
            approx = self.C[q_rows] @ self.minus_2ct
            approx += self.norms_cast[None, :]
            approx += self.norms_cast[q_rows, None]
            tol = self.err_coef * (self.norms[q_rows] + self.norm_max)
            upper = upper_kth(approx, n_neighbors)  # ≥ the row's n-th smallest value
            r, j = np.nonzero(approx <= _candidate_bound(upper.astype(np.float64), tol)[:, None])
            v = approx[r, j].astype(np.float64)
            by_value = np.lexsort((v, r))  # r was sorted: rows stay contiguous
            r, j, v = r[by_value], j[by_value], v[by_value]
            first = np.searchsorted(r, np.arange(mq))
            keep = v <= _candidate_bound(v[first + n_neighbors - 1], tol)[r]
            r, j, v = r[keep], j[keep], v[keep]
            # Candidates whose values are further apart than the round-off (and the tie
            # tolerance) allows are in their true order already; only runs of close
            # values need exact distances, and ties can only form inside a run.
            run_start = np.ones(r.size, dtype=bool)
            gap = 4 * tol[r[1:]] + 4 * TIE_RTOL * np.abs(v[1:])
            run_start[1:] = (r[1:] != r[:-1]) | (v[1:] - v[:-1] > gap)
            run = np.cumsum(run_start)
            alone = run_start & np.append(run_start[1:], True)
            d = np.zeros(r.size)
            close = np.flatnonzero(~alone)
            d[close] = pair_sq_dists(X[q_rows], X, r[close], j[close])
            order = np.lexsort((j, d, run))
            r, j, d, run = r[order], j[order], d[order], run[order]
            new_value = np.ones(r.size, dtype=bool)  # a new (run, distance) group starts here
            new_value[1:] = (run[1:] != run[:-1]) | (d[1:] - d[:-1] > TIE_RTOL * d[1:])
            group = np.cumsum(new_value)
            order = np.lexsort((j, group))  # groups rise with the row: rows stay contiguous
            r, j = r[order], j[order]
            first = np.searchsorted(r, np.arange(mq))
            out[start : start + mq] = j[first[:, None] + np.arange(n_neighbors)]
        map_row_blocks(chunk, m, step, n_jobs)
        return out


def tie_ruled_neighbors(X: np.ndarray, rows: np.ndarray, n_neighbors: int) -> np.ndarray:
    """Indices (m, n_neighbors) of the nearest patterns of ``X[rows]`` (the pattern itself
    included), ordered by squared Euclidean distance, **ties broken by the lower training
    index** (the rule NPPS's neighbour lists follow; Sec. 2 leaves ties open).

    Candidates come from the fast form |x|² − 2 q·x + |q|² (one matrix product per chunk of
    rows, see :class:`_TieRuledIndex`): every pattern within that form's error bound of
    the n-th smallest value is kept, so no pattern of the true list is lost to round-off.
    The candidates' distances are then recomputed from coordinate differences
    (:func:`lkm.numerics.neighbors.pair_sq_dists`), distances within a relative :data:`TIE_RTOL` of each other
    are treated as one value, and the list is read off in (distance, index) order.
    Duplicated patterns, and integer patterns at equal distance after scaling, are
    therefore ordered by index, never by round-off.
    """
    return _TieRuledIndex(np.asarray(X, dtype=np.float64)).query(rows, n_neighbors)


#: ``search(rows, n) -> (m, n)`` neighbour indices of ``X[rows]`` (:func:`_make_search`).
NeighborSearch = Callable[[NDArray[np.intp], int], NDArray[np.intp]]


def _make_search(neighbors: str, X: np.ndarray, n_trees: int, search_k: int, random_state: Any, ef: int = 50,
                 n_jobs: int | None = None) -> NeighborSearch:
    """``search(rows, n) -> (m, n)`` neighbour indices of ``X[rows]`` (self included):
    exact with the tie rule (:func:`tie_ruled_neighbors`, chunks of rows on ``n_jobs``
    threads) or annoy's or hnswlib's candidates ranked by distance (then index)."""
    neighbors = resolve_backend(neighbors)  # "approximate": hnswlib where installed, else annoy
    if neighbors == "exact":
        index = _TieRuledIndex(np.asarray(X, dtype=np.float64))
        return lambda rows, n: index.query(rows, n, n_jobs)
    if neighbors == "hnswlib":
        backend = make_neighbors("hnswlib", ef=ef, random_state=random_state).fit(X)
    else:
        backend = make_neighbors("annoy", n_trees=n_trees, search_k=search_k, random_state=random_state).fit(X)
    return lambda rows, n: backend.kneighbors(X[rows], n)[1]


def _neighbors_of(search: NeighborSearch, rows: NDArray[np.intp], k: int) -> NDArray[np.intp]:
    """Indices (m, k) of the k nearest other patterns of ``X[rows]``, in one batched query.

    Queries k + 1 neighbours and drops the pattern itself (or, when k + 1 of its
    duplicates rank before it — lower indices at distance 0 — the last one): a pattern is
    not its own neighbour; its duplicates are. Naive and fast NPPS both go through here,
    so fast NPPS with an initial set of all patterns issues the very query naive NPPS does.
    """
    idx = search(rows, k + 1)
    drop = idx == rows[:, None]
    no_self = ~drop.any(axis=1)
    drop[no_self, -1] = True  # now exactly one entry per row is dropped
    others: NDArray[np.intp] = idx[~drop].reshape(rows.size, k)
    return others


def npps_select(
    X: np.ndarray,
    y_index: np.ndarray,
    n_classes: int,
    *,
    k: int = 5,
    beta: float = 0.5,
    method: str = "fast",
    initial_fraction: float = 0.1,
    neighbors: str = "exact",
    n_trees: int = 10,
    search_k: int = -1,
    random_state: Any = None,
    ef: int = 50,
    n_jobs: int | None = None,
) -> dict[str, Any]:
    """Run NPPS on validated data; ``y_index`` holds class indices in ``[0, n_classes)``.

    ``method="naive"``: one batched k-NN query for all M patterns; select those meeting
    the Selecting Condition.

    Neighbour lists (``neighbors="exact"``) follow one explicit tie rule: by squared
    distance, equal distances (up to :data:`TIE_RTOL`) by the lower training index
    (:func:`tie_ruled_neighbors`), so a selection never depends on round-off.

    ``method="fast"``, Fig. 4, with ``S_o``/``S_x`` the expanded/non-expanded patterns:

    [0] ``D_e⁰`` ← ``round(initial_fraction · M)`` (at least 1) patterns drawn without
        replacement (``random_state``); ``S_o = S_x = S = ∅``.
    repeat (while ``D_oⁱ ≠ ∅``), one batched k-NN query on ``D_eⁱ`` per round:
    [1] ``D_oⁱ`` ← {x ∈ D_eⁱ : Neighbors_Entropy(x, k) > 0}, ``D_xⁱ`` ← D_eⁱ − D_oⁱ;
    [2] ``D_sⁱ`` ← {x ∈ D_oⁱ : Neighbors_Match(x, k) ≥ β/J};
    [3] ``S_o ∪= D_oⁱ``, ``S_x ∪= D_xⁱ``, ``S ∪= D_sⁱ``;
    [4] ``D_eⁱ⁺¹`` ← ∪_{x ∈ D_oⁱ} kNN(x) − (S_o ∪ S_x);
    return S.

    Each pattern is thus evaluated (and expanded) at most once; with
    ``initial_fraction=1`` the first round evaluates everything and S is naive NPPS's set.
    An exact query compares a pattern with all M (one matrix product), so the selection
    costs O(v·M·p) for v evaluated patterns, the paper's O(vM): quadratic in M where the
    evaluated share stays constant (MNIST even/odd evaluates 85-97 %). ``"annoy"``
    queries a random-projection forest instead (O(M log M) to build, a bounded search per
    query), at a recall below 1; ``"hnswlib"`` a navigable small-world graph (``ef``
    candidates per query), at a recall near 1.
    k is clipped to M − 1 (the other patterns available).

    Returns a dict: ``indices`` (sorted selected indices), ``evaluated`` (boolean mask),
    ``entropy``/``match`` (per pattern, NaN where not evaluated), ``k`` (effective),
    ``k_clipped``, ``n_rounds``, ``seconds``.
    """
    t0 = time.perf_counter()
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"NPPS needs at least 2 patterns; got {n}")
    k_eff = min(int(k), n - 1)
    rng = check_random_state(random_state)
    if method == "fast":
        n_init = min(n, max(1, int(round(float(initial_fraction) * n))))
        pending = np.sort(rng.choice(n, size=n_init, replace=False))
    else:
        pending = np.arange(n)
    search = _make_search(neighbors, X, n_trees, search_k, rng, ef, n_jobs)

    evaluated = np.zeros(n, dtype=bool)  # S_o ∪ S_x
    selected = np.zeros(n, dtype=bool)  # S
    entropy = np.full(n, np.nan)
    match = np.full(n, np.nan)
    n_rounds = 0
    while pending.size:  # D_e^i
        n_rounds += 1
        idx = _neighbors_of(search, pending, k_eff)
        counts = neighbor_class_counts(y_index[idx], n_classes)
        own = y_index[pending]
        expand, select = _conditions(counts, own, beta)  # [1] and [2]
        entropy[pending] = neighbors_entropy(counts)
        match[pending] = neighbors_match(counts, own)
        evaluated[pending] = True  # [3]
        selected[pending[select]] = True
        if method == "naive" or not expand.any():  # D_o^i = ∅ ends the loop
            break
        candidates = np.unique(idx[expand])  # [4]
        pending = candidates[~evaluated[candidates]]
    return {
        "indices": np.flatnonzero(selected),
        "evaluated": evaluated,
        "entropy": entropy,
        "match": match,
        "k": k_eff,
        "k_clipped": k_eff < int(k),
        "n_rounds": n_rounds,
        "seconds": time.perf_counter() - t0,
    }


def _selection_info(result: dict[str, Any], n: int, k_requested: int, method: str, neighbors: str,
                    stacklevel: int = 3) -> dict[str, Any]:
    """``info_`` of a fit from :func:`npps_select`'s result; warns (UserWarning, once per
    fit) when k was clipped to the M − 1 other patterns, with the same ``note`` (at the
    fit's caller: ``stacklevel`` 4 from NPPSSVM.fit, under the base's sample_weight check)."""
    info: dict[str, Any] = {
        "n_train": n,
        "n_selected": int(result["indices"].size),
        "n_evaluated": int(result["evaluated"].sum()),
        "n_rounds": result["n_rounds"],
        "selection_seconds": result["seconds"],
        "k": result["k"],
        "k_requested": int(k_requested),
        "k_clipped": result["k_clipped"],
        "method": method,
        "neighbors": neighbors,
    }
    if neighbors == APPROXIMATE:  # which index ran
        info["neighbors_backend"] = resolve_backend(neighbors)
    if result["k_clipped"]:
        info["note"] = (
            f"NPPS: k={k_requested} > {n - 1} other training patterns; "
            f"using k={result['k']} (clipped)"
        )
        warnings.warn(info["note"], ParameterClipped, stacklevel=stacklevel)
    return info


def select_rows(data: Any, indices: np.ndarray, float_array: bool = False) -> Any:
    """Rows ``indices`` of ``data`` in its own type: ``.iloc`` for pandas (index labels and
    columns kept), CSR rows for scipy sparse, else an array (float64 with ``float_array``)."""
    if hasattr(data, "iloc"):
        return data.iloc[indices]
    if sp.issparse(data):
        return sp.csr_matrix(data)[indices]  # type: ignore[call-overload]  # scipy-stubs: issparse narrows to SparseABC, which csr_matrix's overloads do not take
    array = np.asarray(data, dtype=np.float64) if float_array else np.asarray(data)
    return array[indices]


class NPPS(BaseEstimator):  # type: ignore[misc]  # scikit-learn has no type stubs: its classes are Any
    """NPPS pattern selection (Shin and Cho, Sec. 2, Fig. 4) as a sampler.

    Keeps, ahead of SVM training, only the patterns likely to lie near the decision
    boundary (Shin and Cho [1]_): those whose k nearest other patterns are of mixed
    classes (Neighbors_Entropy > 0) and not mostly of another class (Neighbors_Match ≥
    β/J). Follows imbalanced-learn's sampler convention: ``fit_resample(X, y)`` returns
    the selected ``(X[sample_indices_], y[sample_indices_])``.

    Parameters
    ----------
    k : int, default=5
        Neighbours per pattern (clipped to M − 1, the other patterns available).
    beta : float, default=0.5
        β of the Selecting Condition, 0 < β ≤ 1 (the paper uses 0.5).
    method : {"fast", "naive"}, default="fast"
        ``"fast"``: Fig. 4, evaluating a random initial set and then only the neighbours
        of the patterns meeting the Expanding Condition; ``"naive"``: every pattern.
    initial_fraction : float, default=0.1
        Share of patterns drawn at random as fast NPPS's first evaluation set (1 makes
        fast NPPS naive, Sec. 4).
    neighbors : {"exact", "annoy", "hnswlib", "approximate"}, default="exact"
        Exact neighbour lists (by squared distance, equal distances by the lower
        training index), or annoy's or hnswlib's approximate candidates (``lkm[fast]``);
        ``"approximate"`` is hnswlib where installed, else annoy (``info_["neighbors_backend"]``
        says which ran).
    n_trees : int, default=10
        annoy: trees of the forest.
    search_k : int, default=-1
        annoy: nodes inspected per query (-1: annoy's default).
    random_state : int, RandomState instance or None, default=None
        Seeds fast NPPS's initial set and the approximate index.
    ef : int, default=50
        hnswlib: candidates per query.
    n_jobs : int or None, default=None
        Threads (joblib; None is 1, -1 every core) of the exact neighbour search, in
        chunks of patterns that do not depend on ``n_jobs``, so the selection is
        identical at every value (MNIST even/odd, 12,000 patterns, naive, on a loaded
        two-core machine: 11 s at 1 thread, 9 s at 2).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    sample_indices_ : ndarray of shape (n_selected,)
        Sorted indices into X of the selected patterns.
    n_evaluated_ : int
        Patterns whose neighbourhood was evaluated (M for naive NPPS).
    neighbors_entropy_ : ndarray of shape (n_samples,)
        Neighbors_Entropy per pattern (NaN where not evaluated).
    neighbors_match_ : ndarray of shape (n_samples,)
        Neighbors_Match per pattern (NaN where not evaluated).
    info_ : dict
        ``n_train``, ``n_selected``, ``n_evaluated``, ``n_rounds``,
        ``selection_seconds``, ``k`` (effective), ``k_requested``, ``k_clipped``,
        ``method``, ``neighbors``, and a ``note`` when k was clipped (also given as a
        UserWarning).

    See Also
    --------
    NPPSSVM : NPPS followed by a LIBSVM C-SVM on the selection.

    References
    ----------
    .. [1] H. Shin, S. Cho, "Invariance of neighborhood relation under input space to
       feature space mapping", Pattern Recognition Letters, 2004, Sec. 2 and Fig. 4.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from lkm.methods import NPPS
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(axis=0)) / X.std(axis=0)
    >>> X_sel, y_sel = NPPS(method="naive").fit_resample(X, y)
    >>> X_sel.shape
    (76, 30)
    """

    _parameter_constraints: dict[str, list[Any]] = {**_NPPS_CONSTRAINTS, "n_jobs": [Integral, None]}

    def __init__(
        self,
        k: int = 5,
        beta: float = 0.5,
        method: str = "fast",
        initial_fraction: float = 0.1,
        neighbors: str = "exact",
        n_trees: int = 10,
        search_k: int = -1,
        random_state: Any = None,
        ef: int = 50,
        n_jobs: int | None = None,
    ) -> None:
        self.k = k
        self.beta = beta
        self.method = method
        self.initial_fraction = initial_fraction
        self.neighbors = neighbors
        self.n_trees = n_trees
        self.search_k = search_k
        self.random_state = random_state
        self.ef = ef
        self.n_jobs = n_jobs

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified once (:func:`densify`)
        return tags

    def fit(self, X: Any, y: Any) -> NPPS:
        """Select the patterns (the fitted attributes are listed in the class description).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training patterns (sparse input is densified once for the neighbour search).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        NPPS
            The fitted sampler.
        """
        self._validate_params()
        X, y = validate_data(self, densify(X), y, dtype=np.float64)
        check_feature_scale(X, type(self).__name__)
        check_classification_targets(y)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError("NPPS needs samples of at least two classes; got 1 class")
        result = npps_select(
            X, y_index, self.classes_.size, **{p: getattr(self, p) for p in _NPPS_CONSTRAINTS}, n_jobs=self.n_jobs
        )
        self.sample_indices_ = result["indices"]
        self.n_evaluated_ = int(result["evaluated"].sum())
        self.neighbors_entropy_ = result["entropy"]
        self.neighbors_match_ = result["match"]
        self.info_ = _selection_info(result, X.shape[0], self.k, self.method, self.neighbors)
        return self

    def fit_resample(self, X: Any, y: Any) -> tuple[Any, Any]:
        """Select the patterns and return them: the rows of X and y NPPS keeps.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training patterns.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        X_selected : array-like of shape (n_selected, n_features)
            The selected rows of X in their order, in the input's type
            (imbalanced-learn's convention): a pandas DataFrame keeps its columns, dtypes
            and the rows' index labels, a scipy sparse matrix stays sparse (CSR),
            anything else becomes a float64 array.
        y_selected : array-like of shape (n_selected,)
            The selected labels (a pandas Series stays one, anything else an array).
        """
        self.fit(X, y)
        return select_rows(X, self.sample_indices_, float_array=True), select_rows(y, self.sample_indices_)


class NPPSSVM(LocalKernelClassifier):
    """NPPS (Shin and Cho, Sec. 2, Fig. 4) followed by a Gaussian C-SVM on the selection.

    ``fit`` selects patterns as :class:`NPPS` does and trains
    :class:`~lkm.methods.SVMClassifier` (LIBSVM, ``C``, ``sigma``) on the SELECTED
    patterns, the pipeline of Shin and Cho [1]_ (Table 2); ``decision_function`` and
    ``predict`` are that SVM's. LIBSVM needs two classes, and a classifier must be able
    to predict every training class: when the selection is empty or lacks a class, the
    SVM is trained on all patterns and ``info_['fallback']`` is ``"all patterns"`` (else
    None), with the reason in ``info_['fallback_reason']``.

    With a cache and an integer seed (any seed for naive NPPS with exact neighbours),
    the selection is memoized per (X, y) and NPPS parameters, so a C/sigma sweep runs
    NPPS once and the SVM reuses the selected patterns' distances.

    Parameters
    ----------
    k : int, default=5
        Neighbours per pattern (clipped to M − 1, the other patterns available).
    beta : float, default=0.5
        β of the Selecting Condition, 0 < β ≤ 1 (the paper uses 0.5).
    method : {"fast", "naive"}, default="fast"
        ``"fast"``: Fig. 4, evaluating a random initial set and then only the neighbours
        of the patterns meeting the Expanding Condition; ``"naive"``: every pattern.
    initial_fraction : float, default=0.1
        Share of patterns drawn at random as fast NPPS's first evaluation set (1 makes
        fast NPPS naive, Sec. 4).
    neighbors : {"exact", "annoy", "hnswlib", "approximate"}, default="exact"
        Exact neighbour lists (by squared distance, equal distances by the lower
        training index), or annoy's or hnswlib's approximate candidates (``lkm[fast]``);
        ``"approximate"`` is hnswlib where installed, else annoy (``info_["neighbors_backend"]``
        says which ran).
    n_trees : int, default=10
        annoy: trees of the forest.
    search_k : int, default=-1
        annoy: nodes inspected per query (-1: annoy's default).
    random_state : int, RandomState instance or None, default=None
        Seeds fast NPPS's initial set and the approximate index.
    C : float, default=1.0
        The SVM's C.
    sigma : float or "scale", default="scale"
        The SVM's Gaussian width. Shin and Cho choose C and sigma per data set by
        validation and fix no value; ``"scale"`` (scikit-learn's ``gamma="scale"``
        width, :func:`lkm.methods.base.scaled_sigma`) is computed from all training
        patterns before the selection.
    ef : int, default=50
        hnswlib: candidates per query.
    n_jobs : int or None, default=None
        Threads (joblib; None is 1, -1 every core) of the exact neighbour search, in
        chunks of patterns that do not depend on ``n_jobs``, so the selection is
        identical at every value (MNIST even/odd, 12,000 patterns, naive, on a loaded
        two-core machine: 11 s at 1 thread, 9 s at 2).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    sigma_ : float
        The SVM's width in use.
    svm_ : SVMClassifier
        The SVM trained on the selection (or on every pattern, see above).
    sample_indices_ : ndarray of shape (n_selected,)
        Sorted indices into X of the selected patterns.
    n_evaluated_ : int
        Patterns whose neighbourhood was evaluated.
    svm_uses_cache_ : bool
        Whether the SVM's distances go through the cache.
    info_ : dict
        ``selection_seconds`` (the wall time the selection took when it was computed,
        so tables of NPPS cost stay right for every method of a sweep),
        ``selection_cached`` (whether this fit reused it), ``svm_seconds`` (LIBSVM fit
        only), ``n_train``, ``n_selected``, ``n_evaluated``, ``n_rounds``,
        ``n_support``, ``k`` (effective), ``k_requested``, ``k_clipped``, ``method``,
        ``neighbors``, ``fallback``, ``fallback_reason``, ``svm_route``, ``sigma``.

    See Also
    --------
    NPPS : The selection alone, as a sampler.
    lkm.methods.SVMClassifier : The SVM on every pattern.

    References
    ----------
    .. [1] H. Shin, S. Cho, "Invariance of neighborhood relation under input space to
       feature space mapping", Pattern Recognition Letters, 2004, Sec. 2, Fig. 4 and Table 2.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from lkm.methods import NPPSSVM
    >>> X, y = load_digits(n_class=2, return_X_y=True)
    >>> clf = NPPSSVM(k=5, method="naive", C=10.0).fit(X[::2], y[::2])
    >>> clf.info_["n_selected"] < clf.info_["n_train"]
    True
    >>> print(round(clf.score(X[1::2], y[1::2]), 3))
    1.0
    """

    sample_weight_refusal = (
        "NPPS's selection (Shin and Cho, Sec. 2) counts neighbour labels (Neighbors_Entropy, "
        "Neighbors_Match), which have no per-pattern weights"
    )

    #: The annoy and hnswlib settings are read only with those neighbours.
    conditional_params = {"n_trees": ("neighbors", ("annoy", APPROXIMATE)),
                          "search_k": ("neighbors", ("annoy", APPROXIMATE)),
                          "ef": ("neighbors", ("hnswlib", APPROXIMATE))}
    _parameter_constraints: dict[str, list[Any]] = {
        **_NPPS_CONSTRAINTS,
        "C": [Interval(Real, 0, None, closed="neither")],
        "sigma": SIGMA_CONSTRAINT,
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        k: int = 5,
        beta: float = 0.5,
        method: str = "fast",
        initial_fraction: float = 0.1,
        neighbors: str = "exact",
        n_trees: int = 10,
        search_k: int = -1,
        random_state: Any = None,
        C: float = 1.0,
        sigma: float | str = SCALE,
        ef: int = 50,
        n_jobs: int | None = None,
    ) -> None:
        self.k = k
        self.beta = beta
        self.method = method
        self.initial_fraction = initial_fraction
        self.neighbors = neighbors
        self.n_trees = n_trees
        self.search_k = search_k
        self.random_state = random_state
        self.C = C
        self.sigma = sigma
        self.ef = ef
        self.n_jobs = n_jobs

    def _selection_key(self) -> tuple[Any, ...] | None:
        """What identifies the selection in a cache; None when it is not reproducible."""
        deterministic = self.method == "naive" and self.neighbors == "exact"
        if not deterministic and not (
            isinstance(self.random_state, Integral) and not isinstance(self.random_state, bool)
        ):
            return None
        params = tuple(getattr(self, p) for p in _NPPS_CONSTRAINTS)
        return ("npps_selection", *params)

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> NPPSSVM:
        """Select the patterns with NPPS and train the SVM on them.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training patterns.
        y : array-like of shape (n_samples,)
            Class labels.
        cache : DistanceCache or None, default=None
            Memoizes the selection (with a reproducible seed) and the SVM's distances.

        Returns
        -------
        NPPSSVM
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y)
        n_classes = self.classes_.size
        params = {p: getattr(self, p) for p in _NPPS_CONSTRAINTS} | {"n_jobs": self.n_jobs}
        key = self._selection_key()  # without n_jobs: the selection does not depend on it
        cached = False
        if cache is None or key is None:
            result = npps_select(X, y_index, n_classes, **params)
            X_sel = X[result["indices"]]
        else:
            calls = []

            def compute() -> tuple[dict[str, Any], np.ndarray]:
                calls.append(1)
                res = npps_select(X, y_index, n_classes, **params)
                return res, X[res["indices"]]

            result, X_sel = cache.memo(key, compute, X, np.asarray(y))
            cached = not calls
        sel = result["indices"]
        present = np.unique(y_index[sel])
        fallback_reason = None
        if sel.size == 0:
            fallback_reason = "NPPS selected no pattern"
        elif present.size < n_classes:
            missing = [str(c) for c in np.delete(self.classes_, present)]
            fallback_reason = f"NPPS selection lacks class(es) {', '.join(missing)}"
        if fallback_reason is not None:
            X_svm, y_svm = X, y_index
        else:
            X_svm, y_svm = X_sel, y_index[sel]
        # The SVM's distances are worth caching only between arrays that recur: X itself,
        # or a memoized selection (a fresh X_sel would only fill the cache).
        self.svm_uses_cache_ = cache is not None and (fallback_reason is not None or key is not None)
        svm = SVMClassifier(C=self.C, sigma=self.sigma_)  # "scale": from all of X, not the selection
        t1 = time.perf_counter()
        svm.fit(X_svm, y_svm, cache=cache if self.svm_uses_cache_ else None)
        svm_seconds = time.perf_counter() - t1
        self.svm_ = svm
        self.sample_indices_ = sel
        self.n_evaluated_ = int(result["evaluated"].sum())
        info = _selection_info(result, X.shape[0], self.k, self.method, self.neighbors, stacklevel=4)
        info.update(
            selection_cached=cached,
            svm_seconds=svm_seconds,
            n_support=svm.info_["n_support"],
            svm_route=svm.info_["route"],
            sigma=self.sigma_,
            fallback=None if fallback_reason is None else FALLBACK_ALL,
            fallback_reason=fallback_reason,
        )
        self.info_ = info
        return self

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """The SVM's decision values (two classes) or one-vs-one votes.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances, when the SVM uses the cache.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            As :meth:`SVMClassifier.decision_function <lkm.methods.SVMClassifier.decision_function>`.
        """
        X = self._validate_query(X)
        return self.svm_.decision_function(X, cache=cache if self.svm_uses_cache_ else None)
