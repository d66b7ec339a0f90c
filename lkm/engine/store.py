"""The run directory: append-only task records, tidy results, provenance.

Layout of a run directory::

    .lkm-run               marker: this folder was created by lkm (JSON: lkm version, created_at)
    .lkm-lock              lock file: flock-ed by the process writing here (pid, host, command)
    spec.yaml              the validated spec the run used
    plan.json              the plan's task ids, unavailable datasets, and the sha256 of the
                           spec.yaml it was planned from (``lkm report`` refuses a changed spec)
    provenance.json        lkm version, git commit, packages, BLAS and its threads, CPU model,
                           dataset checksums, seeds, command — of the latest run; earlier
                           runs' summaries (command, started_at, seconds, tasks, git commit)
                           in its ``history`` list, oldest first
    requirements.lock.txt  the installed packages, pinned (``pip install -r`` reinstalls them)
    records/part-*.jsonl   one JSON record per finished task, appended and flushed at once
    results.csv/.parquet   the tidy table of all records of the current plan
    tables/  figures/      written by lkm.report (``tables/.report-stamp``: what they were
                           built from and the files written, see :meth:`RunStore.report_is_current`)

Records are only ever appended. Each carries a deterministic ``task_id``; a rerun skips
ids already completed, so a run killed at any moment (even ``kill -9``) resumes with
nothing lost and nothing duplicated. A partly written last line is ignored on reading;
other malformed lines (invalid JSON, not an object, no ``task_id``) are skipped with one
:class:`StoreWarning` that counts them (once per process for the same count). A record counts as completed only with
``status: ok`` and its metric (``accuracy`` for fits, ``rows`` for studies); otherwise
the task is recomputed on resume. Gzipped parts (``part-*.jsonl.gz``, as in the
committed snapshots under ``docs/runs/``) are read the same way.

Ownership and locking: :meth:`RunStore.lock` refuses a non-empty folder lkm did not
create (no marker; a pre-marker run folder holding only lkm's files is adopted), marks
the folder, and holds an exclusive ``flock`` for as long as the process writes (the
kernel drops it when the process dies, even by ``kill -9``). ``prepare(fresh=True)``
deletes only lkm's own files (:data:`OWN_NAMES`). Derived files (results, tables,
figures, spec.yaml, plan.json, provenance) are written atomically (:func:`atomic_write`):
a full disk leaves the previous file intact and ends in one :class:`LkmError` line.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import hashlib
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lkm.errors import LkmError
from lkm.files import TMP_PREFIX, atomic_save, atomic_write, os_message, text_sha256, write_csv
from lkm.methods.extras import NOT_RUN

if TYPE_CHECKING:  # pandas is imported where tables are made, not by every command
    import pandas as pd

try:  # POSIX only; elsewhere a run folder is not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

PROVENANCE_PACKAGES = [
    "lkm", "numpy", "scipy", "scikit-learn", "libsvm-official", "annoy", "hnswlib", "pandas",
    "joblib", "matplotlib", "pydantic", "pooch", "pyyaml", "typer", "rich", "dask", "distributed",
]

MARKER = ".lkm-run"
LOCK_FILE = ".lkm-lock"
#: Everything lkm writes into a run folder; ``--fresh`` deletes these and nothing else.
OWN_DIRS = ("records", "tables", "figures", "splits")
OWN_FILES = ("results.csv", "results.parquet", "plan.json", "spec.yaml", "provenance.json",
             "provenance-history.jsonl", "requirements.lock.txt")
OWN_NAMES = frozenset((*OWN_DIRS, *OWN_FILES, MARKER, LOCK_FILE))
#: Earlier runs kept in provenance.json's ``history``.
HISTORY_LIMIT = 200


class StoreWarning(UserWarning):
    """Something in a run folder was skipped (malformed record lines); the run goes on.

    Printed as one line, ``warning: <message>`` (no source line)."""


def _format_warning(message, category, filename, lineno, line=None):  # type: ignore[no-untyped-def]
    if isinstance(category, type) and issubclass(category, StoreWarning):
        return f"warning: {message}\n"
    return _FORMAT_WARNING(message, category, filename, lineno, line)


_WARNED: set[str] = set()
#: Parsed record frames by the parts' fingerprint (the files, wherever reached from), least recently used first.
_FRAMES: dict[tuple[tuple[str, int, int, int, int], ...], tuple[list[dict[str, Any]], pd.DataFrame]] = {}
#: Frames :data:`_FRAMES` keeps (a report of the shipped pack reads about 70 runs).
MAX_CACHED_FRAMES = 128
_FORMAT_WARNING = warnings.formatwarning
warnings.formatwarning = _format_warning


def task_id(payload: dict[str, Any]) -> str:
    """A short stable hash of everything that determines a task's result."""
    blob = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


