"""Running a spec from the command line, shared by `lkm run`, `lkm sweep` and `lkm reproduce`:
where the fits run (local workers or a cluster), and what is printed: the plan, progress
with ETA, the summary and the paths at the end, and the report's counts (`lkm report
--all`). The run itself is :mod:`lkm.api`'s (:func:`lkm.api.execute_plan`), shared with
:func:`lkm.api.run`."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from lkm.api import (
    RunObserver,
    RunOutcome,
    check_same_run,
    default_run_dir,
    execute_plan,
    plan_spec,
    spec_path,  # noqa: F401  (re-exported: lkm.cli.runs and the tests import it from here)
)
from lkm.cli.app import console, err_console, exit_error, print_rows, text_line
from lkm.engine.workers import interrupt_exit_code, interrupt_name
from lkm.errors import LkmError


@contextlib.contextmanager
def engine(jobs: int, cluster: str | None, dry_run: bool, label: str = "--cluster") -> Iterator[Any]:
    """Where the fits run, for the block: the connected :class:`lkm.engine.cluster.Cluster` for
    ``--cluster`` (connected first, so an unreachable scheduler is one line before
    anything is read or written), else None after starting ``jobs`` local workers (their
    imports overlap loading the spec and the data). A dry run starts nothing. ``label``
    names where the address came from in errors (:func:`cluster_label`)."""
    if dry_run:
        yield None
    elif cluster:
        from lkm.engine.cluster import connect

        with contextlib.ExitStack() as stack:
            with console.status(f"connecting to {escape(cluster)}...", spinner="dots"):
                on_cluster = stack.enter_context(connect(cluster, label))
            yield on_cluster
    else:
        with _warm_workers(jobs):
            yield None


def cluster_label(ctx: typer.Context) -> str:
    """``LKM_CLUSTER`` if the --cluster value came from the environment, else ``--cluster``."""
    source = ctx.get_parameter_source("cluster")  # typer's own copy of click's ParameterSource: compared by name
    return "LKM_CLUSTER" if getattr(source, "name", None) == "ENVIRONMENT" else "--cluster"


def _warm_workers(jobs: int) -> Any:
    """Start the fit workers at once (:func:`lkm.engine.workers.warm_workers`)."""
    from lkm.engine.workers import warm_workers
    from lkm.methods import METHOD_PATHS

    modules = ["lkm.engine.runner", *sorted({path.rpartition(".")[0] for path in METHOD_PATHS.values()})]
    return warm_workers(jobs, modules)


class RunPrinter(RunObserver):
    """What a run says on the console (:class:`lkm.api.RunObserver`): spinners, the
    skipped data sets and methods, the plan's line, the progress bar, the interrupt line."""

    def __init__(self, progress: bool = True) -> None:
        self.progress = progress
        self._bar: FitProgress | None = None

    def status(self, text: str) -> Any:
        return console.status(text, spinner="dots")

    def planned(self, spec, plan, done: set[str], todo: int, run_dir: Path) -> None:
        for ds, msg in plan.unavailable.items():
            err_console.print(text_line(("skipped", "yellow"), f" {ds}: {msg}"))
        print_not_run(plan, done)
        not_run = set(plan.not_run) - done
        not_run_part = f", {len(not_run)} not run" if not_run else ""
        console.print(text_line(
            (spec.name, "bold"), f": {len(plan.tasks)} fits ({len(plan.tasks) - todo - len(not_run)} already recorded"
            f"{not_run_part}) on {len(plan.datasets)} dataset(s), {spec.describe_protocol()} -> {run_dir}/",
        ))

    @contextlib.contextmanager
    def fitting(self, todo: int) -> Iterator[Any]:
        with FitProgress(todo, enabled=self.progress) as bar:
            self._bar = bar
            try:
                yield bar.advance
            finally:
                self._bar = None

    def estimate(self, seconds_left: float) -> None:
        if self._bar is not None:
            self._bar.estimate(seconds_left)

    def interrupted(self, exc: KeyboardInterrupt, run_dir: Path) -> None:
        raise exit_error(LkmError(
            f"interrupted ({interrupt_name(exc)}); every finished fit is recorded in {run_dir}/records"
            " — run the same command again to resume"), interrupt_exit_code(exc)) from None


