"""C-SVM with a Gaussian kernel through LIBSVM (libsvm-official), as in Tsuji et al., Sec. 9.

Training is LIBSVM's own C-SVC. Decision values are computed in numpy from the trained
model (support vectors, coefficients, rho, per-class counts, label order) exactly as
LIBSVM's ``svm_predict_values`` does, so the fitted estimator holds plain arrays only
(picklable, no ctypes model).

Two training routes give the same model (:func:`choose_route`, measured with one
OpenMP thread against scikit-learn's ``SVC`` in the same process):

- ``"precomputed"`` (``-t 4``): the Gaussian (or linear) Gram matrix, its upper triangle
  built block by block with matrix products (from a :class:`DistanceCache` when given)
  and written straight into LIBSVM's input, mirrored below the diagonal, at 8 bytes per
  entry (two rows share one node array: :func:`_precomputed_problem`); LIBSVM then looks
  kernel values up. Building it costs n²/2 products whatever the problem, and pays where
  LIBSVM's own kernel is slow: its dot product is a scalar merge of (index, value) lists,
  about 6× slower than ``SVC``'s dense dot product on 784 MNIST pixels (n = 2,000: LIBSVM's
  own kernel 9.4 s, SVC 1.5 s, precomputed 0.37 s). Used for at least
  :data:`PRECOMPUTED_MIN_FEATURES` stored features per row, two classes or one-vs-rest
  (one Gram shared by all C models), and a Gram within :data:`PRECOMPUTED_MAX_BYTES` and
  :data:`PRECOMPUTED_MEMORY_SHARE` of the available memory (MNIST: up to about 33,000
  rows on 24 GB).
- ``"rbf"``/``"linear"`` (``-t 2``/``-t 0``): LIBSVM evaluates the kernel on the feature
  rows, given as their nonzero entries (:func:`_feature_problem`); for the Gaussian
  kernel after subtracting each column's most common extreme value
  (:func:`sparsest_translation`: MNIST's background pixels become zeros, ~150 stored
  values per row instead of 784). With few features this is cheaper than any Gram
  (breast cancer, 455 rows × 30: 2.6 ms against 6.3 ms precomputed; letter, 16 features,
  two classes of 1,263 rows: 4 ms against 19 ms; 26 classes one-vs-one, whose pairs each
  need only their own rows, n = 5,000: 0.9 s against 5.3 s); from spambase's 57 features
  on, the Gram wins (4,140 rows: 0.20 s against 0.31 s, SVC 0.17 s).
- ``backend="intelex"``: scikit-learn-intelex's SVC instead of LIBSVM (see the class doc).

LIBSVM (as libsvm-official builds it) evaluates kernel columns in OpenMP loops. Every
training runs them on one thread (:func:`_one_openmp_thread`, LIBSVM's own libgomp only,
restored after): a column is microseconds of work, and a second thread that spins or
waits for a busy core made training many times slower than ``SVC`` (letter, n = 4,000,
26 classes, loaded machine: 18-22 s on two threads, 0.43-0.53 s on one, SVC 0.38 s),
and it competed with BLAS and joblib workers. Small matrix products (Gram, prediction)
run on one BLAS thread for the same reason (:func:`lkm.numerics.threads.small_blas`). One thread computes
the same numbers.

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
from libsvm.svm import (
    PRINT_STRING_FUN,
    ctypes_print_null,
    svm_model,
    svm_node,
    svm_parameter,
    svm_problem,
    toPyModel,
)
from libsvm.svm import libsvm as clib
from numpy.typing import NDArray
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_class_weight

from lkm.errors import NumericalError
from lkm.methods.base import (
    SCALE,
    SIGMA_CONSTRAINT,
    LocalKernelClassifier,
    available_unless,
    canonical_row_order,
)
from lkm.methods.risk import check_sample_weight
from lkm.numerics.kernels import (
    CHECK_MIN_BYTES,
    DistanceCache,
    available_memory,
    exponent_scale,
    gaussian_from_sq,
    gaussian_gram,
    mirror_lower_triangle,
    sq_dists,
    squared_euclidean,
)
from lkm.numerics.threads import small_blas

#: Largest precomputed problem built (8 bytes per kernel entry, :func:`_precomputed_problem`:
#: MNIST 3-vs-8's 11,982 rows need 1.15 GB, 32,000 rows 8.2 GB; above, LIBSVM's own kernel is
#: ~6x slower per value on 784 features than SVC's dense one) ...
PRECOMPUTED_MAX_BYTES = 16 * 2**30
#: ... and at most this share of the memory available when the fit starts (two such fits
#: started together by two workers take at most 0.4 + 0.4 * 0.6 of it).
PRECOMPUTED_MEMORY_SHARE = 0.4
#: Stored (nonzero) features per row from which the precomputed route is the cheaper one.
PRECOMPUTED_MIN_FEATURES = 40
#: More classes than this train one-vs-one on LIBSVM's own kernel (see the module doc).
PRECOMPUTED_MAX_CLASSES = 2
#: :func:`sparsest_translation` translates X only if that zeros at least this share of its entries.
TRANSLATION_MIN_GAIN = 0.2
#: ... and only for X of at least this many entries.
TRANSLATION_MIN_SIZE = 2**16
#: Tests set "precomputed" or "own" to train every Gaussian/linear problem on that route.
FORCE_ROUTE: str | None = None
#: Kernel rows are written to LIBSVM's node array in blocks of about this many bytes.
GRAM_BLOCK_BYTES = 2**23
#: ``cache_size="auto"``: LIBSVM's kernel cache in MB on the precomputed route and for
#: ``backend="intelex"`` (scikit-learn's ``SVC`` default) ...
DEFAULT_CACHE_MB = 200.0
#: ... and on LIBSVM's own-kernel route, room for every kernel column (n² floats) within
#: this share of the memory available when the fit starts (LIBSVM allocates the cache
#: column by column, only as used). Recomputing a column costs n sparse dot products
#: there: MNIST even/odd, 20,000 rows, one thread, same model: 188.5 s at 200 MB,
#: 88.1 s with every column cached (scikit-learn's SVC at 200 MB: 131.7 s).
OWN_KERNEL_CACHE_SHARE = 0.4

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
    """threadpoolctl's controller of the OpenMP runtimes loaded in this process (made
    once); only the fallback of :func:`_libsvm_openmp`."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="openmp")


@functools.lru_cache(maxsize=1)
def _libsvm_openmp() -> tuple[Any, Any] | None:
    """``(omp_get_max_threads, omp_set_num_threads)`` of the OpenMP runtime LIBSVM itself
    is linked to, or None if they cannot be found that way.

    ``dlsym`` on LIBSVM's library handle searches that library's own dependencies, so
    this is exactly LIBSVM's libgomp (here the system one) and not the copy scikit-learn
    bundles for its own OpenMP code, which stays untouched.
    """
    try:
        get, set_ = clib.omp_get_max_threads, clib.omp_set_num_threads
    except AttributeError:  # e.g. Windows: GetProcAddress does not search dependencies
        return None
    get.restype, get.argtypes = ctypes.c_int, []
    set_.restype, set_.argtypes = None, [ctypes.c_int]
    return get, set_


@contextlib.contextmanager
def _one_openmp_thread() -> Iterator[None]:
    """LIBSVM's OpenMP loops run on one thread inside the block (restored after).

    OpenMP's thread limit is per calling thread, so this holds for the fit in this
    thread only (and joblib thread workers each set their own).
    """
    knob = _libsvm_openmp()
    if knob is None:
        with _openmp_controller().limit(limits=1):
            yield
        return
    get, set_ = knob
    old = get()
    set_(1)
    try:
        yield
    finally:
        set_(old)