#: Status of a task whose setting the method refuses by definition
#: (:class:`lkm.errors.NotApplicable`): complete, not a failure, never retried.
NOT_APPLICABLE = "n/a"


def is_complete(rec: dict[str, Any]) -> bool:
    """An ok record with its metric: ``accuracy`` (a number in [0, 1]) for a fit, ``rows``
    (a list) for a study; or a not-applicable record with its reason. Anything else is
    recomputed on resume."""
    if rec.get("status") == NOT_APPLICABLE:
        return isinstance(rec.get("error"), str)
    if rec.get("status") != "ok":
        return False
    if rec.get("kind") == "study":
        return isinstance(rec.get("rows"), list)
    acc = rec.get("accuracy")
    return isinstance(acc, (int, float)) and not isinstance(acc, bool) and math.isfinite(acc) and 0 <= acc <= 1


# -- the run folder's lock -------------------------------------------------------------
class RunLock:
    """An exclusive, non-blocking ``flock`` on ``ROOT/.lkm-lock`` (see :meth:`RunStore.lock`).

    Reentrant within a process; released by :meth:`release`, on leaving the ``with``
    block, or by the kernel when the process ends (any way, ``kill -9`` included). The
    lock file keeps who holds it (pid, host, command, started_at) for the next one's
    message; a file left by a dead process is not a lock.
    """

    _held: dict[str, list[Any]] = {}  # resolved lock path -> [file object, depth]

    def __init__(self, store: RunStore, claim: bool = True) -> None:
        self.store, self.claim = store, claim
        self._key: str | None = None

    def acquire(self) -> RunLock:
        if self._key is not None:
            return self
        root = self.store.root
        if self.claim:
            self.store.claim()
        elif not root.is_dir():
            raise LkmError(f"{root}: not a run folder")
        path = root / LOCK_FILE
        key = str(path.resolve())
        held = RunLock._held.get(key)
        if held is not None:
            held[1] += 1
            self._key = key
            return self
        try:
            fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (kept open while held)
        except OSError as exc:
            raise LkmError(f"cannot lock {root}: {os_message(exc)}") from exc
        if fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read()
                fh.close()
                raise LkmError(f"{root} is being written by {_describe_holder(holder)}; "
                               "wait for it or use another --out") from None
            except OSError:  # a filesystem without flock (some network mounts): unlocked
                pass
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({
            "pid": os.getpid(), "host": socket.gethostname(), "command": _command_line(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }) + "\n")
        fh.flush()
        RunLock._held[key] = [fh, 1]
        self._key = key
        return self

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None or key not in RunLock._held:
            return
        held = RunLock._held[key]
        held[1] -= 1
        if held[1] > 0:
            return
        del RunLock._held[key]
        fh = held[0]
        with contextlib.suppress(OSError):
            fh.seek(0)
            fh.truncate()  # nobody holds it now
        fh.close()  # closing the only descriptor drops the flock

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # a lock taken without `with` and never released
        with contextlib.suppress(Exception):
            self.release()


def _describe_holder(text: str) -> str:
    try:
        info = json.loads(text)
        if not isinstance(info, dict) or "pid" not in info:
            raise ValueError
    except ValueError:
        return "another lkm process"
    host = f" on {info['host']}" if info.get("host") and info.get("host") != socket.gethostname() else ""
    return f"pid {info['pid']}{host} ({info.get('command') or 'lkm'}, since {info.get('started_at') or '?'})"


def _command_line() -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in ["lkm", *sys.argv[1:]])[:300]


