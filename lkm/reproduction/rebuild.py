"""The full report from a results pack, without fitting: `lkm report --all --results
docs/runs --out DIR` (:func:`report_from_pack`).

The pack (:mod:`lkm.report.pack`) holds records, specs and provenance only; everything
the report shows is computed from them into ``DIR``, never into the pack:

1. the pack's run folders are copied to ``DIR/runs/`` (a file already there with the
   manifest's sha256 is kept);
2. on ``jobs`` processes, largest first: each run's tables and figures
   (:func:`lkm.report.build_report`), each paper's claims and tables (its
   ``write_summary``) and the benchmark's ranking — all computed from records. A step
   whose inputs (its files' sha256 and lkm's own source) are those of the last build into
   ``DIR`` is skipped (:func:`step_digest`, kept in ``DIR/.lkm-report``), so a second
   build takes seconds;
3. the report itself, ``DIR/index.html`` and ``DIR/report.md``
   (:func:`lkm.reproduction.site.build_site`); ``DIR/runs/PACK.json`` is the pack's
   manifest (its version and checksums).

Ctrl-C or SIGTERM stops a build at once: its queued steps are cancelled and its workers
killed (:func:`_stop_pool`); the steps already done are recorded, and the next build
removes the temporaries (``.lkm-tmp-<pid>-…``) a killed build left in ``DIR`` and
redoes only the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from types import ModuleType

from lkm.engine.workers import threads_per_worker
from lkm.errors import LkmError
from lkm.files import atomic_write, file_sha256, remove_stale_temps
from lkm.report.pack import MANIFEST, Pack, resolve_inside

#: The mark of a folder this module built (an existing ``--out`` must carry it or be empty).
BUILT_MARK = ".lkm-report"
#: Where the run folders go inside ``DIR``.
RUNS = "runs"


def check_out(out: Path, pack: Path) -> None:
    """Refuse an ``out`` inside the pack (or holding it), or an existing non-empty folder
    that is not a report this module built: the command never writes over other files."""
    o, p = out.resolve(), pack.resolve()
    if o == p or p in o.parents or o in p.parents:
        raise LkmError(f"--out {out}: inside (or around) the results pack {pack}; give a folder outside it, "
                       "e.g. --out results/snapshot-report")
    if out.exists() and not out.is_dir():
        raise LkmError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / BUILT_MARK).is_file():
        raise LkmError(f"--out {out}: a non-empty folder that lkm did not build; give a new or empty folder")


def sync_runs(pack: Pack, runs: Path) -> int:
    """Copy the pack's files into ``runs`` (a file with the manifest's sha256 is kept) and
    remove run folders the pack no longer has; returns the files copied. A destination
    that resolves outside ``runs`` (through a symbolic link) is refused before it is written."""
    copied = 0
    for rel, sha in pack.files.items():
        dest = resolve_inside(runs, rel)  # never outside DIR/runs, whatever the manifest or a link says
        if dest.is_file() and file_sha256(dest) == sha:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pack.root / rel, dest)
        copied += 1
    keep = set(pack.runs)
    for d in sorted(runs.iterdir()):
        if d.is_dir() and not d.is_symlink() and (d / "spec.yaml").is_file() and d.name not in keep:
            shutil.rmtree(d)
    shutil.copyfile(pack.root / MANIFEST, runs / MANIFEST)
    return copied


def _run_report(folder: str) -> str:
    """One run folder's tables and figures from its records (what `lkm report RUN` does),
    figures as PNG only: what the page shows (`lkm report DIR/runs/RUN` adds the spec's
    other formats)."""
    from lkm.engine.store import RunStore
    from lkm.report import build_report
    from lkm.spec import load_spec

    path = Path(folder)
    store = RunStore(path)
    spec = load_spec(path / "spec.yaml", max_fits=sys.maxsize)
    spec = spec.model_copy(update={"outputs": spec.outputs.model_copy(update={"formats": ["png"]})})
    with store.lock(claim=False):
        build_report(store, spec)
    return path.name


def _paper_summary(module: str, root: str) -> str:
    """A paper's claims and tables (its ``write_summary``) from the runs under ``root``."""
    importlib.import_module(module).write_summary(Path(root), False)
    return module.rsplit(".", 1)[-1]


def _benchmark(root: str) -> str:
    """The benchmark's ranking (:func:`lkm.report.ranking.write_cross_paper`)."""
    from lkm.report.ranking import write_cross_paper

    write_cross_paper(Path(root), False)
    return "benchmark ranking"


def source_digest() -> str:
    """sha256 of lkm's own source (every ``.py``, ``.yaml`` and template file of the
    package) and of the versions of the libraries that draw and compute: what a step's
    output depends on besides its records."""
    from importlib.metadata import version

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for lib in ("numpy", "scipy", "pandas", "matplotlib", "scikit-learn"):
        h.update(f"{lib}={version(lib)}\0".encode())
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml", ".j2", ".css", ".js") and p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def step_digest(source: str, pack: Pack, runs: list[str] | None) -> str:
    """What a step is computed from: lkm's source digest and the sha256 of the files of
    ``runs`` (None: every run of the pack)."""
    h = hashlib.sha256(source.encode())
    for rel, sha in sorted(pack.files.items()):
        if runs is None or rel.split("/", 1)[0] in runs:
            h.update(f"{rel}={sha}\0".encode())
    return h.hexdigest()


