"""Kernels and the distances they are built from.

Every distance-based kernel here is a function of a *squared distance matrix*, so a
sweep over the kernel width reuses one distance computation per split
(:class:`DistanceCache`). Custom distances (e.g. a tangent distance, Cevikalp et al.)
plug in by registering a function that returns squared distances.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

from lkm.errors import InsufficientMemory, LkmError, NumericalError
from lkm.files import exclusive_lock
from lkm.numerics.threads import blas_threads, run_blocks, usable_cores

SquaredDistanceFn = Callable[[np.ndarray, np.ndarray | None], np.ndarray]

#: A kernel's exponent coefficient c, for ``exp(-c·d²)``: a float, or, where c = 1/w
#: is not a normal float64 (extreme widths, e.g. 2σ² = 2e-320), the divisors f1, f2, ...
#: of ``w = f1·f2·…``, so that ``d²/f1/f2/…`` is evaluated instead of ``d²·c``.
Scale = float | tuple[float, ...]

_TINY = float(np.finfo(np.float64).tiny)


def exponent_scale(*divisors: float) -> Scale:
    """The coefficient ``1/(f1·f2·…)`` of a kernel exponent ``-d²/(f1·f2·…)`` (the Gaussian's
    is ``exponent_scale(2σ, σ)``), or the divisors themselves when that product or its
    inverse is not a normal float64 (it would lose precision, or be 0 or inf and make
    ``0·inf`` a NaN on the diagonal). Normal widths give the float ``1.0 / (2.0*σ*σ)``
    bit for bit, so results do not change; extreme ones still evaluate exactly."""
    w = 1.0
    for f in divisors:
        w *= f
    if _TINY <= w < np.inf and 1.0 / w >= _TINY:
        return 1.0 / w
    return tuple(float(f) for f in divisors)


def times_scale(
    x: np.ndarray, scale: Scale, *, negate: bool = False, out: np.ndarray | None = None
) -> np.ndarray:
    """``x·c`` (``-x·c`` with ``negate``) for a :data:`Scale`, into ``out`` if given.

    Products beyond float64's range become ±inf without a warning: in an exponent that
    is the right value (exp(-inf) = 0)."""
    with np.errstate(over="ignore"):
        if isinstance(scale, tuple):
            first, *rest = scale
            out = np.divide(x, -first if negate else first, out=out)
            for f in rest:
                np.divide(out, f, out=out)
            return out
        return np.multiply(x, -scale if negate else scale, out=out)


#: Environment variable that sets the memory lkm may plan with (e.g. ``4GiB``, ``500MB``,
#: ``2e9``) in place of what the system reports (:func:`available_memory`).
MEMORY_LIMIT_ENV = "LKM_MEMORY_LIMIT"
#: Allocations below this many bytes are not checked (reading /proc costs more than they do).
CHECK_MIN_BYTES = 16 * 2**20
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12, "tib": 2**40}


def parse_bytes(text: str, name: str = MEMORY_LIMIT_ENV) -> int:
    """``"4GiB"`` → 4·2³⁰ bytes: a number with an optional unit (K/M/G/T and KiB/MiB/…
    binary, KB/MB/… decimal). Raises :class:`~lkm.errors.LkmError` naming ``name`` and the text."""
    match = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise LkmError(f"{name}={text!r}: expected a size such as 4GiB, 500MB or 2e9")
    return int(float(match.group(1)) * _UNITS[unit])


def env_bytes(name: str, default: int) -> int:
    """The positive size the environment variable ``name`` gives (:func:`parse_bytes`),
    else ``default``: the one reader of lkm's size limits."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    value = parse_bytes(text, name)
    if value <= 0:
        raise LkmError(f"{name}={text!r}: expected a positive size such as 4GiB, 500MB or 2e9")
    return value


