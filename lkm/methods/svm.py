"""C-SVM with a Gaussian kernel through LIBSVM (libsvm-official), as in Tsuji et al., Sec. 9.

Training is LIBSVM's own C-SVC. Decision values are computed in numpy from the trained
model (support vectors, coefficients, rho, per-class counts, label order) exactly as
LIBSVM's ``svm_predict_values`` does, so the fitted estimator holds plain arrays only
(picklable, no ctypes model).

Two training routes give the same model: for up to :data:`PRECOMPUTED_MAX_BYTES` of
kernel, LIBSVM gets the precomputed Gaussian Gram matrix (``-t 4``), built with matrix
products (from a :class:`DistanceCache` when given) and written straight into LIBSVM's
node array; larger problems pass the features as CSR and let LIBSVM evaluate the RBF
kernel (``-t 2``).

LIBSVM (as libsvm-official builds it) evaluates kernel columns with OpenMP. On the
precomputed route a kernel value is a table lookup, so those threads only add fork/join
and spin-waiting (on 455 breast-cancer rows they made training 2-3× slower than
scikit-learn's ``SVC``); that route trains with one OpenMP thread
(:func:`_one_openmp_thread`), which computes the same numbers.

``sigma="scale"`` (the default) is the width scikit-learn's ``gamma="scale"`` gives,
sqrt(p·Var(X)/2) of the training data; ``probability=True`` trains LIBSVM's Platt
scaling (``-b 1``) and enables :meth:`SVMClassifier.predict_proba`.

LIBSVM's progress output is silenced with a C function (:data:`SILENT_PRINT`), not with
``-q``: ``-q`` installs a Python callback, and an interrupt that arrives while C calls
back into Python is swallowed by ctypes ("Exception ignored on calling ctypes callback
function"), so Ctrl-C was lost during training.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable, Iterator
from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse
from libsvm.svm import PRINT_STRING_FUN, ctypes_print_null, svm_node, svm_parameter, svm_problem
from libsvm.svmutil import svm_train
from sklearn.utils._param_validation import Interval, StrOptions

from lkm.errors import NumericalError
from lkm.kernels import DistanceCache, exponent_scale, gaussian_from_sq, gaussian_gram, sq_dists
from lkm.methods.base import SCALE, SIGMA_CONSTRAINT, LocalKernelClassifier, available_unless

#: Largest LIBSVM node array (16 bytes per kernel entry) built for the precomputed route.
PRECOMPUTED_MAX_BYTES = 512 * 2**20

_NODE = np.dtype(svm_node)


def _silent_print() -> Any:
    """A print function for LIBSVM that is C code and ignores its text: libc's ``strlen``.

    LIBSVM calls its print hook as ``void f(const char *s)`` with a NUL-terminated
    message. ``strlen`` takes exactly that argument, only reads it, has no side
    effects, and returns its result in a register that a caller expecting ``void``
    ignores. With the argument types matching, that holds on every C ABI where the
    caller cleans up the call (x86-64 System V and Windows, AArch64, ARM, cdecl on
    x86), i.e. wherever LIBSVM runs. No Python runs during training, so no signal can
    be caught in a callback. Falls back to libsvm's Python no-op if no C library is found.
    """
    for name in (None, ctypes.util.find_library("c"), "msvcrt"):
        try:
            strlen = ctypes.CDLL(name).strlen
        except (OSError, TypeError, AttributeError):
            continue
        return ctypes.cast(strlen, PRINT_STRING_FUN)
    return ctypes_print_null


#: LIBSVM's print hook for every training in this process (see :func:`_silent_print`).
SILENT_PRINT = _silent_print()


@functools.lru_cache(maxsize=1)
def _openmp_controller() -> Any:
    """threadpoolctl's controller of the OpenMP runtimes loaded in this process (made once)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="openmp")


@contextlib.contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """LIBSVM's OpenMP loops run on one thread inside the block (restored after)."""
    with _openmp_controller().limit(limits=1):
        yield


def _parameter(options: str) -> svm_parameter:
    """LIBSVM parameters for ``options`` (without ``-q``), printing through :data:`SILENT_PRINT`;
    ``svm_train`` installs ``param.print_func`` before it trains."""
    param = svm_parameter(options)
    param.print_func = SILENT_PRINT
    return param