#: The seed of C's ``rand()`` before a LIBSVM fit with Platt scaling (:func:`_seed_c_rand`).
PLATT_SEED = 0


def _seed_c_rand() -> None:
    """Seed the C library's ``rand()``, which LIBSVM's Platt scaling draws its internal
    cross-validation folds from (``svm_binary_svc_probability``): the process shares one
    state, so without this two identical fits in one process get different probabilities."""
    try:
        ctypes.CDLL(ctypes.util.find_library("c")).srand(PLATT_SEED)
    except (OSError, AttributeError, TypeError):  # no C library to seed: folds as LIBSVM draws them
        pass


def svm_train(problem: svm_problem, param: svm_parameter) -> Any:
    """LIBSVM's ``svm_train`` on a problem built here, on one OpenMP thread.

    libsvm-official's wrapper of the same name first re-checks every row's serial number
    in Python (a ctypes call per row), redundant for the arrays built here.
    """
    clib.svm_set_print_string_function(param.print_func)
    err = clib.svm_check_parameter(problem, param)
    if err:
        raise ValueError(f"LIBSVM: {err.decode()}")
    if param.probability:
        _seed_c_rand()
    with _one_openmp_thread():
        model = toPyModel(clib.svm_train(problem, param))
    model.x_space = problem.x_space  # the support vectors point into the node array
    return model


@functools.lru_cache(maxsize=64)
def _parameter(options: str) -> svm_parameter:
    """LIBSVM parameters for ``options`` (without ``-q``), printing through :data:`SILENT_PRINT`.

    Parsed once per distinct string: LIBSVM only reads them, and SVM-KNN trains thousands
    of local SVMs with the same options (libsvm-official's parser was 5 % of its time)."""
    param = svm_parameter(options)
    param.print_func = SILENT_PRINT
    return param


