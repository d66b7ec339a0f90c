"""SVM-KNN (Zhang, Berg, Maire and Malik, CVPR 2006; Cevikalp et al.'s reference [5]).

For each query: take its K nearest training samples under a distance (``metric``, any
name registered in :data:`lkm.numerics.kernels.DISTANCES`, e.g. a tangent distance); if they all
share one label, predict it; otherwise train a multi-class SVM on those K samples with a
kernel built on the same distance and let it classify the query. Cevikalp et al. (Sec. IV,
Tables I-II) run it with the Gaussian kernel k(x, y) = exp(-d²(x, y)/q), i.e. σ² = q/2,
and one-against-all multi-class SVMs (the default here).

Queries with the same neighbour set share one local SVM (their sorted neighbour lists are
grouped with ``np.unique``), and the local Gram matrices are gathered from the training
distance matrix (memoized in a :class:`~lkm.numerics.kernels.DistanceCache` when given), so the
cost is one LIBSVM training per distinct neighbour set. When the sets together need far
fewer entries than the n × n training distances (small K), each set's distances are
computed on its own instead (``info_['train_distances']``: ``"whole"`` or ``"per_set"``). The local SVMs are
the models of :class:`~lkm.methods.svm.SVMClassifier` with ``kernel="precomputed"`` (real
LIBSVM), trained by :class:`~lkm.methods.svm.PrecomputedTrainer`: LIBSVM's C ``svm_train``
called on one reused node array, problem and parameter set, its models read with
``memmove`` (issue 41: the estimator's per-set fit spent most of its time around LIBSVM).
The kernel values are gathered and exponentiated many sets at a time and the labels taken
in one pass; the decision values are the per-set estimator loop's bit for bit
(:data:`LOCAL_TRAINING` ``= "estimator"`` keeps that loop as the reference).

With a distance that is not Euclidean (e.g. tangent), exp(-d²/(2σ²)) need not be positive
semi-definite. LIBSVM's solver still runs on such a Gram matrix, but the result is not
the solution of a true SVM; ``info_['indefinite_grams']`` counts the local Gram matrices
whose most negative eigenvalue is below -1e-10 times the largest (Cevikalp et al. instead
shift the diagonal by that eigenvalue; not done here).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils._param_validation import Interval, StrOptions

from lkm.methods.base import SCALE, SIGMA_CONSTRAINT, LocalKernelClassifier
from lkm.methods.svm import PRECOMPUTED_MAX_BYTES, PrecomputedTrainer, SVMClassifier
from lkm.numerics.kernels import DistanceCache, check_metric, gaussian_from_sq, sq_dists
from lkm.numerics.neighbors import k_smallest
from lkm.numerics.threads import blas_threads, map_row_blocks

#: A local Gram matrix is counted as indefinite when its smallest eigenvalue is below
#: -INDEFINITE_RTOL times its largest.
INDEFINITE_RTOL = 1e-10
#: Distinct neighbour sets per task with ``n_jobs`` (the sets are trained one by one either way).
LOCAL_SVM_BLOCK = 64
#: How the local SVMs are trained: ``"trainer"``, LIBSVM called directly on reused buffers
#: (:class:`~lkm.methods.svm.PrecomputedTrainer`, the Gram matrices gathered several sets at
#: a time), or ``"estimator"``, one ``SVMClassifier.fit`` per set (the previous route, kept
#: as the reference of the tests and of ``lkm bench``: the same models, bit for bit).
LOCAL_TRAINING = "trainer"
#: Bytes of local Gram matrices gathered at once from the training distances.
GATHER_BYTES = 2**22


def nearest_neighbors(D: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` smallest entries of each row of ``D`` (ties: lower index,
    :func:`lkm.numerics.neighbors.k_smallest`), each row sorted by index: rows with the same
    neighbour set are then equal rows."""
    return np.sort(k_smallest(D, min(k, D.shape[1])), axis=1)