class RecordTally:
    """Counts the record lines appended to a run folder's part files since it was made:
    the fits workers have finished so far (progress per fit while a job's other fits
    run), and per (method, data set) how many and their recorded seconds (fit + predict),
    which :func:`seconds_left` turns into an estimate. Reads only the bytes appended since
    the last :meth:`update`."""

    def __init__(self, records_dir: Path) -> None:
        self.records_dir = records_dir
        self._offsets = {p: p.stat().st_size for p in self._parts()}
        self._partial: dict[Path, bytes] = {}
        self.count = 0
        self.fits: dict[tuple[str, str], int] = {}
        self.seconds: dict[tuple[str, str], float] = {}

    def _parts(self) -> list[Path]:
        return list(self.records_dir.glob("part-*.jsonl")) if self.records_dir.is_dir() else []

    def update(self) -> int:
        """Lines completed since the tally was made (a line being written counts once done)."""
        for path in self._parts():
            start = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as fh:
                    fh.seek(start)
                    chunk = fh.read()
            except OSError:
                continue
            self._offsets[path] = start + len(chunk)
            self.count += chunk.count(b"\n")
            *lines, rest = (self._partial.pop(path, b"") + chunk).split(b"\n")
            if rest:
                self._partial[path] = rest
            for line in lines:
                self._add(line)
        return self.count

    def _add(self, line: bytes) -> None:
        try:
            record = json.loads(line)
            key = (str(record.get("method", "")), str(record.get("dataset", "")))
            seconds = float(record.get("fit_seconds", 0.0)) + float(record.get("predict_seconds", 0.0))
        except (ValueError, TypeError, AttributeError):
            return
        self.fits[key] = self.fits.get(key, 0) + 1
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds


#: Bounds of the exponent of a data set's relative cost in its size (training rows × classes)
#: (:func:`seconds_left`): from a k-NN's linear pass to a dense factorization's n³.
SIZE_EXPONENT = (1.0, 3.0)


def seconds_left(remaining: dict[tuple[str, str], int], fits: dict[tuple[str, str], int],
                 seconds: dict[tuple[str, str], float], workers: int,
                 sizes: dict[str, int] | None = None) -> float | None:
    """Wall seconds the ``remaining`` fits per (method, data set) should take on ``workers``
    workers; None before any fit is recorded. Fits of different methods differ a
    thousandfold in cost (a k-NN fit against a gradient-boosted 26-class fit), and one
    method's fits as much between data sets, so counting fits alone misjudges a mixed run
    by hours, and so does a method's mean when the costly sets came first.

    Each remaining fit costs, in this order: its (method, data set)'s mean recorded
    seconds so far; else its method's mean (all methods' mean for a method not yet
    seen) times the data set's relative cost, a two-way multiplicative model. A data
    set's relative cost is the geometric mean, over the methods recorded on it and on
    some other set, of the pair's mean over the method's mean; for a set with no such
    record yet it is extrapolated from its size (``sizes``: training rows × classes) by
    a power law fitted to the recorded sets (exponent within :data:`SIZE_EXPONENT`; 1
    when fewer than two sizes are known), and 1 without ``sizes``. Replayed over the
    benchmark's cold run in the runner's order (largest jobs first), the estimate read
    0.55–1.09× the fit seconds left from a fifth of the way on, where the methods' means
    alone read up to 6.2× (docs/speed.md, "Time left")."""
    done = sum(fits.values())
    if done == 0:
        return None
    overall = sum(seconds.values()) / done
    method_fits: dict[str, int] = {}
    method_seconds: dict[str, float] = {}
    for (m, d), n in fits.items():
        method_fits[m] = method_fits.get(m, 0) + n
        method_seconds[m] = method_seconds.get(m, 0.0) + seconds[(m, d)]
    method_mean = {m: method_seconds[m] / n for m, n in method_fits.items()}
    sets_of = Counter(m for (m, _) in fits)
    log_ratios: dict[str, list[float]] = {}
    for (m, d), n in fits.items():  # a method recorded on one set says nothing of relative costs
        if n and sets_of[m] > 1 and seconds[(m, d)] > 0 and method_mean[m] > 0:
            log_ratios.setdefault(d, []).append(math.log(seconds[(m, d)] / n / method_mean[m]))
    log_cost = {d: sum(v) / len(v) for d, v in log_ratios.items()}
    extrapolate = _size_law(log_cost, sizes or {})

    def per_fit(m: str, d: str) -> float:
        if fits.get((m, d)):
            return seconds[(m, d)] / fits[(m, d)]
        base = method_mean.get(m, overall)
        if d in log_cost:
            return base * math.exp(log_cost[d])
        return base * extrapolate(d)

    work = sum(n * per_fit(m, d) for (m, d), n in remaining.items() if n > 0)
    return work / max(1, workers)