def command_line() -> str:
    """The command as typed, for provenance.json."""
    return " ".join(shlex.quote(a) for a in ["lkm", *sys.argv[1:]])


def run_spec(spec, source: str, out: Path | None, jobs: int, fresh: bool, dry_run: bool, progress: bool,
             *, cluster=None) -> None:
    """`lkm run`'s run of ``spec`` (:func:`lkm.api.plan_spec`, :func:`lkm.api.execute_plan`),
    printed: the plan's line and progress, then the summary, failed methods, the files
    written and the main outputs. Failed fits end it with exit 1 after the summary."""
    run_dir = out or default_run_dir(spec)
    printer = RunPrinter(progress)
    store, plan = plan_spec(spec, source, run_dir, claim=not dry_run, observer=printer)
    if dry_run:
        check_same_run(spec, plan, store, fresh)
        _print_plan(plan, store.completed_ids() if not fresh else set(), run_dir)
        return
    outcome = execute_plan(spec, plan, store, source, jobs=jobs, fresh=fresh, cluster=cluster,
                           command=command_line(), observer=printer)
    print_finished(outcome)


def print_finished(outcome: RunOutcome) -> None:
    """After a run: the summary table, failed methods, the files written and the main
    outputs; exit 1 (after printing) when fits failed."""
    run_dir, summary, written = outcome.run_dir, outcome.summary, outcome.written
    print_summary(run_dir)
    _print_failed_methods(outcome.store, outcome.plan.task_ids)
    if written is None:
        console.print(f"nothing new to fit; tables and figures in {run_dir}/ are current (`lkm report {run_dir}` rebuilds them)")
    else:
        console.print(f"{summary.ran} fits in {summary.seconds:.1f} s; {files_line(written, run_dir)}")
        print_report_warnings(written)
    print_outputs(run_dir, outcome.spec)
    if summary.failed:  # exit 1, so a CI job never counts a run of failed fits as passed
        every = "every fit of this run; " if summary.ran == 0 else ""
        raise exit_error(LkmError(f"{summary.failed} fit(s) failed ({every}recorded with status 'error'); "
                                  f"first: {summary.first_error}"), 1)


# -- progress ------------------------------------------------------------------------
#: Seconds between plain progress lines when the output is not a terminal ($LKM_PROGRESS_SECONDS).
PROGRESS_SECONDS = 60.0


