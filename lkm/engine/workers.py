"""Worker processes for fits: thread caps, interrupts and a watchdog on the parent.

:func:`run_calls` runs a run's jobs in ``jobs`` worker processes (one worker when
``jobs == 1``: the main process only waits, so Ctrl-C and SIGTERM are handled at once
whatever C code a fit is in). Large arrays go to the workers as shared memmaps
(joblib's memmapping executor, the one ``joblib.Parallel`` uses).

Threads: on C cores each worker gets ``max(1, C // jobs)`` OpenMP and BLAS threads, set
in its environment before any library loads (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ...) and again around every job with threadpoolctl; idle
OpenMP threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``), so LIBSVM's OpenMP
team and the BLAS threads do not take turns burning the same cores (with both spinning
in one process the quickstart ran 12x slower), and idle OpenBLAS threads sleep after
the shortest spin (``OPENBLAS_THREAD_TIMEOUT=4``: ``--jobs 1`` then costs the CPU of
``--jobs 2``). Variables the user has set are kept, and the cap around a job only
lowers a count: a user's ``OPENBLAS_NUM_THREADS=1`` holds inside every job.

Signals: an interrupt in the main process (Ctrl-C, or SIGTERM inside
:func:`interrupt_on`) kills the workers before it propagates; workers ignore SIGINT
(the parent decides), and each worker runs a watchdog thread that ends the worker
within :data:`WATCHDOG_SECONDS` once its parent is gone, ``kill -9`` included.

Dead workers: a call whose worker died (``os._exit`` in user code, a segfault, the OOM
killer) is run once more in a fresh pool, alone, so that a second death is its own;
after that its ``on_dead`` hook records it and the run goes on (:func:`run_calls`).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from lkm.files import pid_alive

#: One job for :func:`run_calls`: a function and its arguments.
Call = tuple[Callable[..., Any], tuple[Any, ...]]

#: Thread-count variables read by OpenMP, OpenBLAS, MKL, BLIS, Accelerate and numexpr.
THREAD_VARS = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
)
#: How often a worker checks that its parent is alive.
WATCHDOG_SECONDS = 0.5
#: Idle workers stay this long for the next run of the same process (``lkm reproduce``).
IDLE_SECONDS = 60
#: Main-process polling period while waiting for results (an upper bound on interrupt latency).
POLL_SECONDS = 0.25


class Interrupted(KeyboardInterrupt):
    """A termination signal turned into an interrupt by :func:`interrupt_on`."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(self.signal_name)


def interrupt_name(exc: BaseException) -> str:
    """``SIGTERM`` for an :class:`Interrupted`, ``SIGINT`` for a plain Ctrl-C."""
    return exc.signal_name if isinstance(exc, Interrupted) else "SIGINT"


def interrupt_exit_code(exc: BaseException) -> int:
    """The shell's exit code for a process ended by that signal: 128 + its number."""
    return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)