def _size_law(log_cost: dict[str, float], sizes: dict[str, int]) -> Callable[[str], float]:
    """A data set's relative cost from its size: ``exp(c) · size^e``, the least-squares
    line through the recorded sets' (log size, log relative cost), e clipped to
    :data:`SIZE_EXPONENT` (1 with fewer than two distinct sizes); 1 for a set of unknown size."""
    known = [(math.log(sizes[d]), c) for d, c in log_cost.items() if sizes.get(d, 0) > 0]
    if not known:
        return lambda d: 1.0
    mean_x = sum(x for x, _ in known) / len(known)
    mean_y = sum(y for _, y in known) / len(known)
    spread = sum((x - mean_x) ** 2 for x, _ in known)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in known) / spread if spread > 0 else 1.0
    slope = min(max(slope, SIZE_EXPONENT[0]), SIZE_EXPONENT[1])

    def relative(d: str) -> float:
        n = sizes.get(d, 0)
        return math.exp(mean_y + slope * (math.log(n) - mean_x)) if n > 0 else 1.0

    return relative


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (if it was running) for the block. A run's
    records are tens of thousands of JSON lines holding millions of small lists (the
    misclassified rows); while they are built, the collector's full passes traverse the
    whole growing heap again and again: 2.7× the parse time of the shipped snapshot.
    JSON objects hold no reference cycles, so nothing is left for it to collect."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _frame_of(recs: list[dict[str, Any]]) -> pd.DataFrame:
    """Records as a tidy DataFrame, plus one ``param_<name>`` column per parameter (for
    filtering and plotting; ``params`` keeps the dict).

    Text columns hold Python strings (object dtype), not pandas' Arrow-backed ``str``:
    the reports and claims filter these frames by boolean masks thousands of times, and
    each filter of an Arrow column is a separate ``take`` (`lkm docs check`: 57 s → 45 s)."""
    import pandas as pd

    if not recs:
        return pd.DataFrame()
    df = pd.DataFrame.from_records(recs)
    params = pd.DataFrame.from_records([r.get("params") or {} for r in recs], index=df.index)
    frame = pd.concat([df, params.add_prefix("param_")], axis=1)
    text = [c for c, dtype in frame.dtypes.items() if isinstance(dtype, pd.StringDtype)]
    return frame.astype(dict.fromkeys(text, object)) if text else frame