class SVMKNN(LocalKernelClassifier):
    """SVM-KNN: a LIBSVM classifier trained on each query's K nearest neighbours.

    For each query, take its K nearest training samples under ``metric``; if they all
    share one label, predict it; otherwise train a multi-class SVM on those K samples
    with a kernel built on the same distance and let it classify the query (Zhang et al.
    [1]_). Queries with the same neighbour set share one local SVM, so the cost is one
    LIBSVM training per distinct neighbour set; the local SVMs are
    ``SVMClassifier(kernel="precomputed")``'s models (real LIBSVM, trained through
    :class:`~lkm.methods.svm.PrecomputedTrainer`). With a distance that is not
    Euclidean the Gaussian Gram matrix need not be positive semi-definite: LIBSVM's
    solver still runs on it, and ``info_['indefinite_grams']`` counts such local
    matrices (Cevikalp et al. [2]_ shift the diagonal instead; not done here).

    Parameters
    ----------
    n_neighbors : int, default=10
        K, the neighbours each local SVM is trained on (clipped to the training size).
    C : float, default=1.0
        The local SVMs' C.
    kernel : {"gaussian", "linear"}, default="gaussian"
        ``"gaussian"``: exp(-d²/(2σ²)) on the ``metric``'s squared distances, i.e.
        Cevikalp et al.'s exp(-d²(x, y)/q) with σ² = q/2; ``"linear"``: x·y of the
        features (``metric`` then only selects the neighbours).
    sigma : float or "scale", default="scale"
        The Gaussian width; ``"scale"`` is resolved from all training data as in
        :class:`~lkm.methods.SVMClassifier`. Unused with ``kernel="linear"``.
    metric : str, default="euclidean"
        Any distance registered in :data:`lkm.numerics.kernels.DISTANCES`, e.g. a
        tangent distance.
    multiclass : {"ova", "ovo"}, default="ova"
        The local SVMs' multi-class scheme: one-against-all, as Cevikalp et al.
        (Sec. IV) run it, or LIBSVM's one-vs-one.
    tol : float, default=1e-3
        LIBSVM's stopping tolerance.
    n_jobs : int or None, default=None
        Threads (joblib; None is 1, -1 every core) that train the local SVMs, in
        blocks of neighbour sets that do not depend on ``n_jobs``; each set's SVM is
        trained alone, so the outputs are identical at every value. LIBSVM releases the
        GIL; with the per-set estimator loop most of a local SVM's time was Python
        bookkeeping that holds it (letter, 6,000 training rows, loaded two-core machine:
        1 and 2 threads took the same time). The trainer moved most of it into LIBSVM,
        but a gain from threads has not been measured on idle cores: the default stays
        serial.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    sigma_ : float
        The Gaussian width in use.
    X_fit_ : ndarray of shape (n_train, n_features)
        The training samples (SVM-KNN is lazy).
    y_index_ : ndarray of shape (n_train,)
        Each training sample's index into ``classes_``.
    info_ : dict
        ``sigma`` and ``n_neighbors``; after predicting ``unanimous_share``,
        ``local_svms`` (distinct neighbour sets trained), ``indefinite_grams`` and
        ``train_distances`` (``"whole"``: gathered from the training distance matrix,
        or ``"per_set"``: computed per neighbour set, for small K).

    See Also
    --------
    lkm.methods.SVMClassifier : The LIBSVM classifier each local SVM is.
    lkm.methods.HKNN : Cevikalp et al.'s local hyperplane classifier.

    References
    ----------
    .. [1] H. Zhang, A. C. Berg, M. Maire, J. Malik, "SVM-KNN: Discriminative Nearest
       Neighbor Classification for Visual Category Recognition", CVPR 2006.
    .. [2] H. Cevikalp, D. Larlus, M. Douze, F. Jurie, "Local Subspace Classifiers:
       Linear and Nonlinear Approaches", IEEE Workshop on Machine Learning for Signal
       Processing (MLSP), 2007, Sec. IV and Tables I-II (SVM-KNN, their reference [5]).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lkm.methods import SVMKNN
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SVMKNN(n_neighbors=10).fit(X[::2], y[::2])
    >>> print(round(clf.score(X[1::2], y[1::2]), 3))
    0.987
    >>> clf.decision_function(X[1::2]).shape
    (75, 3)
    """

    sample_weight_refusal = (
        "its local SVMs are LIBSVM's C-SVC on each query's K neighbours, trained through "
        "libsvm-official, whose svm_problem has no instance weights"
    )

    _parameter_constraints: dict[str, list[Any]] = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "kernel": [StrOptions({"gaussian", "linear"})],
        "sigma": SIGMA_CONSTRAINT,
        "metric": [str],
        "multiclass": [StrOptions({"ovo", "ova"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": [Integral, None],
    }
    conditional_params = {"sigma": ("kernel", ("gaussian",))}
    _numerical_params = ("sigma", "C")
    X_fit_: NDArray[np.float64]
    y_index_: NDArray[np.intp]

    def __init__(
        self,
        n_neighbors: int = 10,
        C: float = 1.0,
        kernel: str = "gaussian",
        sigma: float | str = SCALE,
        metric: str = "euclidean",
        multiclass: str = "ova",
        tol: float = 1e-3,
        n_jobs: int | None = None,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.C = C
        self.kernel = kernel
        self.sigma = sigma
        self.metric = metric
        self.multiclass = multiclass
        self.tol = tol
        self.n_jobs = n_jobs

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> SVMKNN:
        """Store the training data (SVM-KNN is lazy: the SVMs are trained per query).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Class labels.
        cache : DistanceCache or None, default=None
            Accepted for the signature all lkm estimators share; the distances are
            memoized at prediction.

        Returns
        -------
        SVMKNN
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y)
        check_metric(self.metric, "SVMKNN")
        self.X_fit_, self.y_index_ = X, y_index
        self.info_: dict[str, Any] = {"sigma": self.sigma_, "n_neighbors": min(int(self.n_neighbors), X.shape[0])}
        return self

    def _local_kernel(
        self, D: NDArray[np.float64] | None, A: NDArray[np.float64], B: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Kernel between rows A and B from their squared distances ``D`` (a fresh array;
        None for the linear kernel)."""
        if self.kernel == "linear":
            linear: NDArray[np.float64] = A @ B.T
            return linear
        assert D is not None, "the Gaussian kernel is computed from the squared distances"
        return gaussian_from_sq(D, self.sigma_, out=D)

    def _local(self, X: np.ndarray, cache: DistanceCache | None) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        """Predicted class indices and decision scores (n, C) of the queries X."""
        X = self._validate_query(X)
        X_fit, y, n_class = self.X_fit_, self.y_index_, self.classes_.size
        n = X.shape[0]
        k = min(int(self.n_neighbors), X_fit.shape[0])
        D_query = sq_dists(X, X_fit, cache, self.metric)
        neighbors = nearest_neighbors(D_query, k)
        labels = y[neighbors]
        unanimous = (labels == labels[:, :1]).all(axis=1)
        pred = np.where(unanimous, labels[:, 0], -1)
        scores = np.full((n, n_class), -1.0)
        scores[np.flatnonzero(unanimous), labels[unanimous, 0]] = 1.0
        mixed = np.flatnonzero(~unanimous)
        sets, inverse = (np.unique(neighbors[mixed], axis=0, return_inverse=True)
                         if mixed.size else (np.empty((0, k), np.intp), np.empty(0, np.intp)))
        inverse = inverse.reshape(-1)
        # Training distances: gathered from the whole (cached) n × n matrix when the local
        # sets need about as many entries as it has (and it fits), else computed per set
        # (an expensive metric such as a tangent distance is then never evaluated n² times).
        n_fit = X_fit.shape[0]
        whole = self.kernel == "gaussian" and sets.shape[0] * k * k >= n_fit * n_fit and (
            n_fit * n_fit * 8 <= PRECOMPUTED_MAX_BYTES)
        D_train = sq_dists(X_fit, X_fit, cache, self.metric) if whole else None
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(sets.shape[0] + 1))

        if LOCAL_TRAINING == "estimator":
            train_sets = self._estimator_route(X, D_query, D_train, sets, mixed, order, bounds, pred, scores)
        else:
            train_sets = self._trainer_route(X, D_query, D_train, sets, mixed, inverse, order, bounds, scores)
        # each set's SVM is trained on its own, so the blocks only decide which thread trains
        # it; the per-set products are small: one BLAS thread (as in every block with n_jobs > 1)

        def one_thread(groups: slice) -> int:
            with blas_threads(1):
                return train_sets(groups)

        indefinite = sum(map_row_blocks(one_thread, sets.shape[0], LOCAL_SVM_BLOCK, self.n_jobs))
        if LOCAL_TRAINING != "estimator" and mixed.size:
            pred[mixed] = self._local_labels(scores[mixed], y, sets, inverse)
        self.info_.update({
            "unanimous_share": float(unanimous.mean()) if n else 0.0,
            "local_svms": int(sets.shape[0]),
            "indefinite_grams": indefinite,
            "train_distances": "whole" if whole else "per_set",
        })
        return pred, scores

    def _local_gram(self, idx: np.ndarray, D_train: np.ndarray | None) -> np.ndarray:
        """The Gram matrix of the training rows ``idx`` (one neighbour set)."""
        A = self.X_fit_[idx]
        if self.kernel == "linear":
            return self._local_kernel(None, A, A)
        D_loc = D_train[np.ix_(idx, idx)] if D_train is not None else sq_dists(A, A, None, self.metric)
        return self._local_kernel(D_loc, A, A)

    def _indefinite(self, gram: np.ndarray) -> bool:
        """Whether a local Gram matrix of a non-Euclidean distance is indefinite."""
        if self.metric == "euclidean" or self.kernel != "gaussian":
            return False
        eig = np.linalg.eigvalsh((gram + gram.T) / 2.0)
        return bool(eig[0] < -INDEFINITE_RTOL * eig[-1])

    def _trainer_route(self, X: np.ndarray, D_query: np.ndarray, D_train: np.ndarray | None, sets: np.ndarray,
                       mixed: np.ndarray, inverse: np.ndarray, order: np.ndarray, bounds: np.ndarray,
                       scores: np.ndarray) -> Callable[[slice], int]:
        """``train(groups)``: the local SVMs of the neighbour sets ``groups``, trained by a
        :class:`~lkm.methods.svm.PrecomputedTrainer`, their queries' decision values written
        into ``scores`` (the labels follow from them, :meth:`_local_labels`); returns how
        many of their Gram matrices are indefinite.

        The Gaussian kernel values are gathered and exponentiated many sets at a time (all
        queries' rows at once; the training rows' when the whole training distance matrix
        is held): the same entries and the same elementwise exp as set by set."""
        k, y = sets.shape[1], self.y_index_
        if self.kernel == "gaussian":
            rows = D_query[mixed[:, None], sets[inverse]]  # each mixed query's row to its own set
            query_grams = gaussian_from_sq(rows, self.sigma_, out=rows)[order]
        else:
            query_grams = None

        def train(groups: slice) -> int:
            fit = PrecomputedTrainer(k, C=self.C, tol=self.tol, multiclass=self.multiclass).fit
            indefinite = 0
            gathered, first = np.empty((0, k, k)), groups.start
            for g in range(groups.start, groups.stop):
                idx = sets[g]
                at = slice(bounds[g], bounds[g + 1])
                members = mixed[order[at]]
                if D_train is not None and self.kernel == "gaussian":
                    if g - first >= gathered.shape[0]:  # the Gram matrices of the next sets
                        first = g
                        chunk = sets[g:min(groups.stop, g + max(1, GATHER_BYTES // (8 * k * k)))]
                        gathered = D_train[chunk[:, :, None], chunk[:, None, :]]
                        gaussian_from_sq(gathered, self.sigma_, out=gathered)
                    gram = gathered[g - first]
                else:
                    gram = self._local_gram(idx, D_train)
                indefinite += self._indefinite(gram)
                svm = fit(gram, y[idx])
                query_gram = query_grams[at] if query_grams is not None else self._local_kernel(
                    None, X[members], self.X_fit_[idx])
                local = svm.decision_function(query_gram, check_input=False)
                present = svm.classes_
                if present.size == 2:
                    local = np.column_stack([-local, local])
                scores[members] = local.min(axis=1, keepdims=True) - 1.0
                scores[np.ix_(members, present)] = local
            return indefinite

        return train

    def _local_labels(
        self, scores: NDArray[np.float64], y: NDArray[np.intp], sets: NDArray[np.intp], inverse: NDArray[np.intp]
    ) -> NDArray[np.intp]:
        """The local SVMs' predictions (class indices) from their decision values ``scores``
        (the mixed queries' rows; classes absent from a set below every present one), by
        the local estimator's rule (:meth:`LocalKernelClassifier._break_ties`): the largest
        value, exact ties to the class more frequent in the neighbour set, then the lower
        index. One pass over all queries instead of one per set; the same labels."""
        if not np.isfinite(scores).all():
            svm = SVMClassifier(C=self.C, tol=self.tol, kernel="precomputed", multiclass=self.multiclass)
            svm._check_finite(scores)
        top = scores.max(axis=1, keepdims=True)
        tied = scores == top
        choice: NDArray[np.intp] = np.argmax(scores, axis=1)
        ties = np.flatnonzero(tied.sum(axis=1) > 1)
        if ties.size:
            counts = np.zeros((sets.shape[0], scores.shape[1]))
            np.add.at(counts, (np.arange(sets.shape[0])[:, None], y[sets]), 1.0)
            preference = counts[inverse[ties]] * 2.0
            preference[~tied[ties]] = -np.inf
            choice[ties] = np.argmax(preference, axis=1)
        return choice

    def _estimator_route(self, X: np.ndarray, D_query: np.ndarray, D_train: np.ndarray | None, sets: np.ndarray,
                         mixed: np.ndarray, order: np.ndarray, bounds: np.ndarray, pred: np.ndarray,
                         scores: np.ndarray) -> Callable[[slice], int]:
        """``train(groups)`` of :data:`LOCAL_TRAINING` ``= "estimator"``: one
        ``SVMClassifier.fit`` per neighbour set, as before :class:`~lkm.methods.svm.PrecomputedTrainer`
        (the reference of the tests and of ``lkm bench``); writes ``pred`` and ``scores``."""
        X_fit, y = self.X_fit_, self.y_index_

        def train(groups: slice) -> int:
            indefinite = 0
            # one estimator for these local SVMs, trained without re-validating the arrays
            # built here (scikit-learn's checks were three quarters of SVM-KNN's time)
            svm = SVMClassifier(C=self.C, tol=self.tol, kernel="precomputed", multiclass=self.multiclass)
            for g in range(groups.start, groups.stop):
                idx = sets[g]
                members = mixed[order[bounds[g]:bounds[g + 1]]]
                A, Q = X_fit[idx], X[members]
                gram = self._local_gram(idx, D_train)
                gram_query = self._local_kernel(
                    D_query[np.ix_(members, idx)] if self.kernel == "gaussian" else None, Q, A)
                indefinite += self._indefinite(gram)
                svm.fit(gram, y[idx], check_input=False)
                present = svm.classes_
                local = svm.decision_function(gram_query, check_input=False)
                # the local SVM's predict, from the values just computed (its labels are y's indices)
                pred[members] = svm._labels_from_decision(svm._check_finite(local))
                if present.size == 2:
                    local = np.column_stack([-local, local])
                scores[members] = (local.min(axis=1, keepdims=True) - 1.0)
                scores[np.ix_(members, present)] = local
            return indefinite

        return train

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Per-class scores of the local SVMs.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the query × training (and training × training) distances.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            Per class, the local SVM's decision value (one-vs-one: its votes); classes
            absent from the neighbourhood get the row's smallest value minus 1;
            unanimous neighbourhoods give +1 for their label and -1 elsewhere. Two
            classes: one column, positive for ``classes_[1]``.
        """
        return self._decision(self._local(X, cache)[1])

    def _decision(self, scores: np.ndarray) -> np.ndarray:
        """The per-class scores as ``decision_function`` returns them (two classes: one column)."""
        return scores[:, 1] - scores[:, 0] if self.classes_.size == 2 else scores

    def predict(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """The label of a unanimous neighbourhood, else the local SVM's prediction.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the query × training (and training × training) distances.

        Returns
        -------
        ndarray of shape (n_queries,)
            Predicted class labels.
        """
        pred = self._local(X, cache)[0]
        return self.classes_[pred]

    def _predict_and_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``predict(X)`` and ``decision_function(X)`` (None where it would raise), bit for
        bit, from one training of the local SVMs (the runner records both)."""
        pred, scores = self._local(X, cache)
        return self.classes_[pred], self._finite_or_none(self._decision(scores))