def _duration(seconds: float) -> str:
    """`2m10s`, `1h05m`, `7s`."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _eta(done: int, total: int, elapsed: float, estimate: tuple[float, float] | None = None) -> float | None:
    """Seconds left: the runner's ``estimate`` (seconds, the monotonic time it was made:
    each remaining fit at its (method, data set)'s mean seconds so far), counted down since it was
    made; without one, the average pace of fits since the start. None before the first fit."""
    if estimate is not None:
        seconds, made = estimate
        return max(0.0, seconds - (time.monotonic() - made))
    return elapsed / done * (total - done) if done > 0 else None


def progress_line(done: int, total: int, elapsed: float, estimate: tuple[float, float] | None = None) -> str:
    """`[lkm] 120/390 fits (31%), 2m10s elapsed, ~4m40s left` (no estimate before the first fit)."""
    pct = 100 * done // total if total else 100
    left = _eta(done, total, elapsed, estimate)
    tail = f", ~{_duration(left)} left" if left is not None and done < total else ""
    return f"[lkm] {done}/{total} fits ({pct}%), {_duration(elapsed)} elapsed{tail}"


class FitProgress:
    """Per-fit progress of a run (``advance(n)`` after n more fits are recorded).

    On a terminal: a bar with fits done, elapsed time and an ETA: the runner's estimate
    (:meth:`estimate`: each remaining fit at its (method, data set)'s mean seconds so far) counted
    down, else the average pace of fits since the start. Otherwise (CI
    logs, nohup): one plain :func:`progress_line` every ``interval`` seconds
    (default $LKM_PROGRESS_SECONDS or :data:`PROGRESS_SECONDS`; 0: at every fit) and one
    at the end. ``enabled=False`` shows nothing."""

    def __init__(self, total: int, *, enabled: bool = True, interval: float | None = None) -> None:
        if interval is None:
            try:
                interval = float(os.environ.get("LKM_PROGRESS_SECONDS", PROGRESS_SECONDS))
            except ValueError:
                raise LkmError(f"LKM_PROGRESS_SECONDS={os.environ['LKM_PROGRESS_SECONDS']!r}: expected seconds, e.g. 60") from None
        self.total, self.enabled, self.interval = total, enabled and total > 0, interval
        self.done = 0
        self._bar: Any = None
        self._plain = False
        self._estimate: tuple[float, float] | None = None

    def estimate(self, seconds_left: float) -> None:
        """The runner's estimate of the wall seconds left (shown counted down from now)."""
        self._estimate = (seconds_left, time.monotonic())
        if self._bar is not None:
            self._bar.update(self._task, estimate=self._estimate)

    def __enter__(self) -> FitProgress:
        self.start = self._last = time.monotonic()
        if not self.enabled:
            return self
        if console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(TextColumn("fitting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 _eta_column(), console=console, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("fitting", total=self.total)
        else:
            self._plain = True
        return self

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
        elif self._plain and time.monotonic() - self._last >= self.interval and self.done < self.total:
            self._last = time.monotonic()
            console.print(progress_line(self.done, self.total, self._last - self.start, self._estimate))

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
        elif self._plain:
            console.print(progress_line(self.done, self.total, time.monotonic() - self.start))


def _eta_column() -> Any:
    """A Rich progress column `ETA 4m40s` (:func:`_eta`; Rich's own estimate needs a
    steady stream of updates and shows -:--:-- until then)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class EtaColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            left = _eta(int(task.completed), int(task.total or 0), task.elapsed or 0.0, task.fields.get("estimate"))
            return Text("ETA " + (_duration(left) if left is not None else "…"), style="progress.remaining")

    return EtaColumn()


# -- printing ------------------------------------------------------------------------
def print_notes(spec) -> None:
    """What validation changed in the spec without refusing it (e.g. duplicate grid values removed)."""
    for note in spec.notes:
        err_console.print(text_line(("note:", "yellow"), f" {note}"))


def print_not_run(plan, done: set[str] | frozenset[str] = frozenset()) -> None:
    """One line per method whose fits need an optional extra that is not installed
    (:attr:`lkm.engine.runner.Plan.not_run`), before any fit: ``LPL-hnswlib needs hnswlib:
    `pip install 'lkm[fast]'` — skipped``."""
    for method, (extra, n) in plan.not_run_methods(done).items():
        total = sum(t.method == method for t in plan.tasks)
        part = "" if n == total else f" ({n} of {total} fits)"
        err_console.print(text_line((method, "yellow"), f" needs {extra.package}: `{extra.install}` — skipped{part}"),
                          soft_wrap=True)


def _print_plan(plan, done: set[str], run_dir: Path) -> None:
    from lkm.engine.runner import plan_table

    cols = ["dataset", "method", "splits", "settings", "fits", "recorded"]
    rows = plan_table(plan, done)
    print_rows(f"plan for {plan.spec.name} -> {run_dir}/ ({plan.spec.describe_protocol()})", cols,
                [[str(r[c]) for c in cols] for r in rows], right=set(cols[2:]))
    total = sum(r["fits"] for r in rows)
    recorded = sum(r["recorded"] for r in rows)
    not_run = len(set(plan.not_run) - done)
    left = f"{total - recorded - not_run} to run, {not_run} not run" if not_run else f"{total - recorded} to run"
    console.print(f"{total} fits in all, {recorded} already recorded, {left}.")
    print_not_run(plan, done)
    for ds, msg in plan.unavailable.items():
        console.print(text_line(("unavailable", "yellow"), f" {ds}: {msg}"))


def print_summary(run_dir: Path) -> None:
    """tables/summary as displayed (its .json twin: mean ± std in one cell), every name in full."""
    import json

    path = run_dir / "tables" / "summary.json"
    if not path.is_file():
        return
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
        header, rows = [str(c) for c in table["columns"]], [[str(c) or "–" for c in row] for row in table["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        return
    print_rows("summary (at the selected setting)", header, rows)


def _print_failed_methods(store, task_ids: set[str]) -> None:
    """One line per method with failed fits in this plan (all datasets): how many, and the
    first error (a method whose every fit failed is marked failed). Printed with the
    summary, on stdout: stderr keeps the run's one error line."""
    from lkm.report.aggregation import failed_fits

    failed = failed_fits(store.records_frame(task_ids))
    for method, g in failed.groupby("method", sort=False):
        n_failed, total = int(g["failed"].sum()), int(g["total"].sum())
        state = "failed" if n_failed == total else "partly failed"
        console.print(text_line((f"{method}: {state}", "bold red"),
                            f", {n_failed} of {total} fits; first error: {g['error'].iloc[0]}"))


def _main_outputs(run_dir: Path, spec) -> list[tuple[str, Path]]:
    """The run folder, its main table (tables/summary.md, else the first table) and main
    figure (of the spec's first figure output that drew one, its PNG with the longest name —
    a two-parameter sweep's ``sweep_<x>_<y>`` —, else the first PNG)."""
    out: list[tuple[str, Path]] = [("run folder", run_dir)]
    tables = run_dir / "tables"
    summary = tables / "summary.md"
    table: Path | None = summary
    if not summary.is_file():
        table = next(iter(sorted(tables.glob("*.md"))), None) if tables.is_dir() else None
    if table is not None:
        out.append(("table", table))
    figures = sorted((run_dir / "figures").glob("*.png")) if (run_dir / "figures").is_dir() else []
    groups = [[f for f in figures if f.stem == name or f.stem.startswith(f"{name}_")] for name in spec.outputs.figures]
    named = next((g for g in groups if g), [])
    # of a sweep over two parameters, the figure of both (sweep_sigma_k), not one of its lines
    figure = max(named, key=lambda f: f.stem.count("_")) if named else next(iter(figures), None)
    if figure is not None:
        out.append(("figure", figure))
    return out


def files_line(written, run_dir: Path) -> str:
    """'12 files written under DIR/' and how many figures were kept (their inputs unchanged)."""
    reused = len(getattr(written, "reused", ()))
    kept = f" ({reused} unchanged figure file(s) kept)" if reused else ""
    return f"{len(written) - reused} files written under {run_dir}/{kept}"


def print_report_warnings(written) -> None:
    """The report's warnings (a selected value at the edge of its grid, failed fits), once each."""
    for text in dict.fromkeys(getattr(written, "warnings", ())):
        err_console.print(text_line(("warning:", "yellow"), f" {text}"))


def print_outputs(run_dir: Path, spec) -> None:
    for label, path in _main_outputs(run_dir, spec):
        console.print(f"  {label + ':':<12}{path}{'/' if path.is_dir() else ''}")


#: What is still missing, printed after `lkm reproduce all` / `lkm report --all` (the rest: in the report).
MISSING_LINES = 6


def print_site(written) -> None:
    """The report's claim counts and where it is."""
    counts = ", ".join(f"{name} {n}" for name, n in written.counts.items())
    console.print(f"{written.claims} claims: {counts}", highlight=False)
    if written.differing:
        console.print(written.differing, highlight=False)
    for line in written.missing[:MISSING_LINES]:
        err_console.print(text_line(("missing:", "yellow"), f" {line}"), soft_wrap=True)
    if len(written.missing) > MISSING_LINES:
        err_console.print(text_line(("missing:", "yellow"), f" ... and {len(written.missing) - MISSING_LINES} more"
                                f" (each paper's \"Still missing\" in the report)"), soft_wrap=True)
    console.print(f"report: {written.page} (and {written.markdown.name} beside it)", highlight=False)