class RunStore:
    """Reads and appends the records of one run directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.records_dir = self.root / "records"

    # -- setup ------------------------------------------------------------------
    def is_lkm_folder(self) -> bool:
        """The folder carries lkm's marker."""
        return (self.root / MARKER).is_file()

    def claim(self, *, create: bool = True) -> None:
        """Make sure lkm may write here, else raise (writing nothing): the folder is
        absent, empty, carries lkm's marker, or is a run folder from before markers
        (only lkm's own names, with spec.yaml or records/). Then, with ``create``, creates
        it and its marker (``create=False`` only checks: the CLI checks before loading
        data, so that a bad spec or dataset leaves no folder behind)."""
        root = self.root
        if root.exists() and not root.is_dir():
            raise LkmError(f"{root} is a file, not a folder; choose another --out")
        if root.is_dir() and not self.is_lkm_folder():
            try:
                names = {p.name for p in root.iterdir()}
            except OSError as exc:
                raise LkmError(f"cannot read {root}: {os_message(exc)}") from exc
            legacy = bool(names & {"spec.yaml", "records"}) and all(
                n in OWN_NAMES or n.startswith(TMP_PREFIX) for n in names)
            if names and not legacy:
                raise LkmError(f"{root} exists and was not created by lkm (no {MARKER} marker); choose another --out")
        if create and not self.is_lkm_folder():
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LkmError(f"cannot create {root}: {os_message(exc)}") from exc
            atomic_write(root / MARKER, json.dumps({
                "lkm": _pkg_version("lkm"), "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "note": "a run folder written by lkm; `lkm run --fresh` deletes only lkm's files here",
            }, indent=1) + "\n")

    def lock(self, *, claim: bool = True) -> RunLock:
        """Exclusive lock on this run folder for the writing process (context manager).

        A folder locked by another process raises :class:`LkmError` naming its pid,
        command and start time. With ``claim`` (default) the folder is first checked
        and marked (:meth:`claim`); ``claim=False`` locks an existing run folder as it
        is (``lkm report``)."""
        return RunLock(self, claim)

    def prepare(self, *, fresh: bool = False) -> None:
        """Create the directory (checked and marked, see :meth:`claim`); ``fresh``
        discards everything lkm wrote here before (:data:`OWN_NAMES`) and nothing else."""
        self.claim()
        if fresh:
            for entry in self.root.iterdir():
                name = entry.name
                if name in (MARKER, LOCK_FILE) or not (name in OWN_NAMES or name.startswith(TMP_PREFIX)):
                    continue
                try:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
                except OSError as exc:
                    raise LkmError(f"--fresh: cannot delete {entry}: {os_message(exc)}") from exc
        try:
            self.records_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LkmError(f"cannot create {self.records_dir}: {os_message(exc)}") from exc

    # -- records ----------------------------------------------------------------
    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append records to this process's part file, flushing after each line."""
        self.records_dir.mkdir(parents=True, exist_ok=True)
        path = self.records_dir / f"part-{socket.gethostname()}-{os.getpid()}.jsonl"
        with open(path, "a+b") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:  # a line cut by a kill must not swallow the next record
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
            for rec in records:
                fh.write((json.dumps(rec, default=json_default) + "\n").encode())
                fh.flush()

    def iter_records(self) -> Iterable[dict[str, Any]]:
        """One record per task id, in order of first appearance: its first completed
        record (:func:`is_complete`) if any, else its first attempted one (a ``not run``
        record, written while an optional extra was missing, gives way to a later fit's
        record). Malformed lines are skipped with one :class:`StoreWarning` for the whole read."""
        chosen: dict[str, dict[str, Any]] = {}
        bad: dict[str, int] = {}
        for path in self._parts():
            for rec in self._read_part(path, bad):
                tid = rec["task_id"]
                prev = chosen.get(tid)
                if prev is None or (not is_complete(prev) and (is_complete(rec) or prev.get("status") == NOT_RUN)):
                    chosen[tid] = rec
        if bad:
            self._warn_malformed(bad)
        yield from chosen.values()

    def _parts(self) -> list[Path]:
        if not self.records_dir.is_dir():
            return []
        parts = [*self.records_dir.glob("part-*.jsonl"), *self.records_dir.glob("part-*.jsonl.gz")]
        return sorted(p for p in parts if p.is_file())

    def _read_part(self, path: Path, bad: dict[str, int]) -> list[dict[str, Any]]:
        """The well-formed records of one part file, parsed with the cyclic garbage
        collector paused (:func:`_collector_paused`)."""
        opener = gzip.open if path.suffix == ".gz" else open
        records: list[dict[str, Any]] = []
        try:
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh, _collector_paused():
                for line in fh:
                    if not line.endswith("\n"):
                        continue  # the last line, cut by a kill (or still being written)
                    try:
                        rec = json.loads(line)
                    except (ValueError, RecursionError):
                        rec = None
                    if (not isinstance(rec, dict) or not isinstance(rec.get("task_id"), str) or not rec["task_id"]
                            or not isinstance(rec.get("params", {}), (dict, type(None)))):
                        if line.strip():
                            bad[path.name] = bad.get(path.name, 0) + 1
                        continue
                    records.append(rec)
        except (EOFError, zlib.error, gzip.BadGzipFile):  # a gzipped part cut short
            bad[path.name] = bad.get(path.name, 0) + 1
        except OSError as exc:
            raise LkmError(f"cannot read {path}: {os_message(exc)}") from exc
        return records

    def _warn_malformed(self, bad: dict[str, int]) -> None:
        total = sum(bad.values())
        lines = "line" if total == 1 else "lines"
        if len(bad) == 1:
            where = str(self.records_dir / next(iter(bad)))
            msg = f"{where}: {total} malformed {lines} skipped"
        else:
            detail = ", ".join(f"{k}: {v}" for k, v in sorted(bad.items()))
            msg = f"{self.records_dir}: {total} malformed {lines} skipped ({detail})"
        if msg not in _WARNED:  # a command reads the records several times: say it once
            _WARNED.add(msg)
            warnings.warn(msg, StoreWarning, stacklevel=3)

    def completed_ids(self) -> set[str]:
        """Task ids with a completed record (:func:`is_complete`): failed tasks, and ok
        records without their metric, are recomputed on resume."""
        return {r["task_id"] for r in self.iter_records() if is_complete(r)}

    def records_frame(self, task_ids: set[str] | None = None) -> pd.DataFrame:
        """Records as a tidy DataFrame (one row per task), optionally restricted to a plan.

        The records and their frame, parsed from the parts as they are on disk (names,
        sizes, modification times, inodes), are kept for the process (:data:`_FRAMES`): a
        report reads each run's records several times. The key is the files, not the
        folder's path, so a run folder whose records are linked from another's (the docs'
        verdict counts) reads them once. Each call returns its own frame.
        """
        import pandas as pd

        key = self.parts_fingerprint()
        cached = _FRAMES.pop(key, None)
        if cached is None:
            recs = list(self.iter_records())
            cached = (recs, _frame_of(recs))
        _FRAMES[key] = cached  # most recently used last
        while len(_FRAMES) > MAX_CACHED_FRAMES:
            del _FRAMES[next(iter(_FRAMES))]
        recs, frame = cached
        if task_ids is not None and not all(r["task_id"] in task_ids for r in recs):
            frame = _frame_of([r for r in recs if r["task_id"] in task_ids])
        return frame.copy() if not frame.empty else pd.DataFrame()

    def parts_fingerprint(self) -> tuple[tuple[str, int, int, int, int], ...]:
        """``(name, size, mtime_ns, inode, device)`` of each records part: changes with any
        write, and names the files wherever they are reached from (a symbolic link)."""
        out = []
        for path in self._parts():
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((path.name, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev))
        return tuple(out)

    # -- plan ---------------------------------------------------------------------
    def write_plan(self, content: dict[str, Any]) -> Path:
        """Write plan.json (atomically)."""
        return atomic_write(self.root / "plan.json", json.dumps(content, indent=1, default=json_default) + "\n")

    def read_plan(self) -> dict[str, Any]:
        """plan.json, checked against spec.yaml: raises :class:`LkmError` when it is
        missing or unreadable, or when spec.yaml changed since the run planned it (a
        report would caption one spec's numbers with another's settings). A plan.json
        from before ``spec_sha256`` is returned unchecked."""
        rerun = f"rerun `lkm run {self.root / 'spec.yaml'} --out {self.root}`"
        plan_file, spec_file = self.root / "plan.json", self.root / "spec.yaml"
        if not plan_file.is_file():
            raise LkmError(f"{plan_file}: missing, so the records of this spec cannot be told from "
                           f"earlier ones; {rerun} to rewrite it (recorded fits are not refitted)")
        try:
            plan = json.loads(plan_file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise LkmError(f"{plan_file}: unreadable ({type(exc).__name__}); {rerun} to rewrite it") from None
        if not isinstance(plan, dict) or not isinstance(plan.get("task_ids", []), list):
            raise LkmError(f"{plan_file}: not a plan written by lkm; {rerun} to rewrite it")
        expected = plan.get("spec_sha256")
        if expected is not None:
            try:
                text = spec_file.read_text(encoding="utf-8")
            except (OSError, UnicodeError) as exc:
                raise LkmError(f"cannot read {spec_file}: {exc}") from None
            if text_sha256(text) != expected:
                what = _spec_change(plan.get("spec_yaml"), text)
                raise LkmError(f"{spec_file} changed since the run{f' ({what})' if what else ''}: "
                               f"{rerun} to refit, or restore it")
        return plan

    def check_same_run(self, spec_yaml: str, task_ids: set[str]) -> None:
        """Refuse (one :class:`LkmError` line, nothing changed) to run a spec here when
        the folder holds the run of a different spec, so that a run never merges into or
        overwrites another's records, tables and spec.yaml.

        The same run: plan.json's ``spec_sha256`` is that of ``spec_yaml``, or its task
        ids are ``task_ids`` (the same fits: only how they are reported differs, e.g.
        ``outputs``, or a newer lkm writes the same spec with new defaults). Without a
        plan.json (a run killed before writing it, or older than plans), the same run is
        one whose spec.yaml is ``spec_yaml`` or whose completed records all belong to
        ``task_ids``. An empty or absent folder holds no run."""
        plan_file, spec_file = self.root / "plan.json", self.root / "spec.yaml"
        recorded_yaml: str | None = None
        try:
            plan = json.loads(plan_file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            plan = None
        if isinstance(plan, dict) and isinstance(plan.get("task_ids"), list):
            if plan.get("spec_sha256") == text_sha256(spec_yaml) or set(plan["task_ids"]) == task_ids:
                return
            recorded_yaml = plan.get("spec_yaml")
        else:
            try:
                recorded_yaml = spec_file.read_text(encoding="utf-8")
            except (OSError, UnicodeError):
                recorded_yaml = None
            if recorded_yaml == spec_yaml or self.completed_ids() <= task_ids:
                return
        what = _spec_change(recorded_yaml, spec_yaml) or "other fits"
        raise LkmError(
            f"{self.root} holds the run of a different spec ({what}); nothing was changed: "
            f"--fresh discards its records and runs this spec there, --out DIR runs it elsewhere")

    # -- derived files ----------------------------------------------------------
    def write_results(self, df: pd.DataFrame) -> list[Path]:
        """Write the tidy results table as CSV and Parquet (atomically). Every structured
        cell (a dict or list such as ``params``, ``info``, ``per_class_accuracy``) is
        written as JSON, so ``json.loads`` reads it back from either file; strings are kept
        as written and missing values stay empty; in the CSV, text a spreadsheet would
        evaluate as a formula (a name ``=cmd|...``) is quoted (:func:`lkm.files.write_csv`)."""
        csv, parquet = self.root / "results.csv", self.root / "results.parquet"
        flat = df.copy()
        for col in flat.columns:  # one type per column (parquet), JSON not Python reprs (both)
            if flat[col].dtype == object:
                flat[col] = flat[col].map(json_cell)
        write_csv(csv, flat)
        atomic_save(parquet, lambda tmp: flat.to_parquet(tmp, index=False))
        return [csv, parquet]

    # -- report freshness -------------------------------------------------------------
    def report_stamp(self, spec_yaml: str, task_ids: set[str]) -> str:
        """What the tables and figures were built from: lkm version, spec, recorded tasks."""
        lkm_version = _pkg_version("lkm")
        h = hashlib.sha1(lkm_version.encode() if lkm_version else b"")
        h.update(spec_yaml.encode())
        h.update("\n".join(sorted(self.completed_ids() & task_ids)).encode())
        return h.hexdigest()

    @property
    def _stamp_file(self) -> Path:
        return self.root / "tables" / ".report-stamp"

    def report_is_current(self, stamp: str) -> bool:
        """True when the report was last built from exactly this stamp and every file it
        wrote still exists (a deleted figure makes it stale)."""
        try:
            saved = json.loads(self._stamp_file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return False
        if not isinstance(saved, dict) or saved.get("stamp") != stamp or not isinstance(saved.get("files"), list):
            return False
        return all(isinstance(f, str) and (self.root / f).is_file() for f in saved["files"])

    def mark_report(self, stamp: str, written: Iterable[Path] = ()) -> None:
        """Record the stamp the report was built from and the files it wrote."""
        files = []
        for p in written:
            try:
                files.append(Path(p).relative_to(self.root).as_posix())
            except ValueError:
                files.append(str(p))
        atomic_write(self._stamp_file, json.dumps({"stamp": stamp, "files": sorted(set(files))}, indent=1) + "\n")

    def write_spec(self, spec_yaml: str) -> Path:
        return atomic_write(self.root / "spec.yaml", spec_yaml)

    def write_provenance(self, extra: dict[str, Any]) -> Path:
        """Record what produced the results: versions, commit, machine (CPU model, BLAS
        libraries and their thread counts in the workers that ran the fits), data
        checksums; and pin the installed packages in ``requirements.lock.txt``. The
        provenance.json this replaces goes, summarised, to the end of ``history``."""
        from lkm.engine.environment import blas_info, cpu_info, frozen_requirements

        jobs = extra.get("jobs")
        path = self.root / "provenance.json"
        prov = {
            "lkm_version": _pkg_version("lkm"),
            "git": git_state(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "machine": {"hostname": socket.gethostname(), "cpus": os.cpu_count()},
            "cpu": cpu_info(),
            "blas": blas_info(jobs if isinstance(jobs, int) else None),
            "requirements": "requirements.lock.txt",
            "packages": {p: _pkg_version(p) for p in PROVENANCE_PACKAGES},
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **extra,
            "history": _history(path),
        }
        atomic_write(self.root / "requirements.lock.txt", frozen_requirements())
        return atomic_write(path, json.dumps(prov, indent=2, default=json_default) + "\n")


def _history(path: Path) -> list[dict[str, Any]]:
    """The earlier provenance.json's ``history`` plus a summary of itself (oldest first)."""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError, RecursionError):
        warnings.warn(f"{path}: unreadable, its run history is not carried over", StoreWarning, stacklevel=3)
        return []
    if not isinstance(old, dict):
        return []
    history = [h for h in old.get("history") or [] if isinstance(h, dict)]
    git = given if isinstance(given := old.get("git"), dict) else {}
    history.append({
        "command": old.get("command"), "started_at": old.get("started_at"), "written_at": old.get("written_at"),
        "seconds": old.get("seconds"), "jobs": old.get("jobs"), "tasks": old.get("tasks"),
        "git_commit": git.get("commit"), "git_dirty": git.get("dirty"), "lkm_version": old.get("lkm_version"),
        "hostname": machine.get("hostname") if isinstance(machine := old.get("machine"), dict) else None,
    })
    return history[-HISTORY_LIMIT:]


def _spec_change(planned: Any, current: str) -> str:
    """'protocol.folds 3→5' for the first key that differs between two spec YAML texts."""
    import yaml

    if not isinstance(planned, str):
        return ""
    try:
        a, b = yaml.safe_load(planned), yaml.safe_load(current)
    except Exception:  # noqa: BLE001 - only a hint for the message
        return ""

    def first_diff(x: Any, y: Any, path: str) -> str | None:
        if isinstance(x, dict) and isinstance(y, dict):
            for k in [*x, *(k for k in y if k not in x)]:
                d = first_diff(x.get(k), y.get(k), f"{path}.{k}" if path else str(k))
                if d:
                    return d
            return None
        if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                d = first_diff(u, v, f"{path}[{i}]")
                if d:
                    return d
            return None
        if x == y:
            return None
        return f"{path or 'spec'} {shown(x)}→{shown(y)}"[:200]

    def shown(v: Any) -> str:
        return json.dumps(v, default=str) if not isinstance(v, (dict, list)) else "…"

    if isinstance(a, dict) and isinstance(b, dict):  # a derived name (sweeps) differs whenever the rest does
        unnamed = first_diff({k: v for k, v in a.items() if k != "name"}, {k: v for k, v in b.items() if k != "name"}, "")
        if unnamed:
            return unnamed
    return first_diff(a, b, "") or ""


def git_state() -> dict[str, Any]:
    """Commit and dirty flag of the source tree lkm runs from, when it is a git checkout."""
    src = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}
    return {"commit": commit or None, "dirty": bool(dirty)}


def _pkg_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def json_cell(value: Any) -> str | None:
    """A table cell of an object column as text: strings as they are, None and NaN as
    missing, anything else (dicts, lists, numbers, numpy values) as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return None
    return json.dumps(value, default=json_default)


def json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)