def _read_state(out: Path) -> dict[str, str]:
    try:
        state = json.loads((out / BUILT_MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    steps = state.get("steps") if isinstance(state, dict) else None
    return steps if isinstance(steps, dict) else {}


def _write_state(out: Path, pack: Pack, steps: dict[str, str]) -> None:
    atomic_write(out / BUILT_MARK, json.dumps({"pack": str(pack.root), "version": pack.version, "steps": steps},
                                              indent=1, sort_keys=True) + "\n")


def _worker_setup(threads: int, parent_pid: int) -> None:
    """A worker's warnings (matplotlib, scikit-learn) stay out of the command's output, and
    its BLAS uses ``threads`` threads: the workers already share the cores, and two
    BLAS threads per worker made the benchmark's posterior products 4× slower. Ctrl-C is
    the parent's to handle (it kills the workers), and SIGTERM ends a worker at once
    (a forked worker inherits the parent's handler, which would raise in its step). A
    worker ends with its parent, even one killed by ``kill -9`` (the runs' watchdog)."""
    from lkm.engine.workers import start_parent_watchdog
    from lkm.numerics.threads import blas_threads

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    warnings.simplefilter("ignore")
    blas_threads(threads).__enter__()  # for the worker's life
    start_parent_watchdog(parent_pid)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """End ``pool`` now: its queued steps cancelled, its workers killed. (Leaving its
    ``with`` block would wait for every step submitted: a minute.) A killed step's output
    is never half written (atomic writes); its stray temporary is removed by the next
    build, which redoes only the steps not recorded as done."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # private; no public kill before 3.14
    for proc in processes:
        with contextlib.suppress(OSError, ValueError):
            proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            proc.join(timeout=2)


def report_from_pack(pack: Pack, papers: dict[str, ModuleType], cross_spec: str | None, out: Path,
                     jobs: int = 2, on_done: Callable[[str, int, int], None] | None = None,
                     shown_as: str | None = None):
    """Build the complete report of ``pack`` into ``out`` (see the module docstring);
    ``on_done(what, done, total)`` is told of each finished step; ``shown_as`` is how the
    page names the pack and the command that rebuilds it (``published``; default: its
    folder). Returns
    :class:`lkm.reproduction.site.SiteFiles`."""
    from lkm.reproduction.site import build_site

    started = time.time()
    check_out(out, pack.root)
    remove_stale_temps(out, before=started, recursive=True)  # what a killed build left
    runs = out / RUNS
    runs.mkdir(parents=True, exist_ok=True)
    previous = _read_state(out)
    _write_state(out, pack, {})  # the mark first: an interrupted build is still ours to resume
    sync_runs(pack, runs)
    source = source_digest()
    # Longest first, so that no worker is left with a long step at the end: a paper's claims
    # (it reads all its runs) and the benchmark's ranking, then the runs by size.
    steps: dict[str, tuple[Callable[..., str], tuple[str, ...], str]] = {}
    for module in sorted(papers.values(), key=lambda m: -sum(r.startswith(m.__name__.rsplit(".", 1)[-1])
                                                               for r in pack.runs)):
        steps[f"paper {module.__name__}"] = (_paper_summary, (module.__name__, str(runs)),
                                             step_digest(source, pack, None))
    if cross_spec is not None and "cross_paper" in pack.runs:
        steps["benchmark"] = (_benchmark, (str(runs),), step_digest(source, pack, ["cross_paper"]))
    for name in sorted(pack.runs, key=pack.run_bytes, reverse=True):
        steps[f"run {name}"] = (_run_report, (str(runs / name),), step_digest(source, pack, [name]))
    state = {key: digest for key, (_, _, digest) in steps.items() if previous.get(key) == digest}
    todo = {key: step for key, step in steps.items() if key not in state}
    total, done = len(todo) + 1, 0
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    workers = max(1, min(jobs, len(todo) or 1))
    threads = threads_per_worker(workers)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_setup,
                               initargs=(threads, os.getpid()))
    try:
        pending = {pool.submit(fn, *args): key for key, (fn, args, _) in todo.items()}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                key = pending.pop(fut)
                what = fut.result()  # an LkmError of a step is the command's error
                state[key] = todo[key][2]
                _write_state(out, pack, state)
                done += 1
                if on_done is not None:
                    on_done(what, done, total)
    except BaseException:  # Ctrl-C, SIGTERM (interrupt_on) or a step's error: stop now
        _stop_pool(pool)
        raise
    pool.shutdown()
    site = build_site(runs, papers, cross_spec, out=out,
                      source=f"the results pack {shown_as or pack.root} (version {pack.version})",
                      rebuild=f"lkm report --all --results {shown_as or pack.root} --out {out}")
    if on_done is not None:
        on_done("report", total, total)
    return site


__all__ = ["BUILT_MARK", "RUNS", "check_out", "report_from_pack", "source_digest", "step_digest", "sync_runs"]