@contextlib.contextmanager
def interrupt_on(*signums: int) -> Iterator[None]:
    """Within the block, the given signals (default: SIGTERM) raise :class:`Interrupted`
    in the main thread, as Ctrl-C raises KeyboardInterrupt. Earlier handlers come back
    afterwards. Outside the main thread this does nothing (Python only lets the main
    thread set handlers)."""
    signums = signums or (signal.SIGTERM,)
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signals_at_safe_points() -> Iterator[Callable[[], None]]:
    """Within the block, SIGINT and SIGTERM are only noted; the function the block gets
    delivers a noted signal to its earlier handler (Ctrl-C's KeyboardInterrupt, or
    :class:`Interrupted` under :func:`interrupt_on`) where it is called, and a signal
    still noted at the block's end is delivered then.

    Why: :func:`run_calls`'s loop waits in ``concurrent.futures.wait``, which holds every
    pending future's lock for a moment, and submits under the pool's locks. A
    KeyboardInterrupt raised inside either left a lock held, and the pool's shutdown then
    waited for it for ever (seen once in CI: `lkm run --jobs 2` hung after Ctrl-C). The
    loop calls the function after each wait of at most :data:`POLL_SECONDS`, so an
    interrupt still stops it within a fraction of a second. Signals the process ignores
    stay ignored; outside the main thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    noted: list[int] = []
    previous: dict[int, Any] = {}

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler not in (signal.SIG_IGN, None):
            previous[signum] = signal.signal(signum, note)

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        previous.clear()

    def deliver() -> None:
        if not noted:
            return
        signum, handlers = noted[0], dict(previous)
        noted.clear()
        restore()
        handler = handlers[signum]
        if callable(handler):
            handler(signum, None)  # raises, as it would have at the signal
        else:  # SIG_DFL: the signal's own action (SIGTERM ends the process)
            os.kill(os.getpid(), signum)

    try:
        yield deliver
    finally:
        if previous:  # the block ended without an error: deliver what came meanwhile
            deliver()
        restore()


#: Worker processes when none are asked for (every command's ``--jobs``, :func:`lkm.api.run`):
#: one worker, which gets every usable core's BLAS and OpenMP threads
#: (:func:`threads_per_worker`), so the numerical fits still use the whole machine; more
#: workers (``--jobs 2``, ``-1`` for one per core) also hold more copies of the data and
#: the kernel matrices, and are asked for. The same on every machine, as scikit-learn's
#: ``n_jobs=None``.
DEFAULT_JOBS = 1


def effective_jobs(jobs: int) -> int:
    """Worker count for ``--jobs``: ``-1`` is one per core, ``-2`` all but one, and so on."""
    if jobs == 0:
        raise ValueError("jobs must be a positive number of workers, or -1 for one per core")
    return jobs if jobs > 0 else max(1, cpu_count() + 1 + jobs)


def cpu_count() -> int:
    """Usable cores: CPU affinity and cgroup quotas counted (joblib's count)."""
    from joblib import cpu_count as joblib_cpu_count

    return int(joblib_cpu_count())


def threads_per_worker(jobs: int, cores: int | None = None) -> int:
    """OpenMP/BLAS threads each of ``jobs`` workers gets on ``cores`` cores: ``max(1, C // jobs)``."""
    return max(1, (cores if cores is not None else cpu_count()) // max(1, jobs))


#: OpenBLAS's spin wait before an idle thread sleeps, as 2^N cycles (4: its shortest).
OPENBLAS_THREAD_TIMEOUT = 4


def worker_env(threads: int) -> dict[str, str]:
    """Environment for new workers: thread counts and passive OpenMP waiting, unless set by the user."""
    env = {var: os.environ.get(var, str(threads)) for var in THREAD_VARS}
    env["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
    # OpenBLAS's idle threads spin before sleeping; at its shortest wait (2^4 cycles) the
    # quickstart with --jobs 1 (2 BLAS threads) took 7.3 s of CPU instead of 12.2 s, as much as --jobs 2
    env["OPENBLAS_THREAD_TIMEOUT"] = os.environ.get("OPENBLAS_THREAD_TIMEOUT", str(OPENBLAS_THREAD_TIMEOUT))
    return env


# -- in the worker ------------------------------------------------------------------
_watchdog: threading.Thread | None = None


def start_parent_watchdog(parent_pid: int, interval: float = WATCHDOG_SECONDS) -> bool:
    """In a worker process, start (once) a daemon thread that ends the process with
    ``os._exit`` as soon as ``parent_pid`` is no longer its parent (the parent died and
    the worker was re-parented). Does nothing in the parent itself; returns whether a
    watchdog runs in this process."""
    global _watchdog
    if os.getpid() == parent_pid:
        return False
    if _watchdog is not None and _watchdog.is_alive():
        return True
    watched = os.getppid()
    if watched != parent_pid and not pid_alive(parent_pid):
        os._exit(1)  # the parent died before this worker got going
    # Normally watched == parent_pid; if the worker was started through an intermediate
    # process, watch that one (it dies with the parent's executor).

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != watched:
                os._exit(1)

    _watchdog = threading.Thread(target=watch, name="lkm-parent-watchdog", daemon=True)
    _watchdog.start()
    return True


def _init_worker(parent_pid: int) -> None:
    """Loky initializer: Ctrl-C is the parent's to handle; die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    start_parent_watchdog(parent_pid)


def user_code_failures() -> tuple[type[BaseException], ...]:
    """The exceptions of user code (an estimator's fit or predict) that fail one fit
    rather than the run: every Exception, ``SystemExit`` (``sys.exit`` in a fit), and
    ``KeyboardInterrupt`` where it cannot be the user's Ctrl-C, i.e. in a process that
    ignores SIGINT (a worker: the parent handles Ctrl-C). In the main process a
    KeyboardInterrupt still stops the run."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return (Exception, SystemExit, KeyboardInterrupt)
    return (Exception, SystemExit)


def describe_user_failure(exc: BaseException, stage: str) -> str:
    """One line for a failure of user code in ``stage`` (``fit``, ``predict``):
    ``fit called sys.exit(0)``, ``fit raised KeyboardInterrupt``, else ``Type: message``."""
    if isinstance(exc, SystemExit):
        return f"{stage} called sys.exit({'' if exc.code is None else repr(exc.code)})"
    if isinstance(exc, KeyboardInterrupt):
        return f"{stage} raised KeyboardInterrupt"
    return f"{type(exc).__name__}: {exc}"


#: Prefix of lkm's own environment settings (``LKM_DATA_DIR``, ``LKM_CACHE_DIR``,
#: ``LKM_DISTANCE_CACHE``, ``LKM_MEMORY_LIMIT``, ...): the ones a job reads at call time.
SETTINGS_PREFIX = "LKM_"


def lkm_settings() -> dict[str, str]:
    """This process's ``LKM_*`` environment variables: what each call of a run carries to
    its worker (:func:`call_capped`)."""
    return {k: v for k, v in os.environ.items() if k.startswith(SETTINGS_PREFIX)}


def apply_settings(settings: Mapping[str, str]) -> None:
    """Make this process's ``LKM_*`` variables exactly ``settings``. A worker of the pool
    outlives the run that started it, and jobs read these variables when they run: a
    later run with another ``LKM_DATA_DIR`` or ``LKM_DISTANCE_CACHE`` reuses the worker
    (its pool is keyed on the thread settings only), so each call brings the caller's."""
    for key in [k for k in os.environ if k.startswith(SETTINGS_PREFIX) and k not in settings]:
        del os.environ[key]
    os.environ.update(settings)


def call_capped(fn: Callable[..., Any], args: tuple[Any, ...], threads: int,
                settings: Mapping[str, str] | None = None) -> Any:
    """Run one job with each thread pool at most ``threads`` (a job may lower it further
    inside), under the caller's ``LKM_*`` ``settings`` when given (:func:`apply_settings`).
    A pool already below, as a user's ``OPENBLAS_NUM_THREADS=1`` leaves it in the
    worker, keeps its count: the cap only ever lowers."""
    from threadpoolctl import ThreadpoolController

    if settings is not None:
        apply_settings(settings)

    controller = ThreadpoolController()  # the libraries loaded now (a job may have loaded more)
    limits: dict[str, int] = {}
    for lib in controller.lib_controllers:  # keyed by prefix; copies of one library take their lowest
        limits[lib.prefix] = min(threads, lib.num_threads, limits.get(lib.prefix, threads))
    with controller.limit(limits=limits):
        return fn(*args)


# -- in the main process ----------------------------------------------------------
def run_calls(
    calls: Iterable[Call],
    *,
    jobs: int,
    on_result: Callable[[Any], None],
    on_wait: Callable[[], None] | None = None,
    resume: Callable[[Call], Call | None] | None = None,
    on_dead: Callable[[Call, str], Call | None] | None = None,
) -> None:
    """Run ``fn(*args)`` for every call in ``jobs`` worker processes, calling
    ``on_result`` in the main process with each result as it arrives (any order), and
    ``on_wait`` after every wait of at most :data:`POLL_SECONDS` (progress between results).

    At most ``2 * jobs`` calls are queued at a time. On any exception in the main
    process (KeyboardInterrupt, :class:`Interrupted`) or a call's exception, the
    workers are killed before the exception propagates; a call in flight is lost.

    A worker that dies breaks the pool and every call queued in it: each is rerun in a
    fresh pool, one at a time (``resume(call)`` first gives what is left of it, None:
    nothing). A call whose worker dies again, alone, goes to ``on_dead(call, reason)``
    with ``reason`` = ``the worker process died (exit code N) twice``, which returns what
    is left to run afresh (or None); without ``on_dead`` the pool's error propagates.
    """
    jobs = effective_jobs(jobs)
    threads = threads_per_worker(jobs)
    settings = lkm_settings()  # as the run starts: a worker may come from an earlier run
    context = uuid.uuid4().hex
    executor = _executor(jobs, context)
    todo = iter(calls)
    pending: dict[Any, tuple[Call, bool]] = {}  # future -> (call, is a rerun)
    again: list[Call] = []  # calls whose worker died once: rerun one at a time
    finished = False
    try:
        with signals_at_safe_points() as deliver_signals:
            more = True
            while True:
                deliver_signals()
                if again:  # reruns go alone, so that a second death is their own
                    if not pending:
                        item = resume(again.pop(0)) if resume is not None else again.pop(0)
                        if item is not None:
                            pending[executor.submit(call_capped, item[0], item[1], threads, settings)] = (item, True)
                        continue
                else:
                    while more and len(pending) < 2 * jobs:
                        item = next(todo, None)
                        if item is None:
                            more = False
                            break
                        pending[executor.submit(call_capped, item[0], item[1], threads, settings)] = (item, False)
                if not pending:
                    break
                done, _ = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                broken: BrokenProcessPool | None = None
                for future in done:
                    call, rerun = pending.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool as exc:
                        if on_dead is None:
                            raise
                        broken = exc
                        if not rerun:
                            again.append(call)
                            continue
                        rest = on_dead(call, f"the worker process died{_exit_code(exc)} twice")
                        if rest is not None:  # never tried: a first attempt, in the fresh pool
                            todo, more = itertools.chain([rest], todo), True
                        continue
                    on_result(result)
                if broken is not None:
                    # the whole pool is broken: its other calls fail too (at once); rerun them as well
                    for future, (call, _) in list(pending.items()):
                        del pending[future]
                        try:
                            result = future.result()
                        except BrokenProcessPool:
                            again.append(call)
                            continue
                        on_result(result)
                    # a fresh pool: the broken one ended first, so that it is not handed out again
                    with contextlib.suppress(Exception):
                        executor.terminate(kill_workers=True)
                    executor = _executor(jobs, context)
                if on_wait is not None:
                    on_wait()
        finished = True
    finally:
        if finished:
            _release_memmaps(executor, context)
        else:
            executor.terminate(kill_workers=True)  # also removes the shared memmaps


def _exit_code(exc: BaseException) -> str:
    """`` (exit code N)`` from loky's message on a dead worker (``{EXIT(3)}``,
    ``{SIGKILL(-9)}``), or nothing when it names none."""
    found = re.search(r"\{[A-Z0-9]+\((-?\d+)\)", str(exc))
    return f" (exit code {found.group(1)})" if found else ""


def _executor(jobs: int, context: str | None = None) -> Any:
    """The reusable pool of ``jobs`` workers (joblib's memmapping executor: the same pool
    for the same settings, so workers started by :func:`warm_workers` run the fits)."""
    global _pool
    from joblib.executor import get_memmapping_executor

    previous = _pool
    _pool = get_memmapping_executor(
        jobs, timeout=IDLE_SECONDS, env=worker_env(threads_per_worker(jobs)), initializer=_init_worker,
        initargs=(os.getpid(),), context_id=context,
    )
    if previous is not None and _pool is not previous:
        _end_replaced(previous)
    return _pool


def _end_replaced(pool: Any) -> None:
    """Delete the shared memmaps of a pool that joblib replaced by a new one (other
    settings: ``lkm reproduce`` runs its perturbed variants with another thread count).

    joblib shuts the old pool down and waits for its workers, but a plain shutdown leaves
    the shared arrays its workers had received still counted in joblib's resource
    tracker (this run's own release, :func:`_release_memmaps`, only lowers the count),
    which deleted them only at exit, warning "resource_tracker: There appear to be N
    leaked file objects to clean up at shutdown".
    Terminating it, as a broken pool is, deletes and unregisters them: its workers are gone."""
    with contextlib.suppress(Exception):  # a pool already ended has nothing left to delete
        pool.terminate(kill_workers=True)


#: The pool :func:`_executor` last returned (None before the first): what :func:`stop_workers` ends.
_pool: Any = None


def stop_workers() -> None:
    """Kill the idle workers now. A command line calls this as it ends: otherwise the
    interpreter's exit waits for each worker to shut down its imports (~0.4 s). Their
    results are all collected by then, and every record is on disk before its result is
    returned, so nothing is lost; a library user keeps the pool for the next run, and this
    runs at the interpreter's exit. Terminating, unlike loky's shutdown at exit, deletes and
    unregisters the arrays shared with the workers: after ``lkm.api.run`` on data sent as
    a memmap, a script otherwise ended with loky's "There appear to be N leaked file
    objects to clean up at shutdown" warning."""
    global _pool
    if _pool is not None:
        with contextlib.suppress(Exception):  # an already broken pool has nothing to stop
            _pool.terminate(kill_workers=True)
        _pool = None


def preload(modules: list[str]) -> None:
    """In a worker: import ``modules`` (what its first job would import)."""
    import importlib

    for name in modules:
        importlib.import_module(name)


@contextlib.contextmanager
def warm_workers(jobs: int, modules: list[str]) -> Iterator[None]:
    """Start ``jobs`` workers now, each importing ``modules``, so that their start-up
    (a new interpreter importing numpy, scikit-learn and the estimators: about a second)
    overlaps the main process's own work (loading the spec and data, planning) instead
    of following it. :func:`run_calls` with the same ``jobs`` then reuses them. An
    exception (Ctrl-C included) inside the block kills them before it propagates."""
    jobs = effective_jobs(jobs)
    executor = _executor(jobs)
    futures = [executor.submit(preload, modules) for _ in range(jobs)]
    try:
        yield
    except BaseException:
        # Killing the pool before its manager thread has queued the calls makes loky's
        # thread fail (KeyError, printed as a traceback): wait for that first (milliseconds).
        deadline = time.monotonic() + 1.0
        while not all(f.running() or f.done() for f in futures) and time.monotonic() < deadline:
            time.sleep(0.005)
        executor.terminate(kill_workers=True)
        raise


def _release_memmaps(executor: Any, context: str) -> None:
    """Delete this run's shared-memory copies of the data, as ``joblib.Parallel`` does
    after each call; the idle workers stay for the next run. (Private joblib API: if it
    moves, the folder is removed at exit instead.)"""
    with contextlib.suppress(AttributeError, OSError):
        executor._temp_folder_manager._clean_temporary_resources(context_id=context, force=False)
    # At exit the pool is terminated first (exit handlers run last registered first), before
    # joblib's handler for this run's folder deletes it with its arrays still registered.
    atexit.unregister(stop_workers)
    atexit.register(stop_workers)


def run_in_process(
    calls: Iterable[Call],
    *,
    on_result: Callable[[Any], None],
) -> None:
    """Run the calls one by one in this process (debuggers, profilers), under the
    thread cap of one job."""
    threads = threads_per_worker(1)
    for fn, args in calls:
        on_result(call_capped(fn, args, threads))