def _node_rows(n: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """An (n, width) LIBSVM node array and a writable view of its index fields.

    Writing the int32 index field through numpy's structured path is slow; on a
    little-endian machine an int64 view of the (index, padding) slot writes it as well.
    """
    nodes = np.empty((n, width), dtype=_NODE)
    fast_index = sys.byteorder == "little" and _NODE.fields["value"][1] == 8
    return nodes, nodes.view(np.int64)[:, 0::2] if fast_index else nodes["index"]


def _problem(buffer: np.ndarray, row_offsets: np.ndarray, targets: np.ndarray, n_max: int) -> svm_problem:
    """A LIBSVM problem whose row i starts ``row_offsets[i]`` bytes into ``buffer``
    (pointers set in one vectorized assignment; LIBSVM does not copy them). ``problem.y``
    may be rewritten between trainings (LIBSVM does not modify the problem), so
    one-vs-rest reuses one node array for all classes."""
    n = targets.size
    problem = svm_problem.__new__(svm_problem)
    problem.l = n
    problem.n = n_max
    problem.y = (ctypes.c_double * n)()
    np.ctypeslib.as_array(problem.y, (n,))[:] = targets
    problem.x = (ctypes.POINTER(svm_node) * n)()
    pointers = np.ctypeslib.as_array(ctypes.cast(problem.x, ctypes.POINTER(ctypes.c_uint64)), (n,))
    pointers[:] = np.uint64(buffer.ctypes.data) + row_offsets.astype(np.uint64)
    problem.x_space = buffer  # keeps the nodes alive with the problem (and the model)
    return problem


def _precomputed_problem(
    n: int, targets: np.ndarray, fill: Callable[[int, int, int, np.ndarray], Any], symmetric: bool = True
) -> svm_problem:
    """A LIBSVM problem for ``-t 4`` at 8 bytes per kernel entry, half of LIBSVM's node array.

    LIBSVM reads a precomputed row only through ``.value`` fields: row j's serial number
    ``x[j][0].value`` and the entry ``x[i][serial].value`` (``kernel_precomputed`` and
    ``k_function`` in libsvm-official's svm.cpp; only ``svm_save_model``, never called
    here, reads ``.index``). A node is 16 bytes, (index, padding) then the double value, so
    the value fields of one row leave every other 8 bytes unused. Two rows therefore share
    one array of n + 2 nodes: row 2m starts at the pair's first byte and row 2m + 1 eight
    bytes later, so the odd row's values lie in the even row's index slots. Node s of the
    even row holds its value at double 2s + 1 of the pair, node s of the odd row at 2s + 2;
    node 0 is the serial number (1-based), nodes 1..n the kernel row.

    ``fill(start, stop, first, out)`` writes the kernel entries of rows ``start:stop`` and
    columns ``first:n`` into ``out`` (shape (stop - start, n - first)), block by block
    (:data:`GRAM_BLOCK_BYTES`, an even number of rows), so the Gram matrix is never held
    twice. ``symmetric``: only the upper triangle is computed (``first = start``) and each
    block is also written transposed below the diagonal, so half the products and
    exponentials are taken and the matrix LIBSVM reads is exactly symmetric; otherwise
    (a Gram given by the user) whole rows are copied (``first = 0``).
    """
    pairs = (n + 1) // 2
    width = 2 * (n + 2)  # doubles per pair of rows
    buffer = np.empty(pairs * width)
    stride = buffer.strides[0]
    nodes_of = [  # parity -> (pairs, n + 1) view of those rows' nodes 0..n
        np.lib.stride_tricks.as_strided(buffer[1 + parity:], shape=(pairs, n + 1),
                                        strides=(width * stride, 2 * stride))
        for parity in (0, 1)
    ]

    def write(rows: slice, cols: slice, values: np.ndarray) -> None:
        """Kernel entries ``values`` of rows ``rows`` (even start) and columns ``cols``."""
        for parity in (0, 1):
            first_pair = (rows.start + parity) // 2
            part = values[parity::2]
            nodes_of[parity][first_pair : first_pair + part.shape[0], 1 + cols.start : 1 + cols.stop] = part

    block_rows = min(n, max(2, GRAM_BLOCK_BYTES // (8 * n)))
    block_rows += block_rows % 2
    kernel = np.empty(block_rows * n)  # contiguous blocks: numpy's vectorized exp needs it
    serial = np.arange(1, n + 1, dtype=np.float64)
    nodes_of[0][:, 0] = serial[0::2]
    nodes_of[1][: n // 2, 0] = serial[1::2]
    for start in range(0, n, block_rows):
        stop = min(start + block_rows, n)
        first = start if symmetric else 0
        block = kernel[: (stop - start) * (n - first)].reshape(stop - start, n - first)
        fill(start, stop, first, block)
        if symmetric:  # the diagonal square's lower half from its upper half
            mirror_lower_triangle(block[:, : stop - start].T)
        write(slice(start, stop), slice(first, n), block)
        if symmetric and stop < n:
            write(slice(stop, n), slice(start, stop), block[:, stop - start :].T)
    offsets = (np.arange(n) // 2) * (width * stride) + (np.arange(n) % 2) * stride
    return _problem(buffer, offsets, targets, n)


def _feature_problem(X: np.ndarray, targets: np.ndarray) -> svm_problem:
    """A LIBSVM problem of the feature rows of dense ``X`` (for ``-t 0``/``-t 2``): its
    nonzero entries as ``index:value`` nodes, built in numpy.

    LIBSVM's dot product merges the two rows' (index, value) lists, so storing the zeros
    too (a "dense" node row) could only make it slower; for a dense X (e.g. pixels scaled
    to [-1, 1]) the two layouts are the same nodes. Built straight from X, this skips
    scipy's CSR conversion and libsvm-official's copy of it (0.5 s of a 4,000-row MNIST fit).
    """
    n, p = X.shape
    nonzero = X != 0
    if nonzero.all():
        nodes, index_slots = _node_rows(n, p + 1)
        index_slots[:, :p] = np.arange(1, p + 1)
        index_slots[:, p] = -1
        nodes["value"][:, :p] = X
        nodes["value"][:, p] = 0.0
        return _problem(nodes.reshape(-1), np.arange(n) * ((p + 1) * _NODE.itemsize), targets, p)
    counts = nonzero.sum(axis=1)
    ends = np.cumsum(counts + 1)  # each row ends with its (-1) terminator node
    rows, cols = np.nonzero(nonzero)
    nodes = np.empty(int(ends[-1]) if n else 0, dtype=_NODE)
    at = np.arange(rows.size) + rows  # row r's nodes come after r terminators
    nodes["index"][at] = cols + 1
    nodes["value"][at] = X[nonzero]
    nodes["index"][ends - 1] = -1
    nodes["value"][ends - 1] = 0.0
    return _problem(nodes, (ends - counts - 1) * _NODE.itemsize, targets, p)


def sparsest_translation(X: np.ndarray) -> np.ndarray:
    """``X - t``, t per column the value among 0, the column's minimum and its maximum that
    occurs most often (ties: 0, then the minimum); ``X`` itself when that would zero fewer
    than :data:`TRANSLATION_MIN_GAIN` of the entries, or for fewer than
    :data:`TRANSLATION_MIN_SIZE` entries (where counting costs more than it can save).

    The Gaussian kernel depends on x - y only, so LIBSVM's own kernel may be given
    ``X - t`` for any t; its dot product merges the rows' nonzero (index, value) lists, so
    the fewer nonzeros the faster. Pixels scaled to [-1, 1] have their background at the
    minimum: MNIST's 784 stored values per row become about 150 (same model; the kernel
    values differ by round-off only, as between the routes)."""
    n = X.shape[0]
    if X.size < TRANSLATION_MIN_SIZE:
        return X
    candidates = np.vstack([np.zeros(X.shape[1]), X.min(axis=0), X.max(axis=0)])
    counts = np.vstack([n - np.count_nonzero(X, axis=0)]
                       + [np.count_nonzero(X == c, axis=0) for c in candidates[1:]])
    best = np.argmax(counts, axis=0)
    columns = np.arange(X.shape[1])
    if counts[best, columns].sum() - counts[0].sum() < TRANSLATION_MIN_GAIN * X.size:
        return X
    translated: NDArray[np.float64] = X - candidates[best, columns]
    return translated


def choose_route(
    n: int, stored_per_row: float, n_class: int, kernel: str, ova: bool = False, own_kernel_exact: bool = True
) -> str:
    """The training route, ``"precomputed"`` or LIBSVM's own kernel (``"rbf"``/``"linear"``),
    by the measured cost rule in the module doc; :data:`FORCE_ROUTE` overrides it.
    ``own_kernel_exact=False`` (a gamma LIBSVM's one double cannot hold) takes the
    precomputed route whenever its node array fits, whatever it costs."""
    own = "linear" if kernel == "linear" else "rbf"
    if kernel == "precomputed":
        return "precomputed"
    if FORCE_ROUTE is not None:
        return "precomputed" if FORCE_ROUTE == "precomputed" else own
    cheaper = stored_per_row >= PRECOMPUTED_MIN_FEATURES and (ova or n_class <= PRECOMPUTED_MAX_CLASSES)
    if own_kernel_exact and not cheaper:
        return own
    node_bytes = ((n + 1) // 2) * 2 * (n + 2) * 8  # _precomputed_problem's
    # reading the system's memory figures costs about a millisecond: only for large arrays
    fits = node_bytes <= PRECOMPUTED_MAX_BYTES and (
        node_bytes <= CHECK_MIN_BYTES or node_bytes <= PRECOMPUTED_MEMORY_SHARE * available_memory()[0])
    return "precomputed" if fits else own


class SVMClassifier(LocalKernelClassifier):
    """LIBSVM C-SVC with the Gaussian kernel ``exp(-||x-y||²/(2σ²))``, i.e. gamma = 1/(2σ²).

    Training is LIBSVM's own C-SVC (libsvm-official, Chang and Lin [1]_), the SVM Tsuji
    et al. [2]_ compare LPL with (Sec. 4 and 9); decision values are computed in numpy from the trained model
    exactly as LIBSVM's ``svm_predict_values`` does, so the fitted estimator holds plain
    arrays only. ``SVMClassifier()`` and scikit-learn's ``SVC()`` fit the same model.

    Two classes: ``decision_function`` is LIBSVM's decision value, positive for
    ``classes_[1]``. More classes, ``multiclass="ovo"``: LIBSVM's one-vs-one voting;
    ``decision_function`` returns, per class, its number of votes plus a fraction in
    (0, 1) that decreases along LIBSVM's label order, so its argmax is LIBSVM's
    prediction (ties go to the class LIBSVM lists first: the lowest class index, since
    LIBSVM is trained on the rows in :func:`~lkm.methods.base.canonical_row_order`, which
    also makes its solution independent of the order of the training rows). ``"ova"``: the C one-vs-rest
    decision values (n × C), positive for "this class"; the largest wins (exact ties:
    the larger prior, then the lower class index). With two classes both schemes are
    the same single LIBSVM model.

    ``fit(X, y, sample_weight=w)`` trains the same C-SVC (kernel, gamma, C, tolerance,
    shrinking, class weights, multiclass scheme) through scikit-learn's ``SVC``, the
    LIBSVM build with instance weights (row i's C is ``C · w_i``), since
    libsvm-official's ``svm_problem`` has none; ``info_['backend']`` then says so.
    Zero-weight rows are dropped before training, as if removed (with a numeric
    ``sigma``: ``"scale"`` is resolved from every row of X, as ``SVC``'s
    ``gamma="scale"``). Unit weights predict as the unweighted fit; the decision values
    of the two LIBSVM builds agree within the solver's tolerance, not bit for bit.

    scipy sparse X is densified once at validation: every route computes on dense rows,
    so sparse and dense input fit the same model; memory is that of the dense X.

    Parameters
    ----------
    C : float, default=1.0
        The penalty parameter of the C-SVC.
    sigma : float or "scale", default="scale"
        The Gaussian width. ``"scale"`` (Tsuji et al. sweep sigma and fix no value) is
        resolved at fit to sqrt(p·Var(X)/2), the width of scikit-learn's
        ``gamma="scale"``. Unused unless ``kernel="gaussian"``.
    tol : float, default=1e-3
        LIBSVM's stopping tolerance (``-e``).
    cache_size : float or "auto", default="auto"
        LIBSVM's kernel cache in MB (``-m``). ``"auto"`` is scikit-learn's 200 MB on the
        precomputed route, where a kernel value is a lookup, and on LIBSVM's own-kernel
        route (large n) room for every kernel column within
        :data:`OWN_KERNEL_CACHE_SHARE` of the available memory; the model does not
        depend on it.
    shrinking : bool, default=True
        LIBSVM's shrinking heuristic (``-h``).
    probability : bool, default=False
        Also train LIBSVM's Platt scaling (``-b 1``: an internal 5-fold CV, so fitting
        is slower) and enable :meth:`predict_proba`. The decision function and
        ``predict`` do not depend on it. Not with ``sample_weight``.
    kernel : {"gaussian", "linear", "precomputed"}, default="gaussian"
        ``"linear"`` uses x·y (the "linear SVM" rows of Cevikalp et al., Tables I-II);
        ``"precomputed"`` takes the Gram matrix as X in ``fit`` (n × n) and
        K(queries, training) in ``decision_function``/``predict``, as scikit-learn's
        ``SVC(kernel="precomputed")`` (used by :class:`~lkm.methods.SVMKNN`).
    multiclass : {"ovo", "ova"}, default="ovo"
        LIBSVM's one-vs-one, or one binary LIBSVM model per class (class vs rest, the
        "one-against-all procedure" of Cevikalp et al., Sec. IV) on one shared LIBSVM
        problem (one Gram matrix on the precomputed route).
    class_weight : dict, "balanced" or None, default=None
        As scikit-learn's ``SVC``: None (every class weight 1), ``{class: weight}``
        (missing classes 1) or ``"balanced"`` (n_samples / (n_classes · count)), through
        LIBSVM's ``-wi`` per-label weights (class c's C is ``C · weight``). With
        ``multiclass="ova"`` and more classes, class c's model weighs its label by c's
        weight and the "rest" label by the mean weight of the rest's rows.
    backend : {"libsvm", "intelex"}, default="libsvm"
        ``"intelex"`` trains the same model with scikit-learn-intelex's SVC (oneDAL's
        SMO solver, ``pip install 'lkm[fast]'``), then predicts from its support
        vectors, coefficients and intercepts exactly as for LIBSVM's model; the decision
        values agree with LIBSVM's to about ``tol``, not bit for bit. Without
        ``probability`` only (oneDAL's Platt scaling is not LIBSVM's).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    sigma_ : float
        The Gaussian width in use (also ``info_['sigma']``).
    multiclass_ : str
        The scheme in use: ``"ovo"``, or ``"ova"`` for more than two classes with
        ``multiclass="ova"``.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors in the training data.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors (rows of the Gram matrix for ``kernel="precomputed"``).
    n_support_ : ndarray of shape (n_classes,)
        One-vs-one: support vectors per class, in LIBSVM's label order.
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV)
        One-vs-one: LIBSVM's coefficients ``sv_coef``.
    rho_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        One-vs-one: LIBSVM's ``rho`` per pair of classes.
    libsvm_class_order_ : ndarray of shape (n_classes,)
        One-vs-one: the class index of each of LIBSVM's labels, in its order.
    ova_coef_ : ndarray of shape (n_classes, n_SV)
        One-vs-rest: each class's coefficients, positive for "this class".
    ova_rho_ : ndarray of shape (n_classes,)
        One-vs-rest: each class's intercept, ``K(x, support_vectors_) @ ova_coef_.T - ova_rho_``.
    prob_a_, prob_b_ : ndarray
        With ``probability``: LIBSVM's Platt sigmoid parameters (per pair, or per class
        for one-vs-rest).
    info_ : dict
        ``route`` (``"precomputed"``, ``"rbf"``, ``"linear"``, ``"svc"`` or
        ``"intelex"``), ``sigma``, ``n_support``, ``n_support_per_class`` or
        ``n_support_per_model``; with ``sample_weight`` also ``backend`` (e.g.
        ``"sklearn-svc (sample_weight)"``) and ``sample_weight_sum``.

    See Also
    --------
    lkm.methods.LocalizedProjectionLearning : The local method Tsuji et al. compare with.
    lkm.methods.NPPSSVM : This SVM on the patterns NPPS selects.
    lkm.methods.SVMKNN : This SVM trained on each query's neighbours.

    References
    ----------
    .. [1] C.-C. Chang, C.-J. Lin, "LIBSVM: A Library for Support Vector Machines",
       ACM Transactions on Intelligent Systems and Technology 2(3), 2011.
    .. [2] K. Tsuji, M. Kudo, A. Tanaka, "Localized Projection Learning", Structural,
       Syntactic, and Statistical Pattern Recognition (S+SSPR), LNCS, Springer, 2010,
       Sec. 4 and 9 (the C-SVM with a Gaussian kernel LPL is compared with).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from lkm.methods import SVMClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(axis=0)) / X.std(axis=0)
    >>> clf = SVMClassifier(C=10.0).fit(X[:400], y[:400])
    >>> print(round(clf.score(X[400:], y[400:]), 3))
    0.988
    >>> weighted = SVMClassifier(C=10.0).fit(X[:400], y[:400], sample_weight=1.0 + y[:400])
    >>> weighted.info_["backend"]
    'sklearn-svc (sample_weight)'
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "sigma": SIGMA_CONSTRAINT,
        "tol": [Interval(Real, 0, None, closed="neither")],
        "cache_size": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "shrinking": ["boolean"],
        "probability": ["boolean"],
        "kernel": [StrOptions({"gaussian", "linear", "precomputed"})],
        "multiclass": [StrOptions({"ovo", "ova"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "backend": [StrOptions({"libsvm", "intelex"})],
    }
    conditional_params = {"sigma": ("kernel", ("gaussian",))}
    # Fitted attributes (declared for the type checker; set by fit).
    X_fit_: NDArray[np.float64]
    multiclass_: str
    support_: NDArray[np.intp]
    support_vectors_: NDArray[np.float64]
    n_support_: NDArray[np.integer[Any]]
    dual_coef_: NDArray[np.float64]
    rho_: NDArray[np.float64]
    ova_coef_: NDArray[np.float64]
    ova_rho_: NDArray[np.float64]
    prob_a_: NDArray[np.float64]
    prob_b_: NDArray[np.float64]
    libsvm_class_order_: NDArray[np.intp]

    def __init__(
        self,
        C: float = 1.0,
        sigma: float | str = SCALE,
        tol: float = 1e-3,
        cache_size: float | str = "auto",
        shrinking: bool = True,
        probability: bool = False,
        kernel: str = "gaussian",
        multiclass: str = "ovo",
        class_weight: dict[Any, float] | str | None = None,
        backend: str = "libsvm",
    ) -> None:
        self.C = C
        self.sigma = sigma
        self.tol = tol
        self.cache_size = cache_size
        self.shrinking = shrinking
        self.probability = probability
        self.kernel = kernel
        self.multiclass = multiclass
        self.class_weight = class_weight
        self.backend = backend

    def _class_weights(self, y_index: np.ndarray) -> np.ndarray | None:
        """The weight of each class of ``classes_`` (scikit-learn's ``compute_class_weight``), or None."""
        if self.class_weight is None:
            return None
        weights: NDArray[np.float64] = compute_class_weight(self.class_weight, classes=self.classes_,
                                                            y=self.classes_[y_index])
        return weights

    def _weight_options(self, y_index: np.ndarray, ova: bool) -> str:
        """LIBSVM's per-label weights ``-wi w`` for ``class_weight`` ("" for None, and for
        one-vs-rest, whose weights are set per model: :meth:`_ova_weight_options`)."""
        weights = self._class_weights(y_index)
        if weights is None or ova:
            return ""
        # LIBSVM labels as in fit: two classes -1/+1 (classes_[0]/classes_[1]), else the class index
        labels = (-1, 1) if self.classes_.size == 2 else range(self.classes_.size)
        return "".join(f" -w{label} {float(w)!r}" for label, w in zip(labels, weights, strict=True))

    @staticmethod
    def _ova_weights(weights: np.ndarray | None, counts: np.ndarray, c: int) -> tuple[float, float] | None:
        """Class ``c``'s one-vs-rest model: the weight of its class (``weights[c]``) and of
        the rest (the mean weight of the rest's rows, so each side carries the total weight
        its rows have under ``class_weight``); None without weights."""
        if weights is None:
            return None
        rest = np.arange(weights.size) != c
        return float(weights[c]), float(np.dot(weights[rest], counts[rest]) / counts[rest].sum())

    @classmethod
    def _ova_weight_options(cls, weights: np.ndarray | None, counts: np.ndarray, c: int) -> str:
        """LIBSVM's ``-w1 -w-1`` options of class ``c``'s one-vs-rest model (:meth:`_ova_weights`)."""
        pair = cls._ova_weights(weights, counts, c)
        return "" if pair is None else f" -w1 {pair[0]!r} -w-1 {pair[1]!r}"

    def _store_one_vs_rest(self, svs: list[np.ndarray], coefs: list[np.ndarray], rho: np.ndarray,
                           per_model: dict[str, int], order: np.ndarray) -> None:
        """The C one-vs-rest models (support vector positions in the training ``order``,
        coefficients oriented positive for "this class", intercepts) as one support set:
        ``K(x, support_vectors_) @ ova_coef_.T - ova_rho_``. The support vectors stay in
        training order (``support_`` maps them to rows of X): the sums over them, and so the
        decision values, are bit for bit the same for any order of the input rows."""
        positions = np.unique(np.concatenate(svs))
        self.ova_coef_ = np.zeros((len(svs), positions.size))
        for c, (sv, coef) in enumerate(zip(svs, coefs, strict=True)):
            self.ova_coef_[c, np.searchsorted(positions, sv)] = coef
        self.support_ = order[positions]
        self.ova_rho_ = rho
        self.info_["n_support_per_model"] = per_model

    def _solver_options(self, y_index: np.ndarray, ova: bool) -> str:
        """LIBSVM's options for C, tolerance, shrinking, Platt scaling and class weights
        (the kernel's and the cache's are added per route)."""
        options = f"-s 0 -c {float(self.C)!r} -e {float(self.tol)!r} "
        options += f"-h {int(bool(self.shrinking))} -b {int(bool(self.probability))}"
        return options + self._weight_options(y_index, ova)

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None,
            sample_weight: Any = None, check_input: bool = True) -> SVMClassifier:
        """Train LIBSVM (or ``backend``, or scikit-learn's SVC with ``sample_weight``) on X, y.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training samples, or the n × n Gram matrix for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Class labels.
        cache : DistanceCache or None, default=None
            Memoizes the training distances (shared with other fits on the same split).
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Finite non-negative instance weights (row i's C is ``C · w_i``), trained
            through scikit-learn's SVC (see the class description); None is unweighted.
        check_input : bool, default=True
            False skips the parameter and data checks (scikit-learn's convention): for
            callers that train many small models on arrays they built, e.g. SVM-KNN's
            local SVMs.

        Returns
        -------
        SVMClassifier
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y, check_input)
        binary = self.classes_.size == 2
        ova = self.multiclass == "ova" and not binary
        # LIBSVM labels: +1 for classes_[1] and -1 for classes_[0], else the class index;
        # one-vs-rest: +1 for the class and -1 for the rest (set per class below).
        targets = np.where(y_index == 1, 1.0, -1.0) if binary else y_index.astype(np.float64)
        n = X.shape[0]
        if self.kernel == "precomputed" and X.shape[1] != n:
            raise ValueError(f"SVMClassifier(kernel='precomputed') needs a square Gram matrix; got X of shape {X.shape}")
        options = self._solver_options(y_index, ova)
        sigma = self.sigma_
        weights = check_sample_weight(sample_weight, n, type(self).__name__)
        # LIBSVM's solution and its vote ties follow the order of the rows it is given:
        # it trains on the rows in a canonical order, so no prediction depends on theirs
        order = np.arange(n) if self.kernel == "precomputed" else canonical_row_order(X, y_index)
        targets = targets[order]
        if self.backend == "intelex" or weights is not None:
            self._fit_svc(X, y_index, ova, weights, order)
            return self
        stored = float(np.count_nonzero(X)) / max(n, 1) if self.kernel != "precomputed" else float(n)
        # a width whose gamma is not a normal float64 is evaluated exactly only in numpy
        exact = self.kernel != "gaussian" or not isinstance(exponent_scale(2.0 * sigma, sigma), tuple)
        route = choose_route(n, stored, self.classes_.size, self.kernel, ova, own_kernel_exact=exact)
        if route == "precomputed":
            # the Gram is built block by block: each block's product decides its threads
            block_rows = min(n, max(1, GRAM_BLOCK_BYTES // (8 * n)))
            with small_blas(2.0 * block_rows * n * X.shape[1]):
                problem = _precomputed_problem(n, targets, self._gram_filler(X, cache, order),
                                               symmetric=self.kernel != "precomputed")
            options += f" -t 4 -m {self._cache_mb(n, own_kernel=False)!r}"
        elif route == "linear":
            problem = _feature_problem(X[order], targets)
            options += f" -t 0 -m {self._cache_mb(n, own_kernel=True)!r}"
        else:
            gamma = exponent_scale(2.0 * sigma, sigma)
            if isinstance(gamma, tuple):  # LIBSVM takes one double; this one is not a normal float
                raise NumericalError(
                    f"SVMClassifier: sigma={sigma!r} gives gamma = 1/(2 sigma^2) outside float64's "
                    f"normal range, which LIBSVM's built-in kernel (used for {n} training rows: "
                    "their precomputed kernel would not fit in memory) "
                    "cannot evaluate; rescale the features or choose a sigma nearer their scale")
            problem = _feature_problem(sparsest_translation(X)[order], targets)
            options += f" -t 2 -g {gamma!r} -m {self._cache_mb(n, own_kernel=True)!r}"
        self.X_fit_ = X
        self.info_: dict[str, Any] = {"route": route, "sigma": sigma}
        self.multiclass_ = "ova" if ova else "ovo"  # in use: two classes are one model either way
        if ova:
            self._fit_one_vs_rest(problem, y_index[order], options, order)
            return self
        model = svm_train(problem, _parameter(options))

        n_class = model.get_nr_class()
        n_sv = model.get_nr_sv()
        labels = np.asarray(model.get_labels())
        self.libsvm_class_order_ = (labels == 1).astype(np.intp) if binary else labels.astype(np.intp)
        self.n_support_ = np.ctypeslib.as_array(model.nSV, (n_class,)).copy()
        self.support_ = order[np.asarray(model.get_sv_indices(), dtype=np.intp) - 1]  # 1-based
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

    def _fit_svc(self, X: np.ndarray, y_index: np.ndarray, ova: bool, weights: np.ndarray | None,
                 order: np.ndarray) -> None:
        """Train through an ``SVC`` class instead of libsvm-official: scikit-learn-intelex's
        for ``backend="intelex"``, else scikit-learn's own (its bundled LIBSVM, the route of
        ``sample_weight``: libsvm-official's ``svm_problem`` has no instance weights). Same
        C-SVC as LIBSVM's route: kernel, gamma = 1/(2σ²), C, tolerance, shrinking, cache,
        ``class_weight`` and multiclass scheme. The support vectors, coefficients and
        intercepts are stored in LIBSVM's layout (scikit-learn's public attributes:
        ``decision = K(x, SV) @ dual_coef_.T + intercept_``), so prediction is the LIBSVM
        model's. Without ``probability``: oneDAL's Platt scaling is not LIBSVM's, and
        scikit-learn deprecated ``SVC(probability=True)`` in 1.9. The rows are trained on
        in ``order`` (:func:`~lkm.methods.base.canonical_row_order`)."""
        intelex = self.backend == "intelex"
        if intelex and self.probability:
            raise ValueError("SVMClassifier(backend='intelex') does not train LIBSVM's Platt scaling; "
                             "use backend='libsvm' with probability=True")
        if weights is not None and self.probability:
            raise ValueError("SVMClassifier(probability=True) does not take sample_weight: libsvm-official "
                             "has no instance weights and scikit-learn deprecated SVC(probability=True); "
                             "wrap SVMClassifier in sklearn.calibration.CalibratedClassifierCV instead")
        if intelex:
            try:
                from sklearnex.svm import SVC
            except ImportError as error:
                raise ImportError("SVMClassifier(backend='intelex') needs scikit-learn-intelex: "
                                  "pip install 'lkm[fast]' (or pip install scikit-learn-intelex)") from error
        else:
            from sklearn.svm import SVC
        kernel = {"gaussian": "rbf"}.get(self.kernel, self.kernel)
        gamma = 1.0 / (2.0 * self.sigma_**2) if self.kernel == "gaussian" else "scale"
        class_weights = self._class_weights(y_index)

        # scikit-learn's LIBSVM drops zero-weight rows before training and numbers the
        # support vectors within the rows it kept (support_ then indexes those rows only)
        y_index = y_index[order]
        weights = None if weights is None else weights[order]
        kept = None if weights is None or weights.all() else np.flatnonzero(weights)

        def positions(model: Any) -> np.ndarray:  # in the training order
            index = np.asarray(model.support_, dtype=np.intp)
            return index if kept is None else kept[index]

        def solve(targets: np.ndarray, class_weight: dict[Any, float] | None) -> Any:
            svc = SVC(C=float(self.C), kernel=kernel, gamma=gamma, tol=float(self.tol),
                      cache_size=self._cache_mb(X.shape[0], own_kernel=False), shrinking=bool(self.shrinking),
                      class_weight=class_weight)
            return svc.fit(X_svc, targets, sample_weight=weights)

        X_svc = np.ascontiguousarray(X[order])  # scikit-learn's LIBSVM reads C-ordered arrays
        weights = None if weights is None else np.ascontiguousarray(weights)

        self.X_fit_ = X
        self.info_ = {"route": "intelex" if intelex else "svc", "sigma": self.sigma_}
        if weights is not None:
            self.info_["backend"] = ("intelex" if intelex else "sklearn-svc") + " (sample_weight)"
            self.info_["sample_weight_sum"] = float(weights.sum())
        self.multiclass_ = "ova" if ova else "ovo"
        n_class = self.classes_.size
        if ova:
            counts = np.bincount(y_index, minlength=n_class)
            svs, coefs, rho, per_model = [], [], np.empty(n_class), {}
            for c in range(n_class):
                pair = self._ova_weights(class_weights, counts, c)
                model = solve((y_index == c).astype(np.intp), None if pair is None else {1: pair[0], 0: pair[1]})
                svs.append(positions(model))
                coefs.append(model.dual_coef_[0])  # positive for label 1, class c
                rho[c] = -model.intercept_[0]
                per_model[str(self.classes_[c])] = int(model.support_.size)
            self._store_one_vs_rest(svs, coefs, rho, per_model, order)
        else:
            class_weight = None if class_weights is None else dict(enumerate(map(float, class_weights)))
            model = solve(y_index, class_weight)
            # scikit-learn's attributes are LIBSVM's with the classes in classes_ order
            # (support vectors grouped by class); with two classes scikit-learn negates the
            # coefficients and intercept so that positive means classes_[1], LIBSVM's second
            sign = -1.0 if n_class == 2 else 1.0
            self.support_ = order[positions(model)]
            self.n_support_ = np.asarray(model.n_support_, dtype=np.intp)
            self.dual_coef_ = sign * np.asarray(model.dual_coef_, dtype=np.float64)
            self.rho_ = -sign * np.asarray(model.intercept_, dtype=np.float64)
            self.libsvm_class_order_ = np.arange(n_class)
            self.info_["n_support_per_class"] = {
                str(self.classes_[c]): int(s) for c, s in enumerate(self.n_support_)
            }
        self.support_vectors_ = X[self.support_]
        self.info_["n_support"] = int(self.support_.size)

    def _cache_mb(self, n: int, own_kernel: bool) -> float:
        """LIBSVM's kernel cache in MB: ``cache_size`` when a number, else (``"auto"``)
        :data:`DEFAULT_CACHE_MB`, or on the own-kernel route room for all n² kernel
        values within :data:`OWN_KERNEL_CACHE_SHARE` of the available memory. The cache
        decides only how often LIBSVM recomputes a kernel column, never its values: the
        model is the same at every size (tested)."""
        if self.cache_size != "auto":
            return float(self.cache_size)
        if not own_kernel:
            return DEFAULT_CACHE_MB
        whole = 4.0 * n * n / 2**20  # LIBSVM caches columns as 4-byte floats
        if whole <= DEFAULT_CACHE_MB:
            return DEFAULT_CACHE_MB
        return float(max(DEFAULT_CACHE_MB, min(whole, OWN_KERNEL_CACHE_SHARE * available_memory()[0] / 2**20)))

    def _gram_filler(self, X: np.ndarray, cache: DistanceCache | None,
                     order: np.ndarray) -> Callable[[int, int, int, np.ndarray], Any]:
        """``fill(start, stop, first, out)`` for :func:`_precomputed_problem`: the training
        kernel's rows ``start:stop``, columns ``first:``, the rows of X taken in ``order``
        (a given Gram matrix is taken as it is)."""
        if self.kernel == "precomputed":
            return lambda start, stop, first, out: np.copyto(out, X[start:stop, first:])
        sigma = self.sigma_
        if self.kernel == "gaussian" and (cache is not None or X.shape[0] ** 2 * 8 <= GRAM_BLOCK_BYTES):
            D = sq_dists(X, X, cache)  # shared with the cache's other users, or one block
            return lambda start, stop, first, out: gaussian_from_sq(D[np.ix_(order[start:stop], order[first:])],
                                                                    sigma, out=out)
        X = X[order]
        if self.kernel == "linear":
            return lambda start, stop, first, out: np.matmul(X[start:stop], X[first:].T, out=out)

        def fill(start: int, stop: int, first: int, out: np.ndarray) -> None:
            # distances block by block: the n x n float64 matrix is never held
            block = squared_euclidean(X[start:stop], X[first:])
            diagonal = np.arange(max(start, first), stop)
            block[diagonal - start, diagonal - first] = 0.0  # as squared_euclidean(X)
            gaussian_from_sq(block, sigma, out=out)

        return fill

    def _fit_one_vs_rest(self, problem: svm_problem, y_index: np.ndarray, options: str, order: np.ndarray) -> None:
        """One binary LIBSVM model per class on the same ``problem`` (its Gram matrix or feature nodes built
        once, rows in ``order``; ``y_index`` in that order too); only the targets change. Coefficients are stored so that each model's
        value is positive for "its class": ``K(x, support_vectors_) @ ova_coef_.T - ova_rho_``."""
        n_class = self.classes_.size
        y_out = np.ctypeslib.as_array(problem.y, (problem.l,))
        svs, coefs, rho, prob_b, prob_a = [], [], np.empty(n_class), np.empty(n_class), np.empty(n_class)
        per_model = {}
        weights, counts = self._class_weights(y_index), np.bincount(y_index, minlength=n_class)
        for c in range(n_class):
            y_out[:] = np.where(y_index == c, 1.0, -1.0)
            model = svm_train(problem, _parameter(options + self._ova_weight_options(weights, counts, c)))
            n_sv = model.get_nr_sv()
            sign = 1.0 if model.get_labels()[0] == 1 else -1.0  # LIBSVM's value favours its first label
            svs.append(np.asarray(model.get_sv_indices(), dtype=np.intp) - 1)  # 1-based positions
            coefs.append(sign * np.ctypeslib.as_array(model.sv_coef[0], (n_sv,)))
            rho[c] = sign * model.rho[0]
            if self.probability:  # P(class c) = 1/(1 + exp(f·A + B)) in this orientation
                prob_a[c], prob_b[c] = model.probA[0], sign * model.probB[0]
            per_model[str(self.classes_[c])] = int(n_sv)
        self._store_one_vs_rest(svs, coefs, rho, per_model, order)
        if self.probability:
            self.prob_a_, self.prob_b_ = prob_a, prob_b
        self.support_vectors_ = self.X_fit_[self.support_]
        self.info_["n_support"] = int(self.support_.size)

    def _kernel_to_support_vectors(self, X: np.ndarray, cache: DistanceCache | None) -> np.ndarray:
        if self.kernel == "precomputed":
            return X[:, self.support_]
        with small_blas(2.0 * X.shape[0] * self.support_.size * X.shape[1]):
            if self.kernel == "linear":
                return X @ self.support_vectors_.T
            if cache is None:
                return gaussian_gram(X, self.support_vectors_, self.sigma_)
        D = cache.sq_dists(X, self.X_fit_)[:, self.support_]  # a gathered copy: reuse it
        return gaussian_from_sq(D, self.sigma_, out=D)

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None,
                          check_input: bool = True) -> np.ndarray:
        """LIBSVM's decision values (two classes), one-vs-one votes or one-vs-rest values.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples, or K(queries, training) for ``kernel="precomputed"``.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances.
        check_input : bool, default=True
            False skips the data checks, as in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            See the class description.
        """
        X = self._validate_query(X, check_input)
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

    def predict(self, X: np.ndarray, cache: DistanceCache | None = None, check_input: bool = True) -> np.ndarray:
        """Class labels from :meth:`decision_function` (LIBSVM's prediction).

        Exact ties go by the rule of :class:`~lkm.methods.LocalKernelClassifier`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples, or K(queries, training) for ``kernel="precomputed"``.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances.
        check_input : bool, default=True
            False skips the data checks, as in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_queries,)
            Predicted class labels.
        """
        decision = self.decision_function(X, cache, check_input=check_input)
        return self._labels_from_decision(self._check_finite(decision))

    def _pairwise_values(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """LIBSVM's one-vs-one decision values, shape (n, pairs), pairs (i, j), i < j, in
        LIBSVM's label order (``svm_predict_values``); positive favours label i."""
        K = self._kernel_to_support_vectors(X, cache)
        coef, rho, n_class = self.dual_coef_, self.rho_, self.libsvm_class_order_.size
        start = np.concatenate(([0], np.cumsum(self.n_support_)))
        # sums[:, c, k] = K[:, SVs of c] @ coef[k, SVs of c]: one product per class (a pair
        # loop of 2 x 325 matrix-vector products was most of letter's prediction time)
        sums = np.empty((X.shape[0], n_class, n_class - 1))
        for c in range(n_class):
            sv = slice(start[c], start[c + 1])
            sums[:, c, :] = K[:, sv] @ coef[:, sv].T
        i, j = np.triu_indices(n_class, 1)
        return sums[:, i, j - 1] + sums[:, j, i] - rho

    def _no_probability_model(self) -> str | None:
        if self.probability:
            return None
        return ("SVMClassifier has predict_proba only with probability=True (LIBSVM's Platt "
                "scaling, -b 1); use decision_function, or refit with probability=True")

    @available_unless(_no_probability_model)
    def predict_proba(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Class probabilities as LIBSVM's ``svm_predict_probability`` (``probability=True``).

        Each pair's decision value goes through its Platt sigmoid (clipped to
        [1e-7, 1 - 1e-7]), then for more than two classes through the pairwise coupling
        of Wu, Lin and Weng (2004), LIBSVM's ``multiclass_probability``; with
        ``multiclass="ova"`` (more classes) each class's Platt probability of its
        one-vs-rest model (clipped likewise), normalized to sum 1. Without
        ``probability=True`` reading this method raises AttributeError.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples, or K(queries, training) for ``kernel="precomputed"``.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances.

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Probabilities, columns in ``classes_`` order.
        """
        X = self._validate_query(X)
        if self.multiclass_ == "ova":
            f = self._kernel_to_support_vectors(X, cache) @ self.ova_coef_.T - self.ova_rho_
            p = np.clip(_platt(f, self.prob_a_, self.prob_b_), 1e-7, 1.0 - 1e-7)
            normalized: NDArray[np.float64] = p / p.sum(axis=1, keepdims=True)
            return normalized
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


#: Each pointer field of LIBSVM's ``svm_model``: its index as a uint64 in the struct's bytes.
_MODEL_POINTERS = {name: getattr(svm_model, name).offset // 8 for name in ("sv_coef", "rho", "sv_indices", "label")}


@functools.lru_cache(maxsize=1)
def _raw_libsvm() -> tuple[Any, Any]:
    """LIBSVM's ``svm_train`` and ``svm_free_and_destroy_model`` taking and returning
    pointers as plain integers: the same functions of the same loaded library, through a
    second handle so that libsvm-official's prototypes stay as they are (no ctypes object
    is built per call)."""
    lib = ctypes.CDLL(clib._name)
    train, free = lib.svm_train, lib.svm_free_and_destroy_model
    train.restype, train.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p]
    free.restype, free.argtypes = None, [ctypes.c_void_p]
    return train, free


class PrecomputedTrainer:
    """Many LIBSVM trainings on small precomputed Gram matrices of one size, with one set
    of options: model for model what ``SVMClassifier(kernel="precomputed", C=C, tol=tol,
    multiclass=multiclass).fit(gram, y, check_input=False)`` trains, without its per-fit
    costs (SVM-KNN's local SVMs: thousands per fold on 10-40 rows each).

    The estimator's fit spends most of such a training around LIBSVM rather than in it: a
    node array, ``svm_problem`` and model wrapper per training, the options parsed and
    checked each time, the model read through libsvm-official's getters (a Python list per
    array). Here one node array of ``size`` rows is allocated once with its serial numbers
    (each Gram is written into it by one assignment), the problem and the parameters are
    built and checked once, LIBSVM's C ``svm_train`` is called directly on them through
    libsvm-official's ctypes binding, the model's arrays are copied out with ``memmove`` and
    the model is freed at once. The same solver sees the same kernel values, targets and
    options, so the models, and the decision values :class:`SVMClassifier` computes from
    them, are the estimator's bit for bit (tested).

    Parameters
    ----------
    size : int
        The rows (and columns) of every Gram matrix trained on.
    C : float, default=1.0
        The C of every training.
    tol : float, default=1e-3
        LIBSVM's stopping tolerance.
    multiclass : {"ovo", "ova"}, default="ovo"
        The scheme for more than two classes, as :class:`SVMClassifier`'s.

    Attributes
    ----------
    estimator : SVMClassifier
        The estimator :meth:`fit` sets up and returns (the same object each time: use it
        before the next fit). One trainer per thread: every fit rewrites its buffers.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.methods.svm import PrecomputedTrainer, SVMClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(12, 3))
    >>> y = np.repeat([0, 1, 2], 4)
    >>> gram = np.exp(-((X[:, None] - X[None]) ** 2).sum(axis=2) / 2.0)
    >>> fast = PrecomputedTrainer(12, C=10.0, multiclass="ova").fit(gram, y)
    >>> slow = SVMClassifier(C=10.0, kernel="precomputed", multiclass="ova").fit(gram, y)
    >>> bool((fast.decision_function(gram) == slow.decision_function(gram)).all())
    True
    """

    def __init__(self, size: int, C: float = 1.0, tol: float = 1e-3, multiclass: str = "ovo") -> None:
        self.size = int(size)
        self.estimator = SVMClassifier(C=C, tol=tol, kernel="precomputed", multiclass=multiclass)
        nodes = np.zeros((self.size, self.size + 1), dtype=_NODE)
        self._values = nodes["value"]  # node 0 of a row: its serial number; nodes 1..size: the kernel row
        self._values[:, 0] = np.arange(1, self.size + 1)
        row_bytes = (self.size + 1) * _NODE.itemsize
        self._problem = _problem(nodes.reshape(-1), np.arange(self.size) * row_bytes, np.zeros(self.size), self.size)
        self._y = np.ctypeslib.as_array(self._problem.y, (self.size,))
        # class_weight is None: the options do not depend on the labels
        options = self.estimator._solver_options(np.zeros(0, dtype=np.intp), ova=False)
        options += f" -t 4 -m {self.estimator._cache_mb(self.size, own_kernel=False)!r}"
        self._parameter = _parameter(options)
        err = clib.svm_check_parameter(self._problem, self._parameter)
        if err:
            raise ValueError(f"LIBSVM: {err.decode()}")
        self._arguments = (ctypes.pointer(self._problem), ctypes.pointer(self._parameter))
        # memmove targets of the models' arrays (a row per one-vs-rest model) and struct
        self._sv = np.empty((self.size, self.size), dtype=np.intc)
        self._coef = np.empty((self.size, self.size))
        header = np.zeros(ctypes.sizeof(svm_model), dtype=np.uint8)
        n_sv_at = svm_model.l.offset
        self._header = (header, header.ctypes.data, header[n_sv_at:n_sv_at + 4].view(np.intc),
                        header.view(np.uint64), np.zeros(1, dtype=np.uint64))

    def fit(self, gram: np.ndarray, y: np.ndarray) -> SVMClassifier:
        """Train on the ``size`` × ``size`` Gram matrix ``gram`` with labels ``y``.

        Parameters
        ----------
        gram : ndarray of shape (size, size)
            The kernel matrix of the training rows (float64, finite).
        y : ndarray of shape (size,)
            Their labels, at least two classes.

        Returns
        -------
        SVMClassifier
            :attr:`estimator`, fitted as ``fit(gram, y, check_input=False)`` fits it
            (without ``support_vectors_``' copy and the per-model counts in ``info_``).
        """
        svm = self.estimator
        svm.classes_, y_index = np.unique(y, return_inverse=True)
        n_class = svm.classes_.size
        if n_class < 2:
            raise ValueError("PrecomputedTrainer needs samples of at least two classes; got 1 class")
        svm.class_count_ = np.bincount(y_index, minlength=n_class)
        svm.n_features_in_ = self.size
        svm.info_ = {"route": "precomputed"}
        self._values[:, 1:] = gram
        binary = n_class == 2
        ova = svm.multiclass == "ova" and not binary
        svm.multiclass_ = "ova" if ova else "ovo"
        with _one_openmp_thread():
            clib.svm_set_print_string_function(SILENT_PRINT)
            if ova:
                self._one_vs_rest(svm, y_index, n_class)
            else:
                self._one_vs_one(svm, y_index, binary)
        return svm

    def _train(self, copy: Callable[[Any], Any]) -> Any:
        """LIBSVM's ``svm_train`` on the problem as it stands; ``copy(model)`` reads the
        model (a ``svm_model`` struct) before it is freed; returns what ``copy`` returns."""
        model = clib.svm_train(*self._arguments)
        try:
            return copy(model.contents)
        finally:
            clib.svm_free_and_destroy_model(ctypes.byref(model))

    def _one_vs_rest(self, svm: SVMClassifier, y_index: np.ndarray, n_class: int) -> None:
        """As :meth:`SVMClassifier._fit_one_vs_rest` (one binary model per class) and its
        :meth:`SVMClassifier._store_one_vs_rest`: the support set is the union of the
        models' support vectors, in index order, each model's coefficients placed at them.

        Per model only C calls on addresses: the targets and the model's arrays are copied
        with ``memmove``, its struct read through a byte buffer (:func:`_raw_libsvm`)."""
        train, free = _raw_libsvm()
        memmove, size = ctypes.memmove, self.size
        targets = np.where(y_index == np.arange(n_class)[:, None], 1.0, -1.0)
        targets_at, y_at, problem_at, parameter_at = (
            targets.ctypes.data, self._y.ctypes.data, ctypes.addressof(self._problem), ctypes.addressof(self._parameter))
        header, header_at, n_sv_of, pointer_of, slot = self._header
        slot_at = slot.ctypes.data
        sv_at, coef_at = self._sv.ctypes.data, self._coef.ctypes.data
        counts, labels, rho = np.empty(n_class, dtype=np.intp), np.empty(n_class, dtype=np.intc), np.empty(n_class)
        labels_at, rho_at = labels.ctypes.data, rho.ctypes.data
        sv_field, coef_field, rho_field, label_field = (_MODEL_POINTERS[f] for f in ("sv_indices", "sv_coef", "rho", "label"))
        for c in range(n_class):
            memmove(y_at, targets_at + 8 * size * c, 8 * size)
            model = train(problem_at, parameter_at)
            memmove(header_at, model, header.size)
            n_sv = int(n_sv_of[0])
            counts[c] = n_sv
            memmove(sv_at + 4 * size * c, int(pointer_of[sv_field]), 4 * n_sv)
            memmove(slot_at, int(pointer_of[coef_field]), 8)  # sv_coef[0]
            memmove(coef_at + 8 * size * c, int(slot[0]), 8 * n_sv)
            memmove(rho_at + 8 * c, int(pointer_of[rho_field]), 8)
            memmove(labels_at + 4 * c, int(pointer_of[label_field]), 4)
            slot[0] = model
            free(slot_at)
        sign = np.where(labels == 1, 1.0, -1.0)  # LIBSVM's value favours its first label
        valid = np.arange(size) < counts[:, None]
        rows = self._sv[:n_class][valid] - 1  # LIBSVM's indices are 1-based, model by model
        is_support = np.zeros(size, dtype=bool)
        is_support[rows] = True
        coef = np.zeros((n_class, size))
        coef[np.repeat(np.arange(n_class), counts), rows] = (sign[:, None] * self._coef[:n_class])[valid]
        svm.support_ = np.flatnonzero(is_support)
        # C order, as SVMClassifier stores it: the decision's gemm then takes the same kernel (the same bits)
        svm.ova_coef_ = np.ascontiguousarray(coef[:, svm.support_])
        svm.ova_rho_ = sign * rho
        svm.info_["n_support"] = int(svm.support_.size)

    def _one_vs_one(self, svm: SVMClassifier, y_index: np.ndarray, binary: bool) -> None:
        """As :meth:`SVMClassifier.fit`'s one-vs-one route (two classes: one model)."""
        self._y[:] = np.where(y_index == 1, 1.0, -1.0) if binary else y_index
        coef_at, row_bytes, sv_at = self._coef.ctypes.data, self._coef.strides[0], self._sv.ctypes.data

        def read(model: Any) -> tuple[list[int], list[int], list[float], int]:
            n_class, n_sv = model.nr_class, model.l
            ctypes.memmove(sv_at, model.sv_indices, 4 * n_sv)
            for j in range(n_class - 1):
                ctypes.memmove(coef_at + j * row_bytes, model.sv_coef[j], 8 * n_sv)
            return model.label[:n_class], model.nSV[:n_class], model.rho[: n_class * (n_class - 1) // 2], n_sv

        labels, n_support, rho, n_sv = self._train(read)
        labels = np.asarray(labels)
        svm.libsvm_class_order_ = (labels == 1).astype(np.intp) if binary else labels.astype(np.intp)
        svm.n_support_ = np.asarray(n_support, dtype=np.intc)
        svm.support_ = self._sv[0, :n_sv].astype(np.intp) - 1
        svm.dual_coef_ = self._coef[: labels.size - 1, :n_sv].copy()
        svm.rho_ = np.asarray(rho, dtype=np.float64)
        svm.info_["n_support"] = int(n_sv)


def _platt(f: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LIBSVM's ``sigmoid_predict``: 1 / (1 + exp(f·A + B)), evaluated without overflow."""
    fapb = f * a + b
    out: NDArray[np.float64] = np.empty_like(fapb)
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
