"""Run a plan's jobs on a dask.distributed cluster (``--cluster ADDRESS``, ``LKM_CLUSTER``).

``ADDRESS`` is a scheduler's address (``tcp://host:8786``; a bare ``host:port`` means
tcp) or ``local:N``, a :class:`distributed.LocalCluster` of N worker processes on this
machine, one thread each. dask.distributed is the optional extra ``lkm[dask]``.

What stays as in a local run (:mod:`lkm.engine.workers`): the jobs (one per dataset, split and
method, so a sweep shares one distance cache on one worker), their order (largest
first, as a priority), and the run folder. What differs:

* **The driver alone writes the store.** A job on a worker hands each record to the
  driver as the fit finishes (a worker event on a topic of this run, for progress and so
  that a killed driver loses only the fits in flight) and returns all its records when
  it ends; the driver appends each task id once, whichever copy comes first. Workers
  need neither the run folder nor the dataset files.
* **Each dataset goes to the cluster once** (``scatter``); jobs refer to it.
* **A worker that dies** has its jobs run again elsewhere (the scheduler's
  ``allowed-failures``, 3 by default); the records it already sent are kept and their
  second copies skipped, so the finished run has every record exactly once. A job whose
  data or result the cluster lost is sent again by the driver (:data:`LOST_DATA_RESUBMITS`).
* BLAS/OpenMP threads per job: the worker's ``OMP_NUM_THREADS`` if it was started with
  one, else the machine's cores shared among the worker's threads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from lkm.errors import LkmError

#: How to install the extra, quoted in the error when dask.distributed is missing.
EXTRA_HINT = "pip install 'lkm[dask]'"
#: Seconds to wait for a scheduler to answer, and then for its first worker.
CONNECT_SECONDS = 10.0
WORKER_SECONDS = 30.0
#: Arrays smaller than this go inside each job's arguments instead of being scattered.
SCATTER_MIN_BYTES = 64 * 1024
#: dask settings of ``local:N`` workers: no statistical profiler (it samples every
#: thread's stack every 10 ms, taking the GIL from the fits).
LOCAL_WORKER_CONFIG = {"distributed.worker.profile.enabled": False}
#: Times a job is sent again after the cluster lost its data (every worker holding a
#: dataset died at once) or its result (the worker holding it died before it was
#: gathered); a worker's death during a job is the scheduler's to retry.
LOST_DATA_RESUBMITS = 3
#: ``local:N`` may start at most this many worker processes per core of this machine.
LOCAL_WORKERS_PER_CORE = 4
#: Schemes whose address is ``HOST:PORT``, HOST a name, an IPv4 or a bracketed IPv6 address.
HOST_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")
#: Characters of a host name or IPv4 address.
HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
#: Driver polling period while jobs run (an upper bound on progress and interrupt latency).
POLL_SECONDS = 0.25


def _distributed() -> Any:
    """The ``distributed`` module, or one line naming the extra that provides it."""
    try:
        import distributed
    except ImportError:
        raise LkmError(f"--cluster needs dask.distributed, which is not installed: {EXTRA_HINT}") from None
    return distributed


@dataclass(frozen=True)
class ClusterAddress:
    """A parsed ``--cluster`` value: ``local:N`` or a scheduler's address."""

    text: str
    local_workers: int | None = None  # N of local:N; None for a scheduler address

    @classmethod
    def parse(cls, text: str, label: str = "--cluster") -> ClusterAddress:
        value = text.strip()
        if value.startswith("local:"):
            n = value[len("local:"):]
            if not (n.isascii() and n.isdigit()) or int(n) < 1:
                raise LkmError(f"{label} {text!r}: local:N needs a number of worker processes N >= 1, e.g. local:2")
            from lkm.engine.workers import cpu_count

            cores = cpu_count()
            limit = LOCAL_WORKERS_PER_CORE * cores
            if int(n) > limit:
                raise LkmError(f"{label} {text!r}: at most local:{limit} on this machine "
                               f"({LOCAL_WORKERS_PER_CORE} worker processes per core, {cores} cores); "
                               "for more workers start a dask scheduler and workers on other machines")
            return cls(value, int(n))
        if "://" not in value:
            value = f"tcp://{value}"
        scheme, _, rest = value.partition("://")
        host, _, port = rest.rpartition(":")
        if (scheme not in (*HOST_SCHEMES, "inproc") or not host or not (port.isascii() and port.isdigit())
                or (scheme in HOST_SCHEMES and not _valid_host(host))):
            raise LkmError(f"{label} {text!r}: give a scheduler address such as tcp://HOST:8786, or local:N "
                           "for N worker processes on this machine")
        return cls(value)