def format_bytes(n: float) -> str:
    """Bytes as a short binary-unit string (``1.9 GiB``)."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def available_memory() -> tuple[int, str]:
    """Bytes a new allocation may use, and where the figure comes from: ``$LKM_MEMORY_LIMIT``
    if set, else the smaller of MemAvailable (/proc/meminfo, or psutil) and the room left
    under a cgroup memory limit (v2 ``memory.max``, v1 ``memory.limit_in_bytes``)."""
    env = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if env:
        return parse_bytes(env), MEMORY_LIMIT_ENV
    found: list[tuple[int, str]] = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append((int(line.split()[1]) * 1024, "MemAvailable"))
                    break
    except OSError:
        try:
            import psutil

            found.append((int(psutil.virtual_memory().available), "psutil"))
        except ImportError:
            pass
    room = _cgroup_room()
    if room is not None:
        found.append((room, "cgroup limit"))
    return min(found) if found else (2**62, "unknown")


def _cgroup_room() -> int | None:
    """Limit minus usage of this process's memory cgroup, or None without a limit."""
    candidates = []
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3 and parts[0] == "0":
                    base = Path("/sys/fs/cgroup") / parts[2].lstrip("/")
                    candidates.append((base / "memory.max", base / "memory.current"))
    except OSError:
        pass
    candidates += [(Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current")),
                   (Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"), Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"))]
    for limit_file, usage_file in candidates:
        try:
            limit = limit_file.read_text().strip()
            usage = int(usage_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or int(limit) >= 2**60:
            return None
        return max(0, int(limit) - usage)
    return None


def check_memory(needed: int, what: str, *, always: bool = False) -> None:
    """Raise :class:`~lkm.errors.InsufficientMemory` (one line naming ``what``, the bytes
    needed and the bytes available) when ``needed`` bytes exceed :func:`available_memory`,
    before anything is allocated: an allocation the machine cannot hold otherwise ends
    in the kernel's OOM killer, with no message. Sizes below :data:`CHECK_MIN_BYTES` are
    not checked unless ``always``."""
    if needed < CHECK_MIN_BYTES and not always:
        return
    available, source = available_memory()
    if needed > available:
        raise InsufficientMemory(
            f"{what}: needs {format_bytes(needed)} but {format_bytes(available)} is available ({source}); "
            "use fewer training rows or a machine with more memory"
            + ("" if source == MEMORY_LIMIT_ENV else f" ({MEMORY_LIMIT_ENV} overrides the figure)")
        )


def squared_euclidean(A: np.ndarray, B: np.ndarray | None = None, *, block_rows: int | None = None) -> np.ndarray:
    """Pairwise squared Euclidean distances ``||a_i - b_j||²`` through matrix products.

    Round-off can make the expansion ``|a|² + |b|² - 2 a·b`` slightly negative; it is
    clipped at zero. When ``B`` is ``A`` the diagonal is set to exactly zero and the
    matrix is exactly symmetric. The products run in row blocks (:func:`inner_products`;
    ``block_rows`` rows at a time, default :data:`PRODUCT_BLOCK_BYTES` of output), and
    the output's memory is checked first (:func:`check_memory`).
    """
    A = np.asarray(A, dtype=np.float64)
    same = B is None or B is A
    B = A if same else np.asarray(B, dtype=np.float64)
    check_memory(8 * A.shape[0] * B.shape[0], f"squared distances of {A.shape[0]:,} x {B.shape[0]:,} rows")
    a2 = np.einsum("ij,ij->i", A, A)
    b2 = a2 if same else np.einsum("ij,ij->i", B, B)
    D = np.empty((A.shape[0], B.shape[0]))
    for rows, cols in _blocked_products(A, B, D, same, block_rows):
        step = max(1, _BLOCK_BYTES // max(1, 8 * cols.stop))  # elementwise passes in cache
        for start in range(rows.start, rows.stop, step):
            r = slice(start, min(start + step, rows.stop))
            block = D[r, cols]
            block *= -2.0
            block += a2[r, None]
            block += b2[None, cols]
            _clip_negative(block)
    if same:
        np.fill_diagonal(D, 0.0)
    return D


def inner_products(A: np.ndarray, B: np.ndarray | None = None, *, block_rows: int | None = None) -> np.ndarray:
    """``A @ B.T`` (``A @ A.T`` for ``B=None``; then exactly symmetric), in row blocks
    through BLAS gemm: never through syrk, which the scipy-openblas builds 0.3.30/0.3.31
    (SkylakeX, pthreads) crash in with two threads for outputs of order ≳ 15,000
    (MNIST 16,000 × 784: ``X @ X.T`` ends in SIGSEGV; numpy and scipy alike)."""
    A = np.asarray(A, dtype=np.float64)
    same = B is None or B is A
    B = A if same else np.asarray(B, dtype=np.float64)
    check_memory(8 * A.shape[0] * B.shape[0], f"inner products of {A.shape[0]:,} x {B.shape[0]:,} rows")
    out = np.empty((A.shape[0], B.shape[0]))
    for _ in _blocked_products(A, B, out, same, block_rows):
        pass
    return out


#: Elementwise passes over large matrices run block by block so that each block is
#: still in cache for the next operation (same values, less memory traffic).
_BLOCK_BYTES = 2**20


def _row_blocks(D: np.ndarray):
    """Slices along axis 0 covering D in blocks of about ``_BLOCK_BYTES``."""
    row_bytes = max(1, D[:1].nbytes)
    step = max(1, _BLOCK_BYTES // row_bytes)
    return (slice(i, i + step) for i in range(0, D.shape[0], step))


#: Output bytes of one block of :func:`inner_products` / :func:`squared_euclidean`: large
#: enough for BLAS efficiency, small enough that its elementwise passes stay near cache.
PRODUCT_BLOCK_BYTES = 64 * 2**20
#: Fewest rows in a product block (gemm is slow on very thin blocks).
MIN_BLOCK_ROWS = 32


def mirror_lower_triangle(square: np.ndarray) -> np.ndarray:
    """``square``'s strict upper triangle set from its lower one, in place (one masked copy,
    no index arrays); ``mirror_lower_triangle(square.T)`` copies the upper into the lower."""
    np.copyto(square, square.T, where=~np.tri(square.shape[0], dtype=bool))
    return square


def _blocked_products(A: np.ndarray, B: np.ndarray, out: np.ndarray, same: bool, block_rows: int | None):
    """Fill ``out`` with ``A @ B.T`` one row block at a time, yielding ``(rows, cols)`` after
    each block so the caller can transform it while it is still warm.

    Every product is a gemm into ``out``: numpy sends ``M @ M.T`` (same buffer, square
    output) to syrk, so the one block where that could happen (the first diagonal block
    when ``same``) multiplies by a copy. When ``same`` only the lower triangle (with the
    diagonal blocks) is computed, and each block row, once the caller has transformed it,
    is mirrored into the upper triangle: half the flops, an exactly symmetric result."""
    m, n = A.shape[0], B.shape[0]
    if block_rows is None:
        block_rows = max(MIN_BLOCK_ROWS, PRODUCT_BLOCK_BYTES // max(1, 8 * n))
    step = max(1, int(block_rows))
    for i in range(0, m, step):
        j = min(i + step, m)
        rows = slice(i, j)
        cols = slice(0, j) if same else slice(0, n)
        right = B[cols] if not (same and i == 0) else B[cols].copy()
        np.matmul(A[rows], right.T, out=out[rows, cols])
        yield rows, cols
        if same:
            mirror_lower_triangle(out[rows, rows])
            out[:i, rows] = out[rows, :i].T


#: Distances a kernel can be built on. Later papers register more (e.g. "tangent").
DISTANCES: dict[str, SquaredDistanceFn] = {"euclidean": squared_euclidean}


def check_metric(metric: str, owner: str) -> None:
    """Refuse a distance name that is not registered (ValueError naming ``owner``)."""
    if metric not in DISTANCES:
        raise ValueError(f"{owner}: unknown metric {metric!r}; registered: {', '.join(sorted(DISTANCES))}")


#: Distances costly enough that their matrices are kept on disk (:func:`persisted_sq_dists`).
PERSISTED_DISTANCES: set[str] = set()
#: Matrices with fewer entries than this are recomputed, not stored (a file per small
#: call would cost more than it saves).
PERSIST_MIN_ENTRIES = 100_000


#: Checks a distance makes of a dataset's shape before any fit (``(n_features) -> None``,
#: raising :class:`~lkm.errors.DataError`), e.g. square images for the tangent distance.
DISTANCE_CHECKS: dict[str, Callable[[int], None]] = {}


def register_distance(
    name: str, fn: SquaredDistanceFn, persist: bool = False, check: Callable[[int], None] | None = None
) -> None:
    """Make a custom squared-distance function available to kernels and caches by name.

    ``persist=True`` (for a distance that costs seconds per thousand rows, such as the
    tangent distance) keeps each large matrix it computes on disk, keyed by the contents
    of its two inputs, so another method, a resumed run or a tuning fold with the same
    rows reads it back instead of computing it again (:func:`persisted_sq_dists`).
    ``check(n_features)`` refuses data the distance is not defined on (a one-line
    :class:`~lkm.errors.DataError`); the runner calls it on every dataset before fitting.
    """
    DISTANCES[name] = fn
    if check is not None:
        DISTANCE_CHECKS[name] = check
    if persist:
        PERSISTED_DISTANCES.add(name)
    else:
        PERSISTED_DISTANCES.discard(name)


def distance_store_dir() -> Path | None:
    """Where persisted distance matrices live: ``$LKM_DISTANCE_CACHE`` (``off`` turns the
    store off), else ``distances/`` in the download cache (:func:`lkm.data.fetch.cache_dir`)."""
    env = os.environ.get("LKM_DISTANCE_CACHE", "").strip()
    if env.lower() in {"off", "0", "false", "no"}:
        return None
    if env:
        return Path(env).expanduser()
    from lkm.files import cache_dir

    return cache_dir() / "distances"


def _content_key(X: np.ndarray) -> str:
    h = hashlib.sha256(f"{X.dtype.str}{X.shape}".encode())
    h.update(np.ascontiguousarray(X).data)
    return h.hexdigest()[:24]


def persisted_sq_dists(metric: str, A: np.ndarray, B: np.ndarray | None) -> np.ndarray:
    """``DISTANCES[metric](A, B)``, read from the distance store when a matrix of the same
    two inputs (same bytes, shape and dtype) was computed before, else computed and
    written there (atomically: a killed run leaves no partial file). ``B=None`` is A
    against itself. A new array either way; small matrices and metrics not in
    :data:`PERSISTED_DISTANCES` are computed directly."""
    fn = DISTANCES[metric]
    n_b = A.shape[0] if B is None else B.shape[0]
    root = distance_store_dir() if metric in PERSISTED_DISTANCES else None
    if root is None or A.shape[0] * n_b < PERSIST_MIN_ENTRIES:
        return fn(A, B)
    key_b = "self" if B is None else _content_key(B)
    path = root / f"{metric}-{_content_key(A)}-{key_b}.npy"
    D = _read_stored(path, (A.shape[0], n_b))
    if D is not None:
        return D
    # One producer per matrix: a second process (or thread) asking for the same matrix
    # waits for the first and reads its file, instead of computing it a second time.
    with exclusive_lock(path.with_suffix(".lock")):
        D = _read_stored(path, (A.shape[0], n_b))
        if D is not None:
            return D
        D = fn(A, B)
        try:
            root.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
            with open(tmp, "wb") as fh:
                np.save(fh, D, allow_pickle=False)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only or full disk costs only the reuse
    return D


def _read_stored(path: Path, shape: tuple[int, int]) -> np.ndarray | None:
    """The stored matrix at ``path`` if it is there, readable and of ``shape``."""
    try:
        D = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None  # absent or unreadable: computed again
    return D if D.shape == shape else None


def _tangent_sq_distances(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """Two-sided tangent distance of square images (:func:`lkm.numerics.tangent.tangent_sq_distances`;
    imported on first use, so this module stays cheap to import)."""
    from lkm.numerics.tangent import tangent_sq_distances

    return tangent_sq_distances(A, B)


def _square_images(n_features: int) -> None:
    from lkm.numerics.tangent import image_shape_for

    image_shape_for(n_features)


register_distance("tangent", _tangent_sq_distances, persist=True, check=_square_images)


#: exp(x) below this exponent is < 3.3e-308, near or in the subnormal range. The
#: Gaussian kernel flushes such entries to exactly 0: numpy's exp is 5-30 times slower
#: on them, and with small widths they are most of a Gram matrix.
EXP_FLUSH_BELOW = -708.0


def gaussian_from_sq(D: np.ndarray, sigma: float, out: np.ndarray | None = None) -> np.ndarray:
    """Gaussian kernel ``exp(-d² / (2 sigma²))`` from squared distances (Tsuji et al., Sec. 9).

    Values below exp(-708) ≈ 3.3e-308 are returned as 0 (see :data:`EXP_FLUSH_BELOW`);
    ``out`` may be ``D`` itself. Callers that do not need the distances afterwards build
    the kernel in one pass instead (:func:`gaussian_kernel`, :func:`gaussian_gram`
    without a cache: the same values, bit for bit).
    """
    D = np.asarray(D)
    scale = exponent_scale(2.0 * sigma, sigma)
    if D.ndim == 0:  # one distance: the same products on a one-entry array, and a float64 back
        x = float(times_scale(D.astype(np.float64).reshape(1), scale, negate=True)[0])
        return cast(np.ndarray, np.float64(np.exp(x) if x >= EXP_FLUSH_BELOW else 0.0))  # a numpy scalar, as ufuncs give for 0-d
    if out is None:
        out = np.empty(D.shape, dtype=D.dtype if D.dtype.kind == "f" else np.float64)
    for rows in _row_blocks(D):
        _exp_in_place(times_scale(D[rows], scale, negate=True, out=out[rows]), True)
    return out


def _exp_in_place(x: np.ndarray, flush: bool) -> np.ndarray:
    """``exp(x)`` into ``x``; with ``flush``, entries below :data:`EXP_FLUSH_BELOW` become 0."""
    lowest = x.min() if flush and x.size else 0.0
    if lowest < EXP_FLUSH_BELOW:
        if lowest == -np.inf:  # tiny sigma: -inf·0 below would be NaN
            np.maximum(x, EXP_FLUSH_BELOW - 1.0, out=x)
        # Branch-free masking: flushed entries go through exp(0) and are zeroed after.
        keep = (x >= EXP_FLUSH_BELOW).astype(x.dtype)
        x *= keep
        np.exp(x, out=x)
        x *= keep
    else:
        np.exp(x, out=x)
    return x


#: Rows per block of the fused kernel builder (:func:`exp_distance_gram`): a multiple of
#: OpenBLAS's row unrolling, so a row's products do not depend on where a block starts,
#: and small enough that the lower triangle (with ``B`` = ``A``) saves most of the work.
GRAM_BLOCK_ROWS = 256
#: Threads the fused kernel builder uses at most (one BLAS thread each).
GRAM_MAX_WORKERS = 4


_GRAM_SCRATCH = threading.local()


@functools.lru_cache(maxsize=4)
def _upper_mask(size: int) -> np.ndarray:
    """The strict upper triangle of a ``size × size`` block (read-only, shared)."""
    mask = ~np.tri(size, dtype=bool)
    mask.flags.writeable = False
    return mask


def _gram_scratch(rows: int, cols: int) -> np.ndarray:
    """This thread's contiguous ``rows × cols`` scratch block, kept between calls up to
    :data:`PRODUCT_BLOCK_BYTES` (a larger one is allocated for the call)."""
    flat = getattr(_GRAM_SCRATCH, "buffer", None)
    if flat is None or flat.size < rows * cols:
        flat = np.empty(rows * cols)
        if flat.nbytes <= PRODUCT_BLOCK_BYTES:
            _GRAM_SCRATCH.buffer = flat
    return flat[: rows * cols].reshape(rows, cols)


@functools.lru_cache(maxsize=1)
def _blas_libraries() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries numpy and scipy load (the ones
    :func:`lkm.numerics.threads.blas_threads` limits), found once."""
    import scipy.linalg  # noqa: F401  (threadpoolctl lists only libraries already loaded)
    from threadpoolctl import ThreadpoolController

    return list(ThreadpoolController().select(user_api="blas").lib_controllers)


def _gram_workers() -> tuple[int, int]:
    """The caller's BLAS thread count (threadpoolctl's limit, so ``threadpool_limits(1)``
    means one; the least over the loaded BLAS libraries, as a limit set before scipy's
    was loaded leaves that one at its default) and the fused builder's threads: that
    count, at most the usable cores."""
    try:
        allowed = max(1, min(c.num_threads for c in _blas_libraries()))
    except (ValueError, AttributeError):  # no BLAS found: one thread
        allowed = 1
    return allowed, max(1, min(allowed, usable_cores(), GRAM_MAX_WORKERS))


def exp_distance_gram(
    A: np.ndarray,
    B: np.ndarray | None,
    scale: Scale,
    *,
    flush: bool,
    factor: float | None = None,
    block_rows: int = GRAM_BLOCK_ROWS,
) -> np.ndarray:
    """``factor·exp(-scale·||a_i - b_j||²)`` built in one output buffer (the fused path).

    Blocks of ``block_rows`` rows of ``A`` against ``B`` (with ``B`` None or ``A`` only
    the lower triangle, each block row then mirrored into the upper one: exactly
    symmetric, a zero distance on the diagonal, half the products and exponentials);
    each block's product ``(-2a)·b`` is one gemm (on a triangle, into a contiguous
    scratch block, as numpy's elementwise loops are slow on non-contiguous rows), and
    each cache-sized part of it is turned into kernel values while still warm:
    ``+ |a|² + |b|²``, clipped at 0, times ``-scale``, exponentiated (with ``flush``,
    entries whose exponent is below :data:`EXP_FLUSH_BELOW` are 0, as
    :func:`gaussian_from_sq`; without it, as :func:`heat_from_sq`), times ``factor``.
    No n × n distance matrix, no second pass over one.

    Values: each entry goes through the floating-point operations of
    ``gaussian_from_sq(squared_euclidean(A, B), ·)`` (resp. ``heat_from_sq`` times the
    constant) in the same order (scaling a by -2 before the product instead of after
    it is exact: a power of two commutes with every rounding, short of products in
    float64's subnormal range, below 2.2e-308); only the products ``a·b`` may differ, because gemm's
    bits depend on how its output is split into blocks and threads (as the two-pass
    route's already do between one and two BLAS threads). Here every block's gemm runs
    on one BLAS thread and the blocks do not depend on the thread count, so the values
    do not either. Against the two-pass route on one BLAS thread most entries are
    bit-identical (all of them in most shapes measured) and the rest within gemm's
    round-off: |Δ(a·b)| ≤ γ_p |a||b| moves d² by at most ~(2p + 8)·u·(|a|² + |b|²) and
    an entry K by at most ``scale·K`` times that (≤ 1e-13 relative on the standardized
    benchmark sets; tested with that bound). The kernel's properties are kept exactly:
    symmetry and a unit (Gaussian) diagonal with ``B`` = ``A``, no entry above ``factor``,
    flushed entries exactly 0. The blocks run on up to the caller's number of BLAS
    threads (:func:`_gram_workers`).
    """
    A = np.asarray(A, dtype=np.float64)
    same = B is None or B is A
    B = A if same else np.asarray(B, dtype=np.float64)
    m, n = A.shape[0], B.shape[0]
    check_memory(8 * m * n, f"kernel matrix of {m:,} x {n:,} rows")
    a2 = np.einsum("ij,ij->i", A, A)
    b2 = a2 if same else np.einsum("ij,ij->i", B, B)
    K = np.empty((m, n))
    step = max(1, int(block_rows))
    # (|a| + max|b|)² bounds every d² in a's row: where its exponent cannot reach the
    # flush threshold, the search for entries to flush (a pass) is skipped
    reach = np.square(np.sqrt(a2) + np.sqrt(b2.max(initial=0.0)))

    def block(i: int) -> None:
        rows = slice(i, min(i + step, m))
        cols = slice(0, rows.stop) if same else slice(0, n)
        # numpy sends M @ M.T (same buffer, square output) to syrk: the first diagonal
        # block multiplies by a copy
        right = B[cols] if not (same and i == 0) else B[cols].copy()
        # a triangle's block rows are not contiguous in K: numpy's elementwise loops run
        # several times slower on them, so the block is built in a contiguous scratch
        # buffer and copied into place (and mirrored) once
        inside = cols.stop < n
        out = _gram_scratch(rows.stop - i, cols.stop) if inside else K[rows, cols]
        # -2ab as (-2a)·b: scaling by a power of two commutes with every rounding (a pass less)
        np.matmul(np.multiply(A[rows], -2.0), right.T, out=out)
        sub = max(1, _BLOCK_BYTES // max(1, 8 * cols.stop))  # elementwise passes in cache
        for start in range(0, out.shape[0], sub):
            local = slice(start, min(start + sub, out.shape[0]))
            r = slice(i + local.start, i + local.stop)
            part = out[local]
            part += a2[r, None]
            part += b2[None, cols]
            _clip_negative(part)
            if same:  # as squared_euclidean's zero diagonal
                on = np.arange(r.start, r.stop)
                part[on - r.start, on] = 0.0
            times_scale(part, scale, negate=True, out=part)
            _exp_in_place(part, flush and not (isinstance(scale, float) and
                                                scale * reach[r].max() < EXP_FLUSH_SAFE))
            if factor is not None:
                part *= factor
        if inside:
            K[rows, cols] = out
        if same:
            diagonal = K[rows, rows]
            np.copyto(diagonal, diagonal.T, where=_upper_mask(diagonal.shape[0]))
            K[:i, rows] = out[:, :i].T

    starts = range(0, m, step)
    allowed, workers = _gram_workers()
    workers = min(workers, len(starts)) if m * n >= GRAM_PARALLEL_ENTRIES else 1
    # one BLAS thread per block (left alone when the caller has one already: the limit is
    # process-wide, and a caller's own threads may be inside the same limit)
    with blas_threads(1) if allowed > 1 else contextlib.nullcontext():
        if workers <= 1:
            for i in starts:
                block(i)
        else:  # `workers` threads take the blocks in turn, the largest (a triangle's last) first
            order = starts[::-1] if same else starts
            run_blocks(lambda j: block(order[j]), len(order), workers)
    return K


#: A bound on an exponent's magnitude this far below -EXP_FLUSH_BELOW leaves room for the
#: round-off of the distance and the product (relative 1e-12 would do; 1e-3 is plenty).
EXP_FLUSH_SAFE = -EXP_FLUSH_BELOW * (1.0 - 1e-3)


def _clip_negative(x: np.ndarray) -> None:
    """``np.maximum(x, 0.0, out=x)`` for a C-contiguous-rowed float64 array (negative
    values and -0.0 become +0.0, the rest keep their bits) as an integer maximum on the
    bits: a float64 with the sign bit set is a negative int64. Twice as fast as the
    float maximum, which checks for NaN (the kernel's inputs are finite)."""
    bits = x.view(np.int64)
    np.maximum(bits, 0, out=bits)


#: Kernel matrices with fewer entries are built on one thread (a thread hand-off costs more).
GRAM_PARALLEL_ENTRIES = 2**16


def exp_rows_scaled(D: np.ndarray, scale: Scale) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``exp(-scale·D)`` each divided by its largest entry, and the row minima.

    Computed as ``exp(-scale·(D - m))`` with ``m`` the row minima of D, so every row holds
    an exact 1 and a row never underflows to all zeros, however small the kernel width.
    The true rows are ``exp(-scale·m)`` times these: a positive factor per row, so the
    sign (two classes) and the argmax (more classes) of any ``rows @ coef`` are those of
    the unscaled kernel expansion. No entries are flushed; exp itself rounds entries below
    ``exp(-745)`` times the row's largest to 0, which matters only when the other terms
    cancel to within 1e-323 — a true tie in all but name.
    """
    D = np.asarray(D, dtype=np.float64)
    m = D.min(axis=-1, keepdims=True) if D.shape[-1] else np.zeros(D.shape[:-1] + (1,))
    rows = np.subtract(D, m)
    times_scale(rows, scale, negate=True, out=rows)
    np.exp(rows, out=rows)
    return rows, m[..., 0]


def underflows(row_min: np.ndarray, scale: Scale) -> np.ndarray:
    """Where ``exp(-scale·row_min)`` is 0 in float64: the unscaled kernel row is all zeros
    (the output an unscaled evaluation would give is exactly 0)."""
    return np.exp(times_scale(np.asarray(row_min, dtype=np.float64), scale, negate=True)) == 0.0


def underflow_share(row_min: np.ndarray, scale: Scale) -> float:
    """Share of rows whose unscaled kernel row is all zeros (:func:`underflows`); 0 for none."""
    return float(underflows(row_min, scale).mean()) if np.size(row_min) else 0.0


def heat_from_sq(D: np.ndarray, t: float) -> np.ndarray:
    """Unit-diagonal heat kernel ``exp(-d² / 4t)`` from squared distances.

    The paper's constant ``(4 pi t)^(-d/2)`` (Li, Chen, Tang) needs the input dimension,
    so the normalized form is built by :func:`heat_kernel`.
    """
    return np.exp(times_scale(D, exponent_scale(4.0 * t), negate=True))


def gaussian_kernel(A: np.ndarray, B: np.ndarray | None = None, *, sigma: float = 1.0) -> np.ndarray:
    """Gaussian kernel matrix between the rows of ``A`` and ``B``, built in one buffer
    (:func:`exp_distance_gram`; the values of ``gaussian_from_sq(squared_euclidean(A, B))``)."""
    return exp_distance_gram(A, B, exponent_scale(2.0 * sigma, sigma), flush=True)


def heat_kernel(
    A: np.ndarray, B: np.ndarray | None = None, *, t: float = 1.0, normalized: bool = True
) -> np.ndarray:
    """Heat kernel matrix; ``normalized`` multiplies by ``(4 pi t)^(-d/2)`` with d = n_features.

    Raises ``FloatingPointError`` when that constant underflows to zero (hundreds of
    dimensions), instead of silently returning an all-zero kernel.
    """
    c = heat_constant(np.asarray(A).shape[1], t) if normalized else None
    return exp_distance_gram(A, B, exponent_scale(4.0 * t), flush=False, factor=c)


def heat_constant(d: int, t: float) -> float:
    """The heat kernel's constant ``(4 pi t)^(-d/2)`` (Li, Chen, Tang), computed in logs.

    Raises :class:`HeatConstantError` (a ``FloatingPointError`` and a ``ValueError``)
    when it underflows the smallest normal float64 (e.g. d = 600 at t = 1), instead of
    letting the kernel silently become all zeros, or overflows (tiny t).
    """
    log_c = -0.5 * d * np.log(4.0 * np.pi * t)
    finfo = np.finfo(np.float64)
    for bad, way in ((log_c < np.log(finfo.tiny), "underflows"), (log_c > np.log(finfo.max), "overflows")):
        if bad:
            raise HeatConstantError(
                f"heat kernel constant (4*pi*t)^(-d/2) {way} for d={d}, t={t}; "
                "use the unit-diagonal form (normalized=False / unit_diagonal=True)"
            )
    return float(np.exp(log_c))


class HeatConstantError(NumericalError, FloatingPointError):
    """The heat kernel's constant is not a normal float64 for this t and dimension."""


def heat_gram(
    A: np.ndarray,
    B: np.ndarray,
    t: float,
    cache: DistanceCache | None = None,
    *,
    normalized: bool = True,
) -> np.ndarray:
    """Heat kernel matrix ``K_t(A, B) = (4 pi t)^(-d/2) exp(-||a - b||² / 4t)`` as a new
    array (without the constant when ``normalized`` is False); distances come from
    ``cache`` if given, which is left unmodified. Without a cache (and for a distance
    that is not persisted) the matrix is built in one buffer (:func:`exp_distance_gram`,
    the same values)."""
    c = heat_constant(np.asarray(A).shape[1], t) if normalized else 1.0
    if cache is None:
        return exp_distance_gram(A, None if A is B else B, exponent_scale(4.0 * t), flush=False,
                                 factor=c if normalized else None)
    K = heat_from_sq(sq_dists(A, B, cache), t)
    if normalized:
        K *= c
    return K


def polynomial_kernel(
    A: np.ndarray, B: np.ndarray | None = None, *, degree: int = 2, coef0: float = 1.0
) -> np.ndarray:
    """Polynomial kernel ``(a·b + coef0)^degree`` (Shin & Cho, Sec. 3)."""
    K = inner_products(A, B)
    K += coef0
    K **= degree
    return K


def linear_kernel(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """Linear kernel ``a·b`` (:func:`inner_products`)."""
    return inner_products(A, B)


class DistanceCache:
    """Memoizes squared distances (and other per-split artefacts) for one train/test split.

    The runner creates one cache per split and passes it to every estimator fitted on
    that split (``fit(X, y, cache=...)``), so a sweep over sigma, k or beta computes the
    distance matrices once. Arrays are keyed by identity: pass the same array objects.
    """

    def __init__(self) -> None:
        self._store: dict[Any, Any] = {}
        self._keep: list[np.ndarray] = []  # keep keyed arrays alive so ids stay unique

    def sq_dists(self, A: np.ndarray, B: np.ndarray, metric: str = "euclidean") -> np.ndarray:
        """Squared distances between the rows of ``A`` and ``B`` (computed once per pair)."""
        key = ("sq", metric, id(A), id(B))
        if key not in self._store:
            self._keep += [A, B]
            self._store[key] = persisted_sq_dists(metric, A, None if A is B else B)
        return self._store[key]

    def has_sq_dists(self, A: np.ndarray, B: np.ndarray, metric: str = "euclidean") -> bool:
        """Whether :meth:`sq_dists` of this pair is already held (costs no new memory)."""
        return ("sq", metric, id(A), id(B)) in self._store

    def memo(self, key: Any, compute: Callable[[], Any], *arrays: np.ndarray) -> Any:
        """Return ``compute()`` memoized under ``key`` and the identities of ``arrays``."""
        full = (key, *(id(a) for a in arrays))
        if full not in self._store:
            self._keep += list(arrays)
            self._store[full] = compute()
        return self._store[full]

    def __len__(self) -> int:
        return len(self._store)


def sq_dists(
    A: np.ndarray, B: np.ndarray, cache: DistanceCache | None = None, metric: str = "euclidean"
) -> np.ndarray:
    """Squared distances between the rows of ``A`` and ``B``, memoized in ``cache`` if given.

    With a cache the returned array is shared with later callers: treat it as read-only.
    """
    if cache is not None:
        return cache.sq_dists(A, B, metric)
    return persisted_sq_dists(metric, A, None if A is B else B)


def gaussian_gram(
    A: np.ndarray, B: np.ndarray, sigma: float, cache: DistanceCache | None = None
) -> np.ndarray:
    """Gaussian kernel matrix ``K(A, B)`` as a new array; distances come from ``cache`` if
    given (left unmodified), else the matrix is built in one buffer
    (:func:`exp_distance_gram`, the same values)."""
    if cache is None:
        return gaussian_kernel(A, None if A is B else B, sigma=sigma)
    return gaussian_from_sq(sq_dists(A, B, cache), sigma)
