"""``lkm bench``: speed of lkm's estimators against reference libraries, in the same run.

One spambase fold (StratifiedKFold(10, shuffle=True, random_state=0), first fold,
standardized with the training part's mean and std), sigma = 5. Each comparison is a
ratio of best-of-``repeats`` wall times (ours / reference) measured alternately in this
process, so both sides see the same machine state, with both accuracies reported to show
that they solve the same problem:

(a) LPL fit+predict            vs KNeighborsClassifier(n_neighbors=k, algorithm="brute")
                                                                          target <= 2.0
    (brute force, as LPL's exact query: the same work, at BLAS speed)
(b) PL fit+predict             vs KernelRidge(rbf, alpha=1e-8)            target <= 1.2
    Also reported: the machine's dgemm GFLOP/s and the fraction of it PL.fit reaches
    (:func:`pl_fit_dgemm_fraction`; flop count at :func:`pl_fit_flops`).
(c) SVMClassifier fit+predict  vs sklearn.svm.SVC(C=1)                    target <= 1.1
(d) PL over the 39-value sigma grid with one DistanceCache
                               vs 39 KernelRidge fits                      target <= 0.5
(e) SVMClassifier() fit+predict on 455 breast-cancer rows (scikit-learn's bundled set,
    train_test_split(test_size=0.2, random_state=0), standardized)
                               vs SVC() (both gamma="scale", C=1)          target <= 1.1
    A fit takes milliseconds here, so per-call overhead decides the ratio: each repeat
    times a batch of calls of each side, alternately, and the median over the repeats is
    reported (at least :data:`SMALL_REPEATS` repeats).
(f) PRLS(kernel="gaussian", gamma=1e-3) fit+predict (Yang, King, Lyu)
                               vs KernelRidge(rbf, alpha=1e-3·l)          target <= 1.0
    (d = 57: the semiparametric route, certified; the description of ours names the
    route and its certificate, for LapRLS and PLapRLS too)
(g) LapRLS(gamma_A = gamma_I = 1e-3, 6-NN graph over the training rows)
                               vs KernelRidge(rbf, alpha=1e-3·l)          target <= 4.0
    (the same data term and ridge on the same kernel; LapRLS adds the graph term)
    and PLapRLS (Yang, King, Lyu eq. (12): PRLS's penalty, the same gammas and graph)
                               vs KernelRidge(rbf, alpha=1e-3·l)          target <= 1.5

Two comparisons on USPS (Cevikalp et al.'s set; the official split, 7291 training /
2007 test digits, 256 features in [0, 1], not rescaled; ``usps_rows`` draws seeded
subsets for a quick run):

(h) HKNN(n_neighbors=10) fit+predict (Euclidean)
                               vs KNeighborsClassifier(n_neighbors=10)    target <= 1.5
    on the full split (one repeat takes about a second), best of ``repeats``, like
    for like: both on one thread (BLAS and OpenMP limited to 1), then
    HKNN(n_jobs=2) against k-NN on two threads (``hknn_2threads_vs_knn``).
(i) 1-NN with the two-sided tangent distance (NearestNeighbor(metric="tangent"),
    2007 × 7291 distances) vs Euclidean KNeighborsClassifier(n_neighbors=1): the
    target is absolute, ours <= 300 s (``target_seconds``; the ratio is shown for
    scale), timed once (about two minutes on 2 cores). The distance store
    (:func:`lkm.numerics.kernels.persisted_sq_dists`) is turned off for the timed call, so the
    distances are computed, not read back. ``tangent=False`` (``lkm bench
    --no-tangent``) skips it.
(q) the Gaussian Gram of the fold's training rows, ``gaussian_kernel`` (one buffer,
    :func:`lkm.numerics.kernels.exp_distance_gram`) vs ``rbf_kernel``, on one BLAS
    thread and on the process's                                          target <= 1.0
    ("acc ours": the largest entry difference from rbf_kernel's matrix; not run on a
    ``max_rows`` subset)
(m) approximate neighbours (Tsuji et al., Sec. 7): annoy (n_trees = 10) and hnswlib
    (M = 16, ef_construction = 200, ef = 50) k = 10 queries of the USPS test digits
    against the training digits, each vs lkm's exact query (ExactNeighbors)
                                                                          target <= 1.0
    and, for hnswlib, recall@k >= 0.99. "acc" is recall@k against the exact lists; the
    description gives queries/s and the build's seconds (not timed). Both backends' lists
    are re-ranked by exact float64 distances (the tie rule), which is timed. hnswlib is
    skipped when not installed (``lkm[fast]``).

(p) SVM-KNN (Zhang et al.; K = 40, C = 100, sigma = 8, one-vs-rest local SVMs) fit+predict
    on a seeded 500-row draw of letter-recognition and of isolet (the benchmark's cap: the
    first 400 rows train, the last 100 are the queries, standardized by the training part)
    vs the same SVMKNN with ``LOCAL_TRAINING = "estimator"``, the per-set
    ``SVMClassifier.fit`` loop the LIBSVM trainer replaced (same local sets, same LIBSVM
    solver, bit-identical decision values: "acc" equal)                   target <= 0.33
    median of ``max(repeats, SVM_KNN_REPEATS)`` alternated calls. Both sides spend the
    same time inside LIBSVM's solver, which bounds the ratio from below. Then the same as
    a run's task does it: fit, predict and the recorded decision values, through the
    runner's ``predict_and_decide`` (one training of the local SVMs per query set) vs the
    previous loop and the runner's previous second pass (``decision_function`` after
    ``predict``, every local SVM trained again)                          target <= 0.33

With ``large=True`` (``lkm bench --large``; minutes), SVMClassifier fit+predict against
``SVC`` with the same C and gamma = 1/(2σ²), target <= 1.1 each, each case idle and again
"with a busy second core" (a CPU-burner process the bench starts before and stops after
the timing, :func:`busy_core`):

(j) the 455-row breast-cancer case of (e), busy core (median of batches as (e))
(k) MNIST 3-vs-8, the official training digits (11,982) and test digits (1,984), pixels
    scaled to [-1, 1] by the training part, C = 10, σ = 7 (idle and busy)
(l) letter-recognition, first 16,000 rows train / last 4,000 test, 26 classes
    (one-vs-one), features scaled to [-1, 1], C = 10, σ = "scale" (idle and busy)
(o) MNIST even/odd, 20,000 and 32,000 rows of a seeded permutation of the 60,000
    training images, the 10,000 test images, pixels scaled to [-1, 1], C = 10, σ = 10,
    idle only, timed once (an SVC fit takes minutes); all 60,000 rows are
    ``lkm bench --scaling``'s last mnist-even-odd cell
(k), (l) and (o) also time the modern-solver anchor, ``SVMClassifier(backend="intelex")``
(scikit-learn-intelex's SVC, same C and gamma; skipped with a note where not installed):
``anchor`` in the result, printed below the table; and SVC with a kernel cache as large
as the memory lkm's SVM gives LIBSVM on those rows (``same_memory``,
:func:`svc_given_lkms_memory`): SVC's default 200 MB cache is part of what the main
ratio measures at these sizes.
(n) (m) on MNIST, the 60,000 official training digits and 10,000 test digits, pixels in
    [0, 1] (targets as (m))
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: lkm.data is imported where a benchmark loads data
    from lkm.data import Dataset

SIGMA = 5.0
SIGMA_GRID = np.logspace(-2, 2, 39)
TARGETS = {
    "lpl_vs_knn": 2.0, "pl_vs_kernel_ridge": 1.2, "svm_vs_svc": 1.1, "pl_sweep_vs_kernel_ridge": 0.5,
    "svm_small_vs_svc": 1.1, "hknn_vs_knn": 1.5, "hknn_2threads_vs_knn": 1.5, "prls_vs_kernel_ridge": 1.0,
    "laprls_vs_kernel_ridge": 4.0,
    "plaprls_vs_kernel_ridge": 1.5,
    "svm_knn_letter_vs_loop": 0.33, "svm_knn_isolet_vs_loop": 0.33,
    "svm_knn_letter_task_vs_loop": 0.33, "svm_knn_isolet_task_vs_loop": 0.33,
    "svm_small_busy_vs_svc": 1.1, "svm_mnist38_vs_svc": 1.1, "svm_mnist38_busy_vs_svc": 1.1,
    "svm_letter_vs_svc": 1.1, "svm_letter_busy_vs_svc": 1.1,
    "svm_evenodd20000_vs_svc": 1.1, "svm_evenodd32000_vs_svc": 1.1,
    "annoy_usps_vs_exact": 1.0, "hnswlib_usps_vs_exact": 1.0, "annoy_mnist_vs_exact": 1.0,
    "hnswlib_mnist_vs_exact": 1.0, "gram_1thread_vs_rbf_kernel": 1.0, "gram_vs_rbf_kernel": 1.0,
}
#: (m), (n): neighbours per query, and the least recall@k each backend must reach (None: reported only).
ANN_K = 10
ANN_MIN_RECALL = {"annoy": None, "hnswlib": 0.99}
#: C and sigma of the large SVM cases (MNIST 3-vs-8: Shin and Cho's Table 2 grid values).
LARGE_SVM: dict[str, tuple[float, float | str]] = {"mnist38": (10.0, 7.0), "letter": (10.0, "scale"), "evenodd20000": (10.0, 10.0),
             "evenodd32000": (10.0, 10.0)}
#: γ of the PRLS, LapRLS and PLapRLS comparisons (γ_A = γ_I = γ for the last two); KernelRidge gets
#: alpha = γ·l.
MANIFOLD_GAMMA = 1e-3
#: Absolute targets (seconds of ours), for comparisons whose reference only gives scale.
TARGET_SECONDS = {"tangent_1nn_usps": 300.0}
#: HKNN's K (and the reference's k) in the USPS comparison.
HKNN_K = 10
#: (p): SVM-KNN's setting (the benchmark's grid values K = 40, C = 100, sigma = 8), the rows
#: drawn from each set, and the least number of alternated repeats.
SVM_KNN: dict[str, Any] = {"n_neighbors": 40, "C": 100.0, "sigma": 8.0}
SVM_KNN_ROWS, SVM_KNN_REPEATS = 500, 5
#: The small-data SVM case: repeats (at least) and fit+predict calls timed per repeat.
SMALL_REPEATS, SMALL_BATCH = 9, 20


def spambase_fold(
    data_dir: str | Path | None = None, max_rows: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardized (X_train, y_train, X_test, y_test) of the benchmark's spambase fold.

    ``max_rows`` draws a seeded subset first (for a quick smoke run).
    """
    from sklearn.model_selection import StratifiedKFold

    from lkm.data import load_dataset

    data = load_dataset("spambase", data_dir=data_dir)
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y)
    if max_rows is not None and max_rows < X.shape[0]:
        rows = np.sort(np.random.default_rng(0).choice(X.shape[0], max_rows, replace=False))
        X, y = X[rows], y[rows]
    train, test = next(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std[std == 0] = 1.0
    return (X[train] - mean) / std, y[train], (X[test] - mean) / std, y[test]


def usps_split(
    data_dir: str | Path | None = None, max_rows: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test) of USPS's official split (7291 / 2007 rows).

    ``max_rows`` keeps seeded subsets of at most that many training and test rows."""
    from lkm.data import load_dataset

    data = load_dataset("usps", data_dir=data_dir)
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y)
    parts = []
    split = data.predefined_split
    assert split is not None  # USPS ships its train/test split
    for name in ("train", "test"):
        rows = np.asarray(split[name])
        if max_rows is not None and max_rows < rows.size:
            rows = np.sort(np.random.default_rng(0).choice(rows, max_rows, replace=False))
        parts += [X[rows], y[rows]]
    return parts[0], parts[1], parts[2], parts[3]


@contextmanager
def _distance_store_off() -> Iterator[None]:
    """``LKM_DISTANCE_CACHE=off`` for the block: distances are computed, not read back."""
    old = os.environ.get("LKM_DISTANCE_CACHE")
    os.environ["LKM_DISTANCE_CACHE"] = "off"
    try:
        yield
    finally:
        if old is None:
            del os.environ["LKM_DISTANCE_CACHE"]
        else:
            os.environ["LKM_DISTANCE_CACHE"] = old


def _burn() -> None:
    while True:
        pass


@contextmanager
def busy_core() -> Iterator[None]:
    """A CPU-burner process spinning for the duration of the block (killed after): the
    "busy second core" of the large SVM comparisons (another user's job, a joblib worker)."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork") if "fork" in methods else multiprocessing.get_context("spawn")
    burner = ctx.Process(target=_burn, daemon=True)
    burner.start()
    try:
        yield
    finally:
        burner.kill()
        burner.join()


def _predefined(data: Dataset) -> dict[str, np.ndarray]:
    """The dataset's predefined train/test split (MNIST and its even/odd task ship one)."""
    split = data.predefined_split
    assert split is not None, f"{data.name}: no predefined split"
    return split


def large_svm_split(
    name: str, data_dir: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test) of a large SVM case, scaled to [-1, 1] by the
    training part: ``"mnist38"`` (official split of the 3s and 8s), ``"letter"`` (first
    16,000 rows / last 4,000) or ``"evenodd<N>"`` (MNIST digit parity: the first N rows of
    a seeded permutation of the 60,000 official training images (all of them for N =
    60000), tested on the 10,000 official test images)."""
    from lkm.data import load_dataset, select_classes
    from lkm.numerics.preprocessing import preprocess

    if name == "mnist38":
        data = select_classes(load_dataset("mnist", data_dir=data_dir), [3, 8])
        train, test = (np.asarray(_predefined(data)[part]) for part in ("train", "test"))
    elif name.startswith("evenodd"):
        data = load_dataset("mnist-even-odd", data_dir=data_dir)
        train, test = (np.asarray(_predefined(data)[part]) for part in ("train", "test"))
        train = np.sort(np.random.default_rng(0).permutation(train)[: int(name[len("evenodd"):])])
    else:
        data = load_dataset("letter-recognition", data_dir=data_dir)
        train, test = np.arange(16_000), np.arange(16_000, len(data.y))
    X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y)
    X_train, X_test = preprocess("scale", X[train], X[test])
    return X_train, y[train], X_test, y[test]


def _best_times(
    ours: Callable[[], Any], reference: Callable[[], Any], repeats: int
) -> tuple[float, float, Any, Any]:
    """Best wall times of the two callables, run alternately; also their last results."""
    best_ours = best_ref = np.inf
    out_ours = out_ref = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out_ours = ours()
        t1 = time.perf_counter()
        out_ref = reference()
        t2 = time.perf_counter()
        best_ours, best_ref = min(best_ours, t1 - t0), min(best_ref, t2 - t1)
    return best_ours, best_ref, out_ours, out_ref


def _median_times(
    ours: Callable[[], Any], reference: Callable[[], Any], repeats: int, batch: int
) -> tuple[float, float, Any, Any]:
    """Median seconds per call of the two callables over ``repeats`` repeats, each timing
    ``batch`` calls of one side then of the other; also their last results."""
    times_ours, times_ref = [], []
    out_ours = out_ref = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(batch):
            out_ours = ours()
        t1 = time.perf_counter()
        for _ in range(batch):
            out_ref = reference()
        t2 = time.perf_counter()
        times_ours.append((t1 - t0) / batch)
        times_ref.append((t2 - t1) / batch)
    return float(np.median(times_ours)), float(np.median(times_ref)), out_ours, out_ref


def breast_cancer_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardized (X_train, y_train, X_test, y_test): scikit-learn's breast-cancer set,
    ``train_test_split(test_size=0.2, random_state=0)`` (455 training rows)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


def _result(
    name: str,
    ours: str,
    reference: str,
    times: tuple[float, float, Any, Any],
    target: float | None,
    target_seconds: float | None = None,
) -> dict[str, Any]:
    """One comparison; ``target`` bounds the ratio, ``target_seconds`` (when the target
    is absolute, then ``target`` is None) bounds ours in seconds."""
    ours_s, ref_s, acc_ours, acc_ref = times
    ratio = ours_s / ref_s
    passed = ratio <= target if target is not None else target_seconds is not None and ours_s <= target_seconds
    return {
        "name": name,
        "ours": ours,
        "reference": reference,
        "ours_seconds": ours_s,
        "reference_seconds": ref_s,
        "ratio": ratio,
        "target": target,
        "target_seconds": target_seconds,
        "passed": bool(passed),
        "ours_accuracy": float(acc_ours),
        "reference_accuracy": float(acc_ref),
    }


def manifold_route(info: dict[str, Any]) -> str:
    """The solver route of a PRLS / LapRLS / PLapRLS fit from its ``info_``: the solver,
    the rank, and for the bracket penalty the semiparametric certificate against its
    tolerance (:func:`lkm.numerics.manifold_solvers.semiparametric_certificate`)."""
    route = f"{info['solver']} (rank {info['rank']})"
    if info.get("certificate") is not None:
        verdict = "<=" if info["certificate"] <= info["certificate_tol"] else ">"
        route += f", certificate {info['certificate']:.2g} {verdict} {info['certificate_tol']:.2g}"
    return route


def pl_fit_flops(info: dict[str, Any], n_features: int, n_outputs: int = 1) -> float:
    """Floating-point operations of :meth:`ProjectionLearning.fit` from its ``info_``
    (one diagonal block), counting only the O(n²p) and O(n³) terms, each at the flops of
    the textbook algorithm LAPACK/BLAS run (a multiply-add counts 2):

    * the squared distances of the n distinct rows through gemm: ``2n²p``;
    * routes "inverse" and "pseudo-inverse": a Cholesky factorization stopped at rank r,
      ``Σ_{k<r} (n-k)² ≈ n²r - nr² + r³/3`` (``n³/3`` at full rank), and two triangular
      solves with the outputs, ``2n²c``; the pivoted route (solver "cholesky") adds the
      12 matrix-vector products of its λ_max estimate, ``24n²``, and for r < n the
      null-space terms: ``U11⁻¹U12`` (``r²(n-r)``), the Gram matrix of the smaller side of
      that r × (n-r) matrix (``2r(n-r)·min(r, n-r)``) and its Cholesky (``min(r, n-r)³/3``);
    * route "eigen": tridiagonal reduction and back-transformation of dsyevd,
      ``4n³/3 + 2n³`` (its divide and conquer not counted, so a lower count).
    """
    n, r, p, c = info["n_unique_rows"], info["rank_G"], n_features, n_outputs
    flops = 2.0 * n * n * p
    if info["route"] == "eigen":
        return flops + (4.0 / 3.0 + 2.0) * n**3
    m = n - r
    flops += n * n * r - n * r * r + r**3 / 3.0 + 2.0 * n * n * c
    if info["solver"] == "cholesky":
        flops += 24.0 * n * n + r * r * m + 2.0 * r * m * min(r, m) + min(r, m) ** 3 / 3.0
    return flops


def pl_fit_dgemm_fraction(
    X: np.ndarray, y: np.ndarray, sigma: float, repeats: int, order: int = 2000
) -> dict[str, float]:
    """PL.fit's speed as a fraction of the machine's dgemm: best-of-``repeats`` times of
    ``ProjectionLearning(sigma).fit(X, y)`` and of a square dgemm of ``order`` (``2·order³``
    flops), alternately in this process; the fit's flops from :func:`pl_fit_flops`.
    Keys: dgemm_gflops, fit_gflops, fit_dgemm_fraction."""
    from lkm.methods import ProjectionLearning

    a = np.random.default_rng(0).standard_normal((order, order))
    fit_s, gemm_s, model, _ = _best_times(lambda: ProjectionLearning(sigma=sigma).fit(X, y), lambda: a @ a, repeats)
    n_outputs = 1 if model.classes_.size == 2 else model.classes_.size
    dgemm_gflops = 2.0 * order**3 / gemm_s / 1e9
    fit_gflops = pl_fit_flops(model.info_, X.shape[1], n_outputs) / fit_s / 1e9
    return {"dgemm_gflops": dgemm_gflops, "fit_gflops": fit_gflops, "fit_dgemm_fraction": fit_gflops / dgemm_gflops}


def run_bench(
    data_dir: str | Path | None = None,
    repeats: int = 3,
    max_rows: int | None = None,
    sigma_grid: np.ndarray = SIGMA_GRID,
    usps_rows: int | None = None,
    tangent: bool = True,
    large: bool = False,
) -> list[dict[str, Any]]:
    """Run the comparisons (a)-(m), (p) and (q) ((i) only with ``tangent``, (j)-(l) and (n) only with
    ``large``); one dict per comparison (see the module doc; (g) gives two,
    LapRLS and PLapRLS). ``max_rows`` subsets spambase, ``usps_rows`` USPS.

    Keys: name, ours, reference, ours_seconds, reference_seconds, ratio, target (of the
    ratio; None for an absolute target), target_seconds (of ours; None for a ratio
    target), passed, ours_accuracy, reference_accuracy (for the sweep: mean accuracy over
    the grid).
    """
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    from lkm.methods import (
        HKNN,
        PRLS,
        LapRLS,
        LocalizedProjectionLearning,
        NearestNeighbor,
        PLapRLS,
        ProjectionLearning,
        SVMClassifier,
    )
    from lkm.methods.projection import auto_k
    from lkm.numerics.kernels import DistanceCache

    X_train, y_train, X_test, y_test = spambase_fold(data_dir, max_rows)
    classes = np.unique(y_train)
    targets = np.where(y_train == classes[1], 1.0, -1.0)

    def accuracy(y_pred: np.ndarray) -> float:
        return float(np.mean(y_pred == y_test))

    def kernel_ridge(sigma: float) -> float:
        model = KernelRidge(kernel="rbf", gamma=1.0 / (2.0 * sigma**2), alpha=1e-8)
        model.fit(X_train, targets)
        return accuracy(classes[(model.predict(X_test) > 0).astype(int)])

    def ours(estimator: Any, cache: DistanceCache | None = None) -> float:
        return accuracy(estimator.fit(X_train, y_train, cache=cache).predict(X_test, cache=cache))

    def pl_sweep() -> float:
        cache = DistanceCache()
        return float(np.mean([ours(ProjectionLearning(sigma=s), cache) for s in sigma_grid]))

    def kernel_ridge_sweep() -> float:
        return float(np.mean([kernel_ridge(s) for s in sigma_grid]))

    k = auto_k(X_train.shape[0])
    gamma = 1.0 / (2.0 * SIGMA**2)
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # KernelRidge's ill-conditioning warnings
        results.append(_result(
            "lpl_vs_knn", f"LocalizedProjectionLearning(sigma={SIGMA}, k={k})",
            f"KNeighborsClassifier(n_neighbors={k}, algorithm='brute')",
            _best_times(
                lambda: ours(LocalizedProjectionLearning(sigma=SIGMA)),
                lambda: accuracy(KNeighborsClassifier(n_neighbors=k, algorithm="brute")
                                 .fit(X_train, y_train).predict(X_test)),
                repeats,
            ),
            TARGETS["lpl_vs_knn"],
        ))
        results.append(_result(
            "pl_vs_kernel_ridge", f"ProjectionLearning(sigma={SIGMA})",
            f"KernelRidge(kernel='rbf', gamma={gamma:g}, alpha=1e-8)",
            _best_times(lambda: ours(ProjectionLearning(sigma=SIGMA)), lambda: kernel_ridge(SIGMA), repeats),
            TARGETS["pl_vs_kernel_ridge"],
        ))
        results[-1].update(pl_fit_dgemm_fraction(X_train, y_train, SIGMA, repeats))
        results.append(_result(
            "svm_vs_svc", f"SVMClassifier(C=1, sigma={SIGMA})", f"SVC(C=1, gamma={gamma:g})",
            _best_times(
                lambda: ours(SVMClassifier(C=1.0, sigma=SIGMA)),
                lambda: accuracy(SVC(C=1.0, gamma=gamma).fit(X_train, y_train).predict(X_test)),
                repeats,
            ),
            TARGETS["svm_vs_svc"],
        ))
        results.append(_result(
            "pl_sweep_vs_kernel_ridge",
            f"ProjectionLearning over {len(sigma_grid)} sigmas, one DistanceCache",
            f"{len(sigma_grid)} KernelRidge fits",
            _best_times(pl_sweep, kernel_ridge_sweep, repeats),
            TARGETS["pl_sweep_vs_kernel_ridge"],
        ))
        if max_rows is None:  # on a subset a Gram takes microseconds: call overhead, not the build
            results += _gram_vs_rbf_kernel(X_train, repeats)
        Xs_train, ys_train, Xs_test, ys_test = breast_cancer_split()

        def small(estimator: Any) -> float:
            return float(np.mean(estimator.fit(Xs_train, ys_train).predict(Xs_test) == ys_test))

        small_case = f"SVMClassifier() on {len(ys_train)} breast-cancer rows (sigma='scale')"

        def small_times() -> tuple[float, float, Any, Any]:
            return _median_times(lambda: small(SVMClassifier()), lambda: small(SVC()),
                                 max(repeats, SMALL_REPEATS), SMALL_BATCH)

        results.append(_result("svm_small_vs_svc", small_case, "SVC() (gamma='scale')", small_times(),
                               TARGETS["svm_small_vs_svc"]))
        if large:
            with busy_core():
                times = small_times()
            results.append(_result("svm_small_busy_vs_svc", small_case + ", a busy second core",
                                   "SVC() (gamma='scale')", times, TARGETS["svm_small_busy_vs_svc"]))
        # (h), (i): the same ridge on the same Gaussian kernel: (1/l)||y - f||² + γ αᵀPα is
        # KernelRidge's ||y - Kα||² + alpha αᵀKα with alpha = γ·l (P = K for LapRLS)
        ridge = MANIFOLD_GAMMA * len(y_train)

        def kernel_ridge_at(alpha: float) -> float:
            model = KernelRidge(kernel="rbf", gamma=gamma, alpha=alpha).fit(X_train, targets)
            return accuracy(classes[(model.predict(X_test) > 0).astype(int)])

        fitted: dict[str, Any] = {}

        def ours_noting(key: str, estimator: Any) -> float:  # keeps the fit's info_ (its solver route)
            fitted[key] = estimator
            return ours(estimator)

        results.append(_result(
            "prls_vs_kernel_ridge", f"PRLS(kernel='gaussian', sigma={SIGMA}, gamma={MANIFOLD_GAMMA:g})",
            f"KernelRidge(kernel='rbf', gamma={gamma:g}, alpha={ridge:g})",
            _best_times(lambda: ours_noting("prls", PRLS(kernel="gaussian", sigma=SIGMA, gamma=MANIFOLD_GAMMA)),
                        lambda: kernel_ridge_at(ridge), repeats),
            TARGETS["prls_vs_kernel_ridge"],
        ))
        results[-1]["ours"] += f" [{manifold_route(fitted['prls'].info_)}]"
        for key, graph_method in (("laprls", LapRLS), ("plaprls", PLapRLS)):  # the same graph term

            def fit_graph(m: Any = graph_method, k: str = key) -> float:
                return ours_noting(k, m(kernel="gaussian", sigma=SIGMA, gamma_A=MANIFOLD_GAMMA, gamma_I=MANIFOLD_GAMMA))

            results.append(_result(
                f"{key}_vs_kernel_ridge",
                f"{graph_method.__name__}(kernel='gaussian', sigma={SIGMA}, gamma_A={MANIFOLD_GAMMA:g}, "
                f"gamma_I={MANIFOLD_GAMMA:g}, graph_k=6)",
                f"KernelRidge(kernel='rbf', gamma={gamma:g}, alpha={ridge:g})",
                _best_times(fit_graph, lambda: kernel_ridge_at(ridge), repeats),
                TARGETS[f"{key}_vs_kernel_ridge"],
            ))
            results[-1]["ours"] += f" [{manifold_route(fitted[key].info_)}]"
    Xu_train, yu_train, Xu_test, yu_test = usps_split(data_dir, usps_rows)

    def usps(estimator: Any) -> float:
        return float(np.mean(estimator.fit(Xu_train, yu_train).predict(Xu_test) == yu_test))

    where = f"USPS {len(yu_train)}/{len(yu_test)}"
    results += _approximate_neighbors("usps", where, Xu_train, Xu_test, repeats)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # like for like: one thread each (k-NN's BLAS and OpenMP too)
        results.append(_result(
            "hknn_vs_knn", f"HKNN(n_neighbors={HKNN_K}) on {where}, one thread",
            f"KNeighborsClassifier(n_neighbors={HKNN_K}), one thread",
            _best_times(lambda: usps(HKNN(n_neighbors=HKNN_K)), lambda: usps(KNeighborsClassifier(n_neighbors=HKNN_K)),
                        repeats),
            TARGETS["hknn_vs_knn"],
        ))
    results.append(_result(
        "hknn_2threads_vs_knn", f"HKNN(n_neighbors={HKNN_K}, n_jobs=2) on {where}",
        f"KNeighborsClassifier(n_neighbors={HKNN_K}), two threads",
        _best_times(lambda: usps(HKNN(n_neighbors=HKNN_K, n_jobs=2)),
                    lambda: usps(KNeighborsClassifier(n_neighbors=HKNN_K)), repeats),
        TARGETS["hknn_2threads_vs_knn"],
    ))
    results += _svm_knn_against_loop(data_dir, repeats)
    if large:
        results += _large_svm(data_dir, repeats)
        Xm_train, Xm_test = mnist_pixels(data_dir)
        results += _approximate_neighbors("mnist", f"MNIST {len(Xm_train)}/{len(Xm_test)}", Xm_train, Xm_test, repeats)
    if tangent:
        with _distance_store_off():
            times = _best_times(
                lambda: usps(NearestNeighbor(metric="tangent")), lambda: usps(KNeighborsClassifier(n_neighbors=1)), 1
            )
        results.append(_result(
            "tangent_1nn_usps", f"NearestNeighbor(metric='tangent') on {where}, timed once",
            "KNeighborsClassifier(n_neighbors=1) (Euclidean)", times, None, TARGET_SECONDS["tangent_1nn_usps"],
        ))
    return results


def svm_knn_split(
    name: str, data_dir: str | Path | None = None, rows: int = SVM_KNN_ROWS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test) of (p): a seeded draw of ``rows`` rows of
    ``name``, the first 80 % training, standardized by the training part."""
    from lkm.data import load_dataset

    data = load_dataset(name, data_dir=data_dir)
    pick = np.random.default_rng(0).choice(len(data.y), rows, replace=False)
    X, y = np.asarray(data.X, dtype=np.float64)[pick], np.asarray(data.y)[pick]
    n = rows * 4 // 5
    mean, std = X[:n].mean(axis=0), X[:n].std(axis=0)
    std[std == 0] = 1.0
    return (X[:n] - mean) / std, y[:n], (X[n:] - mean) / std, y[n:]


def _svm_knn_against_loop(data_dir: str | Path | None, repeats: int) -> list[dict[str, Any]]:
    """(p): SVMKNN with its LIBSVM trainer vs the per-set ``SVMClassifier.fit`` loop, on
    letter-recognition and isolet."""
    import lkm.methods.svm_knn as svm_knn
    from lkm.methods import SVMKNN

    @contextmanager
    def local_training(route: str) -> Iterator[None]:
        previous, svm_knn.LOCAL_TRAINING = svm_knn.LOCAL_TRAINING, route
        try:
            yield
        finally:
            svm_knn.LOCAL_TRAINING = previous

    def fit_predict(route: str, split: tuple[np.ndarray, ...]) -> float:
        X_train, y_train, X_test, y_test = split
        with local_training(route):
            return float(np.mean(SVMKNN(**SVM_KNN).fit(X_train, y_train).predict(X_test) == y_test))

    def task(route: str, split: tuple[np.ndarray, ...]) -> float:
        """What a run's task computes: fit, predict, the recorded decision values."""
        from lkm.engine.runner import decision_values, predict_and_decide

        X_train, y_train, X_test, y_test = split
        with local_training(route):
            est = SVMKNN(**SVM_KNN).fit(X_train, y_train)
            if route == "trainer":
                labels, decide = predict_and_decide(est, X_test)
                decide()
            else:  # the runner before _predict_and_decision: a second, untimed pass
                labels = est.predict(X_test)
                decision_values(est, X_test)
            return float(np.mean(labels == y_test))

    setting = ", ".join(f"{k}={v:g}" for k, v in SVM_KNN.items())
    results = []
    for key, name in (("letter", "letter-recognition"), ("isolet", "isolet")):
        split = svm_knn_split(name, data_dir)
        where = f"{name} {len(split[1])}/{len(split[3])}"
        results.append(_result(
            f"svm_knn_{key}_vs_loop", f"SVMKNN({setting}) on {where}, LIBSVM trainer",
            "the same, one SVMClassifier.fit per neighbour set (the previous loop)",
            _median_times(functools.partial(fit_predict, "trainer", split), functools.partial(fit_predict, "estimator", split),
                          max(repeats, SVM_KNN_REPEATS), 1),
            TARGETS[f"svm_knn_{key}_vs_loop"],
        ))
        results.append(_result(
            f"svm_knn_{key}_task_vs_loop", f"a run's SVM-KNN task on {where} (fit, predict, decision values in one pass)",
            "the previous loop's task (decision values by a second pass)",
            _median_times(functools.partial(task, "trainer", split), functools.partial(task, "estimator", split),
                          max(repeats, 3), 1),
            TARGETS[f"svm_knn_{key}_task_vs_loop"],
        ))
    return results


def _svm_against_svc(
    X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, C: float, sigma: float
) -> tuple[Callable[[], float], Callable[[], float]]:
    """SVMClassifier and SVC fit+predict (same C, gamma = 1/(2σ²)), each returning accuracy."""
    from sklearn.svm import SVC

    from lkm.methods import SVMClassifier

    def ours() -> float:
        return float(np.mean(SVMClassifier(C=C, sigma=sigma).fit(X_train, y_train).predict(X_test) == y_test))

    def reference() -> float:
        svc = SVC(C=C, gamma=1.0 / (2.0 * sigma**2)).fit(X_train, y_train)
        return float(np.mean(svc.predict(X_test) == y_test))

    return ours, reference


def intelex_anchor(
    X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, C: float, sigma: float
) -> dict[str, Any]:
    """The modern-solver anchor of an SVM comparison: ``SVMClassifier(backend="intelex")``
    (scikit-learn-intelex's SVC, same C and gamma) fit+predict, timed once after one
    warm-up on 200 rows; ``{"note": ...}`` when scikit-learn-intelex is not installed."""
    import importlib.util

    from lkm.methods import SVMClassifier

    if importlib.util.find_spec("sklearnex") is None:
        return {"note": "scikit-learn-intelex not installed (pip install 'lkm[fast]'): anchor skipped"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SVMClassifier(C=C, sigma=sigma, backend="intelex").fit(X_train[:200], y_train[:200])
        t0 = time.perf_counter()
        model = SVMClassifier(C=C, sigma=sigma, backend="intelex").fit(X_train, y_train)
        accuracy = float(np.mean(model.predict(X_test) == y_test))
    return {"name": "SVMClassifier(backend='intelex')", "seconds": time.perf_counter() - t0, "accuracy": accuracy}


def svc_given_lkms_memory(
    X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, C: float, sigma: float
) -> dict[str, Any]:
    """SVC (same C and gamma) with a kernel cache as large as the memory lkm's SVM gives
    LIBSVM on these rows (its precomputed Gram at 8 bytes per entry, or its own-kernel
    cache, within the same share of the available memory), fit+predict timed once: the
    ratio at SVC's default 200 MB partly measures that default, this one does not."""
    from sklearn.svm import SVC

    from lkm.methods.svm import DEFAULT_CACHE_MB, PRECOMPUTED_MEMORY_SHARE
    from lkm.numerics.kernels import available_memory

    n = X_train.shape[0]
    mb = max(DEFAULT_CACHE_MB, min(8.0 * n * n, PRECOMPUTED_MEMORY_SHARE * available_memory()[0]) / 2**20)
    t0 = time.perf_counter()
    svc = SVC(C=C, gamma=1.0 / (2.0 * sigma**2), cache_size=mb).fit(X_train, y_train)
    accuracy = float(np.mean(svc.predict(X_test) == y_test))
    return {"name": f"SVC(cache_size={mb:.0f})", "seconds": time.perf_counter() - t0, "accuracy": accuracy}


def _large_svm(data_dir: str | Path | None, repeats: int) -> list[dict[str, Any]]:
    """Comparisons (k) and (l): SVMClassifier vs SVC (same C and gamma) on MNIST 3-vs-8
    and letter, idle and with a busy second core, best of ``repeats``; (o): MNIST even/odd
    at 20,000 and 32,000 rows, idle, timed once. Each with the intelex anchor."""
    from lkm.methods.base import resolve_sigma

    results = []
    for name, (C, sigma_spec) in LARGE_SVM.items():
        X_train, y_train, X_test, y_test = large_svm_split(name, data_dir)
        sigma = float(resolve_sigma(sigma_spec, X_train))
        ours, reference = _svm_against_svc(X_train, y_train, X_test, y_test, C, sigma)
        what = f"{name} {len(y_train)}/{len(y_test)}, C={C:g}, sigma={sigma:.4g}"
        once = name.startswith("evenodd")  # minutes per SVC fit
        for busy in (False,) if once else (False, True):
            with busy_core() if busy else nullcontext():
                times = _best_times(ours, reference, 1 if once else repeats)
            key = f"svm_{name}_busy_vs_svc" if busy else f"svm_{name}_vs_svc"
            results.append(_result(
                key, f"SVMClassifier fit+predict on {what}" + (", a busy second core" if busy else ""),
                f"SVC(C={C:g}, gamma={1.0 / (2.0 * sigma**2):.4g})", times, TARGETS[key],
            ))
            if not busy:
                results[-1]["anchor"] = intelex_anchor(X_train, y_train, X_test, y_test, C, sigma)
                results[-1]["same_memory"] = svc_given_lkms_memory(X_train, y_train, X_test, y_test, C, sigma)
    return results


def mnist_pixels(data_dir: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MNIST's official training and test digits, pixels scaled to [0, 1]."""
    from lkm.data import load_dataset

    data = load_dataset("mnist", data_dir=data_dir)
    X = np.asarray(data.X, dtype=np.float64)
    X = X / 255.0 if X.max() > 1.0 else X
    split = _predefined(data)
    return X[np.asarray(split["train"])], X[np.asarray(split["test"])]


def _approximate_neighbors(
    key: str, where: str, X_train: np.ndarray, X_query: np.ndarray, repeats: int
) -> list[dict[str, Any]]:
    """Comparisons (m) and (n): each approximate backend's k-NN query of every row of
    ``X_query`` against lkm's exact one, best of ``repeats``; recall@k as the accuracy."""
    import importlib.util

    from lkm.numerics.neighbors import make_neighbors, neighbor_recall

    exact = make_neighbors("exact").fit(X_train)
    m = len(X_query)
    exact_idx = exact.kneighbors(X_query, ANN_K)[1]
    results = []
    for backend, params in [("annoy", {"n_trees": 10}), ("hnswlib", {})]:
        if backend == "hnswlib" and importlib.util.find_spec("hnswlib") is None:
            continue
        t0 = time.perf_counter()
        approx = make_neighbors(backend, random_state=0, **params).fit(X_train)
        build = time.perf_counter() - t0

        def approximate_query(a: Any = approx) -> Any:
            return a.kneighbors(X_query, ANN_K)[1]

        ours_s, ref_s, idx, _ = _best_times(approximate_query, lambda: exact.kneighbors(X_query, ANN_K)[1], repeats)
        recall = neighbor_recall(idx, exact_idx)
        name = f"{backend}_{key}_vs_exact"
        settings = ", ".join(f"{p}={getattr(approx, p)}" for p in ("n_trees", "search_k", "M", "ef_construction", "ef")
                             if hasattr(approx, p))
        result = _result(name, f"{backend} ({settings}) k={ANN_K} on {where}: {m / ours_s:,.0f} queries/s, "
                               f"built in {build:.2f} s, recall@{ANN_K} {recall:.4f}",
                         f"ExactNeighbors: {m / ref_s:,.0f} queries/s", (ours_s, ref_s, recall, 1.0), TARGETS[name])
        least = ANN_MIN_RECALL[backend]
        result["passed"] = result["passed"] and (least is None or recall >= least)
        results.append(result)
    return results


def _gram_vs_rbf_kernel(X: np.ndarray, repeats: int) -> list[dict[str, Any]]:
    """Comparison (q): the Gaussian Gram of the training rows, ``gaussian_kernel`` (built in
    one buffer) vs ``rbf_kernel``, on one BLAS thread and on the process's threads, best of
    ``repeats`` (at least 5: a Gram takes tens of milliseconds). "acc ours" is the largest
    entry difference from rbf_kernel's matrix."""
    from sklearn.metrics.pairwise import rbf_kernel

    from lkm.numerics.kernels import gaussian_kernel
    from lkm.numerics.threads import blas_threads

    gamma = 1.0 / (2.0 * SIGMA**2)
    results = []
    for key, threads in (("gram_1thread_vs_rbf_kernel", 1), ("gram_vs_rbf_kernel", None)):
        with blas_threads(threads):
            ours_s, ref_s, K, R = _best_times(lambda: gaussian_kernel(X, sigma=SIGMA),
                                              lambda: rbf_kernel(X, gamma=gamma), max(repeats, 5))
        where = "one BLAS thread" if threads == 1 else "the process's BLAS threads"
        results.append(_result(key, f"gaussian_kernel(sigma={SIGMA}), {len(X)} rows, {where}",
                               f"rbf_kernel(gamma={gamma:g})", (ours_s, ref_s, float(np.abs(K - R).max()), 0.0),
                               TARGETS[key]))
    return results


def format_bench(results: list[dict[str, Any]]) -> str:
    """A plain-text table of :func:`run_bench` results."""
    header = ("comparison", "ours s", "ref s", "ratio", "target", "ok", "acc ours", "acc ref")
    rows = [
        (
            r["name"],
            f"{r['ours_seconds']:.4f}",
            f"{r['reference_seconds']:.4f}",
            f"{r['ratio']:.3f}",
            f"<= {r['target']:g}" if r["target"] is not None else f"<= {r['target_seconds']:g} s",
            "yes" if r["passed"] else "NO",
            f"{r['ours_accuracy']:.4f}",
            f"{r['reference_accuracy']:.4f}",
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [f"{r['name']}: {r['ours']}  vs  {r['reference']}" for r in results]
    lines += [f"{r['name']}: the fit reaches {r['fit_gflops']:.1f} GFLOP/s, {100 * r['fit_dgemm_fraction']:.0f} % "
              f"of dgemm ({r['dgemm_gflops']:.1f} GFLOP/s)" for r in results if "fit_dgemm_fraction" in r]
    lines += [
        f"{r['name']} anchor: {a['name']} {a['seconds']:.2f} s (ours / anchor {r['ours_seconds'] / a['seconds']:.2f}), "
        f"accuracy {a['accuracy']:.4f}" if "seconds" in a else f"{r['name']} anchor: {a['note']}"
        for r in results if (a := r.get("anchor"))
    ]
    lines += [
        f"{r['name']} given lkm's memory: {a['name']} {a['seconds']:.2f} s (ours / it "
        f"{r['ours_seconds'] / a['seconds']:.2f}), accuracy {a['accuracy']:.4f}"
        for r in results if (a := r.get("same_memory"))
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_bench(run_bench()))