def _valid_host(host: str) -> bool:
    """Whether ``host`` is a host name, an IPv4 address or a bracketed IPv6 address."""
    if host.startswith("[") and host.endswith("]"):
        import ipaddress

        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    return set(host) <= HOST_CHARS


class Cluster:
    """A connected client (and the local cluster it started, if any); see :func:`connect`."""

    def __init__(self, client: Any, address: ClusterAddress, local: Any = None) -> None:
        self.client, self.address, self.local = client, address, local

    @property
    def scheduler_address(self) -> str:
        return str(self.client.scheduler.address)

    def workers(self) -> dict[str, dict[str, Any]]:
        """The scheduler's workers: address -> host, threads."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return {a: {"host": w.get("host"), "nthreads": int(w.get("nthreads", 1))} for a, w in info.items()}

    def provenance(self) -> dict[str, Any]:
        """What provenance.json records of the cluster a run used."""
        import dask

        distributed = _distributed()
        workers = self.workers()
        return {
            "address": self.address.text if self.local is not None else self.scheduler_address,
            "scheduler": self.scheduler_address,
            "kind": "local" if self.local is not None else "scheduler",
            "workers": len(workers),
            "threads": sum(w["nthreads"] for w in workers.values()),
            "hosts": sorted({str(w["host"]) for w in workers.values()}),
            "dask": dask.__version__,
            "distributed": distributed.__version__,
        }

    def run(
        self,
        calls: Iterable[tuple[Callable[..., Any], tuple[Any, ...]]],
        *,
        on_result: Callable[[Any], None],
        on_record: Callable[[dict[str, Any]], None],
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        """Run ``fn(publish, *args)`` for every call on the cluster, ``publish`` being a
        function the job calls with each record as it is made (delivered here to
        ``on_record``, best effort); ``on_result`` gets each job's return value as the
        job completes. Calls come largest first: earlier calls get a higher priority.
        Arrays are scattered once, however many calls share them. Any exception here
        (Ctrl-C included) cancels the jobs still queued or running before it propagates.
        """
        distributed = _distributed()
        client = self.client
        topic = f"lkm-records-{uuid.uuid4().hex}"
        inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
        client.subscribe_topic(topic, lambda event: inbox.put(("record", json.loads(event[1]))))
        scattered: dict[int, tuple[Any, np.ndarray]] = {}
        jobs: dict[str, _Job] = {}  # future key -> the call it runs

        def submit(job: _Job) -> None:
            args = tuple(self._scatter(a, scattered) for a in job.args)
            job.sent = args
            future = client.submit(_run_on_worker, job.fn, topic, args, pure=False, priority=job.priority,
                                   key=f"lkm-job-{getattr(job.fn, '__name__', 'call')}-{uuid.uuid4().hex}")
            jobs[future.key] = job
            job.future = future
            future.add_done_callback(lambda f: inbox.put(("done", f)))

        try:
            calls = list(calls)
            for i, (fn, args) in enumerate(calls):
                submit(_Job(fn, args, len(calls) - i))
            pending = len(calls)
            while pending:
                try:
                    kind, item = inbox.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    kind = None
                if kind == "record":
                    on_record(item)
                elif kind == "done":
                    job = jobs.pop(item.key)
                    # cancelled: its data died with every worker that held it; a finished job
                    # whose result cannot be gathered: the result died with its worker
                    result = LOST if item.status == "cancelled" else _job_result(item, distributed)
                    if result is LOST and job.resubmits < LOST_DATA_RESUBMITS:
                        job.resubmits += 1
                        self._forget_lost(scattered, job.sent)
                        submit(job)  # its records already sent are written once: the driver skips repeats
                        continue
                    pending -= 1
                    if result is LOST:
                        raise LkmError(f"the cluster lost a job {LOST_DATA_RESUBMITS + 1} times in a row ({item.key}); "
                                       "its records so far are kept — run the same command again to finish")
                    item.release()  # the scheduler forgets it: a worker dying later does not run it again
                    on_result(result)
                if on_wait is not None:
                    on_wait()
            while True:  # records whose events came after their job's result: already written, skipped
                try:
                    kind, item = inbox.get_nowait()
                except queue.Empty:
                    break
                if kind == "record":
                    on_record(item)
        finally:
            with contextlib.suppress(Exception):
                client.unsubscribe_topic(topic)
            unfinished = [job.future for job in jobs.values() if not job.future.done()]
            if unfinished:
                with contextlib.suppress(Exception):
                    client.cancel(unfinished, force=True)
            with contextlib.suppress(Exception):
                client.cancel([f for f, _ in scattered.values()])

    def _scatter(self, arg: Any, scattered: dict[int, tuple[Any, np.ndarray]]) -> Any:
        """A large array as a future on the cluster, copied to every worker (so that a
        worker's death loses no data); sent once per array object."""
        if not isinstance(arg, np.ndarray) or arg.nbytes < SCATTER_MIN_BYTES:
            return arg
        key = id(arg)
        if key not in scattered:
            scattered[key] = (self.client.scatter(arg, hash=False, broadcast=True), arg)  # arg kept: ids stay unique
        return scattered[key][0]

    @staticmethod
    def _forget_lost(scattered: dict[int, tuple[Any, np.ndarray]], sent: tuple[Any, ...] = ()) -> None:
        """Drop scattered arrays the cluster has lost, so they are sent again: those whose
        future says so, and those a cancelled job was given (``sent``) — the client may
        learn that a worker's data died after the job's cancellation arrives, and a job
        resubmitted with the same lost future is cancelled again. A future sent since
        (another cancelled job already refreshed it) is not in ``sent`` and stays."""
        used = {id(a) for a in sent}
        for key in [k for k, (f, _) in scattered.items() if f.status != "finished" or id(f) in used]:
            del scattered[key]

    def close(self) -> None:
        # Silent: after Ctrl-C the in-process scheduler of a local cluster may still be
        # sending to the client just closed and logs each failed send at CRITICAL, with a
        # traceback, under the one-line message the user already has
        with _quiet_logs():
            with contextlib.suppress(Exception):
                self.client.close()
            if self.local is not None:
                with contextlib.suppress(Exception):
                    self.local.close()


@dataclass
class _Job:
    """One call submitted to the cluster: what it runs, its priority, its current future."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    priority: int
    future: Any = None
    sent: tuple[Any, ...] = ()  # the arguments as submitted (scattered arrays as their futures)
    resubmits: int = 0


#: What :func:`_job_result` returns for a job whose result the cluster lost.
LOST = object()


def _job_result(future: Any, distributed: Any) -> Any:
    """A finished job's value; :data:`LOST` when the cluster lost it (the worker holding
    its result died before it was gathered); or one line on why it could not run."""
    try:
        return future.result()
    except distributed.KilledWorker as exc:
        raise LkmError(f"a job's worker died {_allowed_failures()} times in a row ({exc}); its records so far are "
                       "kept — check the workers' memory and logs, then run the same command again") from None
    except distributed.client.FutureCancelledError:
        return LOST


def _allowed_failures() -> int:
    import dask

    return int(dask.config.get("distributed.scheduler.allowed-failures", 3)) + 1


# -- on a worker ---------------------------------------------------------------------
def _run_on_worker(fn: Callable[..., Any], topic: str, args: tuple[Any, ...]) -> Any:
    """Run one job on a dask worker under its thread cap, publishing its records on ``topic``."""
    from lkm.engine.store import json_default
    from lkm.engine.workers import call_capped

    worker = _distributed().get_worker()

    def publish(record: dict[str, Any]) -> None:
        worker.log_event(topic, json.dumps(record, default=json_default))  # events carry msgpack, not numpy

    return call_capped(fn, (publish, *args), worker_threads(worker.state.nthreads))


def worker_threads(nthreads: int) -> int:
    """BLAS/OpenMP threads for each of a worker's ``nthreads`` concurrent jobs: the
    worker's ``OMP_NUM_THREADS`` if set, else its machine's cores shared among them."""
    from lkm.engine.workers import threads_per_worker

    env = os.environ.get("OMP_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else threads_per_worker(nthreads)


def dask_setup(worker: Any) -> None:
    """Preload hook of ``local:N`` workers (``preload=["lkm.engine.cluster"]``): Ctrl-C in the
    terminal reaches the whole process group, but stopping is the driver's decision (it
    cancels the jobs and closes the cluster), as with local worker processes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_facts() -> dict[str, Any]:
    """Run on every worker at connection: the lkm it imports."""
    import lkm

    return {"lkm": lkm.__version__}