def _precomputed_problem(
    n: int, targets: np.ndarray, fill: Callable[[int, int, np.ndarray], Any]
) -> svm_problem:
    """A LIBSVM problem for ``-t 4``: row i is ``0:i+1, 1:K(x_i,x_1), ..., n:K(x_i,x_n)``.

    ``fill(start, stop, out)`` writes kernel rows ``start:stop`` into ``out`` (shape
    (stop - start, n)). libsvm-official's ``svm_problem`` would copy a CSR matrix row by
    row; here the node array is filled block by block (e.g. the Gaussian kernel
    exponentiated while the block is in cache) and the row pointers are set in one
    vectorized assignment. ``problem.y`` may be rewritten between trainings (LIBSVM
    does not modify the problem), so one-vs-rest reuses one kernel for all classes.
    """
    nodes = np.empty((n, n + 2), dtype=_NODE)
    index_row = np.concatenate(([0], np.arange(1, n + 1), [-1]))
    values = nodes["value"]
    # Writing the int32 index field through numpy's structured path is slow; on a
    # little-endian machine an int64 view of the (index, padding) slot writes it as well.
    fast_index = sys.byteorder == "little" and _NODE.fields["value"][1] == 8
    index_slots = nodes.view(np.int64)[:, 0::2] if fast_index else nodes["index"]
    rows = max(1, 2**20 // nodes.strides[0])
    kernel = np.empty((rows, n))  # contiguous: numpy's vectorized exp needs it
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        k_block = kernel[: stop - start]
        fill(start, stop, k_block)
        index_slots[start:stop] = index_row
        values[start:stop, 0] = np.arange(start + 1, stop + 1)
        values[start:stop, 1 : n + 1] = k_block
        values[start:stop, n + 1] = 0.0

    problem = svm_problem.__new__(svm_problem)
    problem.l = n
    problem.n = n  # svm_train checks serial numbers against it
    problem.y = (ctypes.c_double * n)()
    np.ctypeslib.as_array(problem.y, (n,))[:] = targets
    problem.x = (ctypes.POINTER(svm_node) * n)()
    pointers = np.ctypeslib.as_array(ctypes.cast(problem.x, ctypes.POINTER(ctypes.c_uint64)), (n,))
    pointers[:] = nodes.ctypes.data + np.arange(n, dtype=np.uint64) * np.uint64(nodes.strides[0])
    problem.x_space = nodes  # keeps the nodes alive with the problem (and the model)
    return problem


class SVMClassifier(LocalKernelClassifier):
    """LIBSVM C-SVC with the Gaussian kernel exp(-||x-y||²/(2σ²)), i.e. gamma = 1/(2σ²).

    ``sigma="scale"`` (the default; Tsuji et al. sweep sigma, they fix no value) is
    resolved at fit to sqrt(p·Var(X)/2), the width of scikit-learn's ``gamma="scale"``
    (so ``SVMClassifier()`` and ``SVC()`` fit the same model); the width in use is
    ``sigma_`` and ``info_['sigma']``.

    ``kernel="linear"`` uses x·y instead (Gram X Xᵀ; ``sigma`` unused), the "linear SVM"
    rows of Cevikalp et al. (Tables I-II); ``kernel="precomputed"`` takes the Gram matrix
    as X in ``fit`` (n × n) and K(queries, training) in ``decision_function``/``predict``,
    as scikit-learn's ``SVC(kernel="precomputed")`` (used by :class:`~lkm.methods.svm_knn.SVMKNN`).

    ``multiclass="ovo"`` (the default) is LIBSVM's one-vs-one; ``"ova"`` trains one binary
    LIBSVM model per class (class vs rest, the "one-against-all procedure" of Cevikalp et
    al., Sec. IV) on one shared kernel matrix and predicts the largest of the C decision
    values (exact ties: the base class's rule — larger prior, then lower class index).
    With two classes both are the same single LIBSVM model.

    ``probability=True`` also trains LIBSVM's Platt scaling (``-b 1``: an internal 5-fold
    CV, so fitting is slower) and enables :meth:`predict_proba`, LIBSVM's
    ``svm_predict_probability`` (pairwise coupling for more classes) evaluated in numpy;
    with ``"ova"`` and more classes, each class's Platt probability of its one-vs-rest
    model, normalized to sum 1 over the classes (as scikit-learn's OneVsRestClassifier).
    Without it ``predict_proba`` raises AttributeError. The decision function and
    ``predict`` do not depend on ``probability`` (LIBSVM's -b 1 CV only fits the sigmoids).

    Two classes: ``decision_function`` is LIBSVM's decision value, positive for
    ``classes_[1]``. More classes, ``"ovo"``: LIBSVM's one-vs-one voting;
    ``decision_function`` returns, per class, its number of votes plus a fraction in
    (0, 1) that decreases along LIBSVM's label order, so its argmax is LIBSVM's prediction
    (ties go to the class LIBSVM lists first). ``"ova"``: the C one-vs-rest decision values
    (n × C), positive for "this class".
    """

    _parameter_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "sigma": SIGMA_CONSTRAINT,
        "tol": [Interval(Real, 0, None, closed="neither")],
        "cache_size": [Interval(Real, 0, None, closed="neither")],
        "shrinking": ["boolean"],
        "probability": ["boolean"],
        "kernel": [StrOptions({"gaussian", "linear", "precomputed"})],
        "multiclass": [StrOptions({"ovo", "ova"})],
    }
    conditional_params = {"sigma": ("kernel", ("gaussian",))}

    def __init__(
        self,
        C: float = 1.0,
        sigma: float | str = SCALE,
        tol: float = 1e-3,
        cache_size: float = 200.0,
        shrinking: bool = True,
        probability: bool = False,
        kernel: str = "gaussian",
        multiclass: str = "ovo",
    ) -> None:
        self.C = C
        self.sigma = sigma
        self.tol = tol
        self.cache_size = cache_size
        self.shrinking = shrinking
        self.probability = probability
        self.kernel = kernel
        self.multiclass = multiclass

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> SVMClassifier:
        X, y_index = self._validate_training(X, y)
        binary = self.classes_.size == 2
        ova = self.multiclass == "ova" and not binary
        # LIBSVM labels: +1 for classes_[1] and -1 for classes_[0], else the class index;
        # one-vs-rest: +1 for the class and -1 for the rest (set per class below).
        targets = np.where(y_index == 1, 1.0, -1.0) if binary else y_index.astype(np.float64)
        n = X.shape[0]
        if self.kernel == "precomputed" and X.shape[1] != n:
            raise ValueError(f"SVMClassifier(kernel='precomputed') needs a square Gram matrix; got X of shape {X.shape}")
        options = f"-s 0 -c {float(self.C)!r} -e {float(self.tol)!r} "
        options += f"-m {float(self.cache_size)!r} -h {int(bool(self.shrinking))}"
        options += f" -b {int(bool(self.probability))}"
        sigma = self.sigma_
        if self.kernel == "precomputed" or n * (n + 2) * _NODE.itemsize <= PRECOMPUTED_MAX_BYTES:
            route = "precomputed"
            problem = _precomputed_problem(n, targets, self._gram_filler(X, cache))
            options += " -t 4"
        elif self.kernel == "linear":
            route = "linear"
            problem = svm_problem(targets, scipy.sparse.csr_matrix(X))
            options += " -t 0"
        else:
            route = "rbf"
            gamma = exponent_scale(2.0 * sigma, sigma)
            if isinstance(gamma, tuple):  # LIBSVM takes one double; this one is not a normal float
                raise NumericalError(
                    f"SVMClassifier: sigma={sigma!r} gives gamma = 1/(2 sigma^2) outside float64's "
                    f"normal range, which LIBSVM's built-in kernel (used for {n} training rows) "
                    "cannot evaluate; rescale the features or choose a sigma nearer their scale")
            problem = svm_problem(targets, scipy.sparse.csr_matrix(X))
            options += f" -t 2 -g {gamma!r}"
        self.X_fit_ = X
        self.info_: dict[str, Any] = {"route": route, "sigma": sigma}
        self.multiclass_ = "ova" if ova else "ovo"  # in use: two classes are one model either way
        if ova:
            self._fit_one_vs_rest(problem, y_index, options, route == "precomputed")
            return self
        if route == "precomputed":
            with _one_openmp_thread():
                model = svm_train(problem, _parameter(options))
        else:
            model = svm_train(problem, _parameter(options))

        n_class = model.get_nr_class()
        n_sv = model.get_nr_sv()
        labels = np.asarray(model.get_labels())
        self.libsvm_class_order_ = (labels == 1).astype(np.intp) if binary else labels.astype(np.intp)
        self.n_support_ = np.ctypeslib.as_array(model.nSV, (n_class,)).copy()
        self.support_ = np.asarray(model.get_sv_indices(), dtype=np.intp) - 1  # 1-based
        self.dual_coef_ = np.array(
            [np.ctypeslib.as_array(model.sv_coef[j], (n_sv,)) for j in range(n_class - 1)]
        )
        n_pairs = n_class * (n_class - 1) // 2
        self.rho_ = np.ctypeslib.as_array(model.rho, (n_pairs,)).copy()
        if self.probability:  # Platt sigmoids per pair, in LIBSVM's pair order
            self.prob_a_ = np.ctypeslib.as_array(model.probA, (n_pairs,)).copy()
            self.prob_b_ = np.ctypeslib.as_array(model.probB, (n_pairs,)).copy()
        self.support_vectors_ = X[self.support_]
        self.info_["n_support"] = int(n_sv)
        self.info_["n_support_per_class"] = {
            str(self.classes_[c]): int(s)
            for c, s in zip(self.libsvm_class_order_, self.n_support_, strict=True)
        }
        return self

    def _gram_filler(self, X: np.ndarray, cache: DistanceCache | None) -> Callable[[int, int, np.ndarray], Any]:
        """``fill(start, stop, out)`` for :func:`_precomputed_problem`: training kernel rows."""
        if self.kernel == "precomputed":
            return lambda start, stop, out: np.copyto(out, X[start:stop])
        if self.kernel == "linear":
            return lambda start, stop, out: np.matmul(X[start:stop], X.T, out=out)
        D = sq_dists(X, X, cache)
        return lambda start, stop, out: gaussian_from_sq(D[start:stop], self.sigma_, out=out)

    def _fit_one_vs_rest(self, problem: svm_problem, y_index: np.ndarray, options: str, precomputed: bool) -> None:
        """One binary LIBSVM model per class on the same ``problem`` (its kernel built
        once); only the targets change. Coefficients are stored so that each model's
        value is positive for "its class": ``K(x, support_vectors_) @ ova_coef_.T - ova_rho_``."""
        n_class = self.classes_.size
        y_out = np.ctypeslib.as_array(problem.y, (problem.l,))
        svs, coefs, rho, prob_b, prob_a = [], [], np.empty(n_class), np.empty(n_class), np.empty(n_class)
        per_model = {}
        for c in range(n_class):
            y_out[:] = np.where(y_index == c, 1.0, -1.0)
            with _one_openmp_thread() if precomputed else contextlib.nullcontext():
                model = svm_train(problem, _parameter(options))
            n_sv = model.get_nr_sv()
            sign = 1.0 if model.get_labels()[0] == 1 else -1.0  # LIBSVM's value favours its first label
            svs.append(np.asarray(model.get_sv_indices(), dtype=np.intp) - 1)
            coefs.append(sign * np.ctypeslib.as_array(model.sv_coef[0], (n_sv,)))
            rho[c] = sign * model.rho[0]
            if self.probability:  # P(class c) = 1/(1 + exp(f·A + B)) in this orientation
                prob_a[c], prob_b[c] = model.probA[0], sign * model.probB[0]
            per_model[str(self.classes_[c])] = int(n_sv)
        self.support_ = np.unique(np.concatenate(svs))
        self.ova_coef_ = np.zeros((n_class, self.support_.size))
        for c in range(n_class):
            self.ova_coef_[c, np.searchsorted(self.support_, svs[c])] = coefs[c]
        self.ova_rho_ = rho
        if self.probability:
            self.prob_a_, self.prob_b_ = prob_a, prob_b
        self.support_vectors_ = self.X_fit_[self.support_]
        self.info_["n_support"] = int(self.support_.size)
        self.info_["n_support_per_model"] = per_model

    def _kernel_to_support_vectors(self, X: np.ndarray, cache: DistanceCache | None) -> np.ndarray:
        if self.kernel == "precomputed":
            return X[:, self.support_]
        if self.kernel == "linear":
            return X @ self.support_vectors_.T
        if cache is None:
            return gaussian_gram(X, self.support_vectors_, self.sigma_)
        D = cache.sq_dists(X, self.X_fit_)[:, self.support_]  # a gathered copy: reuse it
        return gaussian_from_sq(D, self.sigma_, out=D)

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """LIBSVM's decision values (two classes), one-vs-one votes or one-vs-rest
        decision values (see the class doc)."""
        X = self._validate_query(X)
        if self.multiclass_ == "ova":
            return self._kernel_to_support_vectors(X, cache) @ self.ova_coef_.T - self.ova_rho_
        values = self._pairwise_values(X, cache)
        order = self.libsvm_class_order_
        if order.size == 2:  # positive means LIBSVM's first label
            return values[:, 0] if order[0] == 1 else -values[:, 0]
        n_class = order.size
        votes = np.zeros((X.shape[0], n_class))
        for pair, (i, j) in enumerate(zip(*np.triu_indices(n_class, 1), strict=True)):
            wins = values[:, pair] > 0
            votes[:, i] += wins
            votes[:, j] += ~wins
        votes += (n_class - np.arange(n_class)) / (n_class + 1.0)
        decision = np.empty_like(votes)
        decision[:, order] = votes
        return decision

    def _pairwise_values(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """LIBSVM's one-vs-one decision values, shape (n, pairs), pairs (i, j), i < j, in
        LIBSVM's label order (``svm_predict_values``); positive favours label i."""
        K = self._kernel_to_support_vectors(X, cache)
        coef, rho, n_class = self.dual_coef_, self.rho_, self.libsvm_class_order_.size
        start = np.concatenate(([0], np.cumsum(self.n_support_)))
        values = np.empty((X.shape[0], rho.size))
        for pair, (i, j) in enumerate(zip(*np.triu_indices(n_class, 1), strict=True)):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            values[:, pair] = K[:, si] @ coef[j - 1, si] + K[:, sj] @ coef[i, sj] - rho[pair]
        return values

    def _no_probability_model(self) -> str | None:
        if self.probability:
            return None
        return ("SVMClassifier has predict_proba only with probability=True (LIBSVM's Platt "
                "scaling, -b 1); use decision_function, or refit with probability=True")

    @available_unless(_no_probability_model)
    def predict_proba(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order, as LIBSVM's
        ``svm_predict_probability``: each pair's decision value through its Platt sigmoid
        (clipped to [1e-7, 1 - 1e-7]), then for more than two classes the pairwise
        coupling of Wu, Lin and Weng (2004), LIBSVM's ``multiclass_probability``; with
        ``multiclass="ova"`` (more classes) each class's Platt probability of its
        one-vs-rest model (clipped likewise), normalized to sum 1."""
        X = self._validate_query(X)
        if self.multiclass_ == "ova":
            f = self._kernel_to_support_vectors(X, cache) @ self.ova_coef_.T - self.ova_rho_
            p = np.clip(_platt(f, self.prob_a_, self.prob_b_), 1e-7, 1.0 - 1e-7)
            return p / p.sum(axis=1, keepdims=True)
        values = self._pairwise_values(X, cache)
        pairwise = np.clip(_platt(values, self.prob_a_, self.prob_b_), 1e-7, 1.0 - 1e-7)
        n_class = self.libsvm_class_order_.size
        if n_class == 2:
            libsvm_order = np.column_stack([pairwise[:, 0], 1.0 - pairwise[:, 0]])
        else:
            libsvm_order = np.array([_couple(row, n_class) for row in pairwise])
        proba = np.empty_like(libsvm_order)
        proba[:, self.libsvm_class_order_] = libsvm_order
        return proba


def _platt(f: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LIBSVM's ``sigmoid_predict``: 1 / (1 + exp(f·A + B)), evaluated without overflow."""
    fapb = f * a + b
    out = np.empty_like(fapb)
    pos = fapb >= 0
    e = np.exp(-fapb[pos])
    out[pos] = e / (1.0 + e)
    out[~pos] = 1.0 / (1.0 + np.exp(fapb[~pos]))
    return out


def _couple(pair_probs: np.ndarray, k: int) -> np.ndarray:
    """LIBSVM's ``multiclass_probability`` (Wu, Lin, Weng 2004, method 2) for one point:
    ``pair_probs`` holds r_ij = P(i | i or j) for pairs i < j in LIBSVM's order."""
    r = np.zeros((k, k))
    iu = np.triu_indices(k, 1)
    r[iu] = pair_probs
    r[iu[1], iu[0]] = 1.0 - pair_probs
    Q = -r.T * r  # Q[t, j] = -r[j, t] r[t, j] off the diagonal
    np.fill_diagonal(Q, (r * r).sum(axis=0) - np.diagonal(r) ** 2)
    p = np.full(k, 1.0 / k)
    eps = 0.005 / k
    for _ in range(max(100, k)):
        Qp = Q @ p
        pQp = p @ Qp
        if np.max(np.abs(Qp - pQp)) < eps:
            break
        for t in range(k):
            diff = (-Qp[t] + pQp) / Q[t, t]
            p[t] += diff
            pQp = (pQp + diff * (diff * Q[t, t] + 2.0 * Qp[t])) / (1.0 + diff) / (1.0 + diff)
            Qp = (Qp + diff * Q[t]) / (1.0 + diff)
            p /= 1.0 + diff
    return p