# -- in the driver -------------------------------------------------------------------
@contextlib.contextmanager
def connect(address: str, label: str = "--cluster") -> Iterator[Cluster]:
    """Connect to ``address`` (see :class:`ClusterAddress`) for the block, then disconnect
    (a ``local:N`` cluster is shut down). An unreachable scheduler, one without workers
    within :data:`WORKER_SECONDS`, or workers with another lkm are one :class:`LkmError`
    line, starting with ``label`` (where the address came from); nothing is written
    before that is known."""
    parsed = ClusterAddress.parse(address, label)
    distributed = _distributed()
    import dask
    local = None
    with _quiet_logs():
        try:
            if parsed.local_workers is not None:
                from lkm.engine.workers import threads_per_worker, worker_env

                n = parsed.local_workers
                with dask.config.set(LOCAL_WORKER_CONFIG):  # the nannies hand it to the worker processes
                    local = distributed.LocalCluster(
                        n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address="127.0.0.1:0",  # loopback, any free port: no clash with another cluster
                        memory_limit=0,  # lkm plans memory itself (lkm.numerics.kernels.check_memory)
                        # CRITICAL: when Ctrl-C stops the scheduler first, a worker's next heartbeat
                        # logs an ERROR traceback; lkm reports failed fits and dead workers itself
                        env=worker_env(threads_per_worker(n)), silence_logs=logging.CRITICAL, preload=[__name__],
                    )
                client = distributed.Client(local, set_as_default=False)
            else:
                client = distributed.Client(parsed.text, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError, RuntimeError) as exc:  # RuntimeError: "Nanny failed to start"
            if local is not None:
                local.close()
            if parsed.local_workers is not None:
                raise LkmError(f"{label} {address}: cannot start a local cluster ({' '.join(str(exc).split())})") from None
            raise LkmError(f"{label} {address}: cannot reach the scheduler ({' '.join(str(exc).split())}); start one "
                           "with `dask scheduler` and `dask worker`, or use local:N") from None
    cluster = Cluster(client, parsed, local)
    try:
        _check_workers(cluster, f"{label} {address}")
        yield cluster
    finally:
        cluster.close()


def _check_workers(cluster: Cluster, where: str) -> None:
    """At least one worker, each importing this lkm version."""
    import lkm

    try:
        cluster.client.wait_for_workers(1, timeout=WORKER_SECONDS)
    except (TimeoutError, OSError):
        raise LkmError(f"{where}: the scheduler has no workers after {WORKER_SECONDS:.0f} s; "
                       "start some with `dask worker ADDRESS`") from None
    try:
        facts = cluster.client.run(_worker_facts)
    except Exception as exc:  # noqa: BLE001 - e.g. ModuleNotFoundError raised on the worker
        raise LkmError(f"{where}: a worker cannot run lkm ({type(exc).__name__}: {exc}); "
                       "install the same lkm on every worker") from None
    other = {w: f["lkm"] for w, f in facts.items() if f["lkm"] != lkm.__version__}
    if other:
        worker, version = next(iter(other.items()))
        raise LkmError(f"{where}: worker {worker} has lkm {version}, this is lkm {lkm.__version__}; "
                       "install the same lkm on every worker")


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """distributed's logs off for the block, CRITICAL included, then as before: its
    connection retries (WARNING) while connecting, and the sends to a client just closed
    (CRITICAL, with a traceback) while a cluster closes after Ctrl-C. lkm's one-line error
    says it all. The parent's level covers loggers created inside the block; existing
    children that set their own level are disabled."""
    parent = logging.getLogger("distributed")
    children = [logging.getLogger(n) for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    level, disabled = parent.level, [lg.disabled for lg in children]
    parent.setLevel(logging.CRITICAL + 1)
    for lg in children:
        lg.disabled = True
    try:
        yield
    finally:
        parent.setLevel(level)
        for lg, was in zip(children, disabled, strict=True):
            lg.disabled = was
