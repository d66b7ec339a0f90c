"""`lkm run`, `lkm sweep` and `lkm report`: a spec's fits into a run folder, and its tables."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from lkm.cli.app import (
    BARE_GRID,
    ClusterOpt,
    DataDirOpt,
    DryOpt,
    FreshOpt,
    GridCommand,
    JobsOpt,
    MaxFitsOpt,
    OutOpt,
    ProgressOpt,
    SmokeOpt,
    _data_dir,
    _fail,
    _line,
    app,
    console,
    err_console,
    print_rows,
)
from lkm.errors import LkmError, SpecError, did_you_mean
from lkm.workers import interrupt_exit_code, interrupt_name


@app.command()
def run(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="Experiment spec (YAML), e.g. configs/quickstart.yaml.", show_default=False)],
    out: OutOpt = None,
    jobs: JobsOpt = 1,
    data_dir: DataDirOpt = None,
    fresh: FreshOpt = False,
    dry_run: DryOpt = False,
    progress: ProgressOpt = True,
    smoke: SmokeOpt = False,
    max_fits: MaxFitsOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Run every dataset x split x method x parameter setting of SPEC, then write tables and figures.

    Records are written as each fit finishes: interrupt at any time (even kill -9) and
    run the same command again to compute only what is missing.

    Examples: `lkm run configs/quickstart.yaml --jobs 2`;
    `lkm run configs/quickstart.yaml --cluster local:2` (a dask cluster on this machine).
    """
    from lkm.spec import load_spec

    try:
        with engine(jobs, cluster, dry_run, cluster_label(ctx)) as on_cluster:
            _data_dir(data_dir)
            s = load_spec(spec, smoke=smoke, max_fits=max_fits)
            _print_notes(s)
            _run_spec(s, str(spec), out, jobs, fresh, dry_run, progress, cluster=on_cluster)
    except LkmError as exc:
        raise _fail(exc) from None


@app.command(cls=GridCommand)
def sweep(
    ctx: typer.Context,
    spec: Annotated[Path | None, typer.Argument(help="Spec to sweep (omit for an ad-hoc sweep of --method on --dataset).", show_default=False)] = None,
    sigma: Annotated[str | None, typer.Option("--sigma", metavar="[GRID]", help="Sigma grid, e.g. `0.5,1,2`, or START:STOP:COUNT for COUNT log-spaced values. Bare `--sigma`: the paper's grid `0.01:100:39` (39 values from 0.01 to 100).", show_default=False)] = None,
    k: Annotated[str | None, typer.Option("--k", metavar="[GRID]", help="Neighbour-count grid for local methods, e.g. `5,9,13,17` or `auto,5,9`. Bare `--k`: the paper's auto,5,9,13,17.", show_default=False)] = None,
    param: Annotated[list[str] | None, typer.Option("--param", metavar="NAME=GRID", help="Any other parameter of the methods, e.g. `--param beta=0.1,1,10`; `--beta 0.1,1,10` is the same.", show_default=False)] = None,
    method: Annotated[list[str] | None, typer.Option("--method", "-m", help="Ad-hoc sweep: estimator keys or dotted paths (default: pl, lpl, svm). See `lkm methods`.", show_default=False)] = None,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Ad-hoc sweep: dataset names (default: the quickstart data). See `lkm datasets list`.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (default: `results/<sweep name>`, a name made of the methods, datasets, swept parameters and a hash of the spec). Rerunning the same sweep resumes.")] = None,
    jobs: JobsOpt = 1,
    data_dir: DataDirOpt = None,
    fresh: FreshOpt = False,
    dry_run: DryOpt = False,
    progress: ProgressOpt = True,
    max_fits: MaxFitsOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Run SPEC (or an ad-hoc spec) with one or more parameters swept over grids.

    The grids given here are the whole sweep: they replace the spec's own `sweep:` and
    every method's sweep or value of a named parameter; a method without the parameter
    is fitted once per split. A parameter a method has but ignores (LRR's sigma with
    its default heat kernel) is refused. Each sweep gets its own run folder; the spec it
    used is saved there as spec.yaml.

    Examples:

    * `lkm sweep --sigma` — PL, LPL and SVM over the paper's sigma grid on the quickstart data
    * `lkm sweep -m lpl -d sonar --sigma 0.1:10:9 --k 3,7`
    * `lkm sweep -m lrr -d ida-banana --beta 0.1:10:3`
    * `lkm sweep configs/lpl_k_diabetes.yaml --k 5,9,13,17 --sigma 1:100:20`
    """
    try:
        with engine(jobs, cluster, dry_run, cluster_label(ctx)) as on_cluster:
            _sweep(spec, sigma, k, param, method, dataset, out, jobs, data_dir, fresh, dry_run, progress, max_fits,
                   on_cluster)
    except LkmError as exc:
        raise _fail(exc) from None


def _sweep(spec, sigma, k, param, method, dataset, out, jobs, data_dir, fresh, dry_run, progress, max_fits,
           cluster=None) -> None:
    """`lkm sweep`'s work, inside its error boundary and warm workers (or connected cluster)."""
    from lkm.spec import load_spec

    _data_dir(data_dir)
    grids = _command_grids(sigma, k, param)
    if spec is not None:
        if method or dataset:
            raise SpecError("--method/--dataset are for ad-hoc sweeps without a SPEC; edit the spec instead")
        base, source = load_spec(spec, max_fits=max_fits), str(spec)
    else:
        base, source = None, "<ad-hoc sweep>"
    s = sweep_spec(base, grids, source, methods=method, datasets=dataset, max_fits=max_fits)
    _print_notes(s)
    _run_spec(s, source, out, jobs, fresh, dry_run, progress, cluster=cluster)


@contextlib.contextmanager
def engine(jobs: int, cluster: str | None, dry_run: bool, label: str = "--cluster") -> Iterator[Any]:
    """Where the fits run, for the block: the connected :class:`lkm.cluster.Cluster` for
    ``--cluster`` (connected first, so an unreachable scheduler is one line before
    anything is read or written), else None after starting ``jobs`` local workers (their
    imports overlap loading the spec and the data). A dry run starts nothing. ``label``
    names where the address came from in errors (:func:`cluster_label`)."""
    if dry_run:
        yield None
    elif cluster:
        from lkm.cluster import connect

        with contextlib.ExitStack() as stack:
            with console.status(f"connecting to {cluster}...", spinner="dots"):
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
    """Start the fit workers at once (:func:`lkm.workers.warm_workers`)."""
    from lkm.methods import METHOD_PATHS
    from lkm.workers import warm_workers

    modules = ["lkm.runner", *sorted({path.rpartition(".")[0] for path in METHOD_PATHS.values()})]
    return warm_workers(jobs, modules)


def _command_grids(sigma: str | None, k: str | None, param: list[str] | None) -> dict[str, str]:
    """NAME -> GRID text from `--sigma`, `--k`, `--param NAME=GRID` and `--NAME GRID`
    (bare: :data:`~lkm.cli.app.BARE_GRID`), in that order."""
    grids: dict[str, str] = {}
    if sigma is not None:
        grids["sigma"] = sigma
    if k is not None:
        grids["k"] = k
    for item in param or []:
        name, sep, grid = item.partition("=")
        if not sep or not name or not name.isidentifier():
            raise SpecError(f"--param {item!r}: write NAME=GRID, e.g. beta=0.1:10:5")
        if name in grids:
            raise SpecError(f"--{name}: given twice; give one grid, e.g. --{name} 1,2,4")
        grids[name] = grid
    if not grids:
        raise SpecError("sweep: name at least one parameter to sweep, e.g. --sigma or --k 5,9")
    return grids


def sweep_spec(
    base: Any, grids: dict[str, str], source: str, *, methods: list[str] | None = None,
    datasets: list[str] | None = None, max_fits: int | None = None,
) -> Any:
    """The spec `lkm sweep` runs: ``base`` (a Spec; None: the embedded default on
    ``datasets`` with ``methods``) whose sweep is exactly ``grids`` (NAME -> grid text).

    The grids replace the base spec's top-level ``sweep`` and every method's own sweep
    or fixed value of a named parameter (other own sweeps, e.g. LPL's k variants of a
    spec, stay). Refused with one line: a name no method has, a grid that does not
    parse, and a parameter a method has but ignores in every setting
    (:func:`lkm.spec.unused_parameter`). Named ``<base>-sweep-<names>-<hash>`` or, ad
    hoc, ``sweep-<methods>-<datasets>-<names>-<hash>`` (hash: of the spec itself)."""
    from lkm.methods import estimator_param_names, resolve_estimator
    from lkm.spec import (
        DEFAULT_GRIDS,
        MAX_NAME_LENGTH,
        conditional_parameter,
        default_spec_data,
        parse_grid,
        spec_from_dict,
        unused_parameter,
    )
    from lkm.store import text_sha256

    data = default_spec_data(datasets, methods, name="sweep", sweep={}) if base is None else base.model_dump(mode="json")
    data.pop("smoke", None)  # a sweep has no smoke variant
    known: set[str] = set()
    for m in data["methods"]:
        for name in grids:
            for key in ("sweep", "params"):
                (m.get(key) or {}).pop(name, None)
        try:
            known |= estimator_param_names(resolve_estimator(m["estimator"]))
        except LkmError as exc:
            if base is None:  # the estimator came from --method: say so before judging the grids
                raise SpecError(f"--method {m['estimator']}: {exc}") from None
            # a spec's own method: reported by validation below, with its key
    for name in grids:
        if name not in known:
            options = [o.removeprefix("--") for o in _SWEEP_OPTIONS]
            hint = did_you_mean(name, [*known, *options])
            raise SpecError(f"--{name}: not an option of `lkm sweep` and no method of this sweep has a parameter {name!r}{hint}")
    parsed: dict[str, list[Any]] = {}
    for name, grid in grids.items():
        if grid == BARE_GRID or grid == "paper":
            if name not in DEFAULT_GRIDS:
                raise SpecError(f"--{name}: give a grid (there is no default grid for {name!r}), e.g. --{name} 1,2,4")
            grid = DEFAULT_GRIDS[name]
        try:
            parsed[name] = parse_grid(grid)
        except ValueError as exc:
            raise SpecError(f"--{name}: {exc}") from None
    data["sweep"] = parsed
    digest = text_sha256(json.dumps({**data, "name": None}, sort_keys=True, default=str))[:6]
    if base is None:
        keys = [m["estimator"].rsplit(".", 1)[-1].lower() for m in data["methods"]]
        data["name"] = f"sweep-{_name_part(keys)}-{_name_part(data['datasets'])}-{_name_part(list(parsed))}-{digest}"
    else:
        suffix = f"-sweep-{_name_part(list(parsed))}-{digest}"
        data["name"] = base.name[: MAX_NAME_LENGTH - len(suffix)] + suffix
    try:
        s = spec_from_dict(data, source, max_fits=max_fits)
    except SpecError as exc:  # a bad swept value: name the option it came from
        culprit = next((n for n in parsed if f".{n} " in str(exc) or f".{n}:" in str(exc)), None)
        if culprit is None:
            raise
        raise SpecError(f"--{culprit} {grids[culprit]}: {exc}") from None
    for m in s.methods:
        for name in parsed:
            reason = unused_parameter(s, m, name)
            if reason:
                other, values = conditional_parameter(m.estimator, name)
                raise SpecError(f"--{name}: method {m.name} ({m.estimator}) ignores {name}: {reason}; "
                                f"add --{other} {values[0]} or leave --{name} out")
    return s


#: Options of `lkm sweep` (for "did you mean" on an unknown --NAME).
_SWEEP_OPTIONS = ("--sigma", "--k", "--param", "--method", "--dataset", "--out", "--jobs", "--data-dir", "--fresh",
                  "--resume", "--dry-run", "--progress", "--no-progress", "--max-fits", "--cluster")


def _name_part(items: list[Any], limit: int = 30) -> str:
    """Items joined by '_' for a run name, as `first_and_N_more` when longer than ``limit``;
    characters a run name cannot have become '_'."""
    clean = [re.sub(r"[^A-Za-z0-9._-]", "_", str(i)) for i in items]
    joined = "_".join(clean)
    return joined if len(joined) <= limit else f"{clean[0][:limit]}_and_{len(clean) - 1}_more"


def _run_spec(spec, source: str, out: Path | None, jobs: int, fresh: bool, dry_run: bool, progress: bool,
              *, cluster=None) -> None:
    from lkm.runner import build_plan
    from lkm.spec import spec_to_yaml
    from lkm.store import RunStore

    run_dir = out or Path("results") / spec.name
    store = RunStore(run_dir)
    if not dry_run:
        store.claim(create=False)  # a file, or a folder lkm did not create: refuse before loading data
    with console.status("loading data and planning...", spinner="dots"):
        plan = build_plan(spec, data_dir=os.environ.get("LKM_DATA_DIR"), source=source)
    # A perturbed rerun (lkm reproduce's fragility check) follows the plain run's selected
    # settings, which may change between runs: its folder keeps every perturbed record.
    check = not fresh and spec.perturb is None
    if dry_run:
        if check:
            store.check_same_run(spec_to_yaml(spec), plan.task_ids)
        _print_plan(plan, store.completed_ids() if not fresh else set(), run_dir)
        return
    # Held while this process writes (released on return, on any error, or with the
    # process on a kill): a second run on this folder stops at once, naming this process.
    with store.lock():
        if check:
            store.check_same_run(spec_to_yaml(spec), plan.task_ids)
        summary, written = _fit_and_report(spec, plan, store, source, jobs=jobs, fresh=fresh, progress=progress,
                                            cluster=cluster)
    _print_summary(run_dir)
    _print_failed_methods(store, plan.task_ids)
    if written is None:
        console.print(f"nothing new to fit; tables and figures in {run_dir}/ are current (`lkm report {run_dir}` rebuilds them)")
    else:
        console.print(f"{summary.ran} fits in {summary.seconds:.1f} s; {_files_line(written, run_dir)}")
        _print_report_warnings(written)
    _print_outputs(run_dir, spec)
    if summary.failed:
        raise _fail(LkmError(f"{summary.failed} fit(s) failed (recorded with status 'error'); first: {summary.first_error}"), 1)


def _fit_and_report(spec, plan, store, source: str, *, jobs: int, fresh: bool, progress: bool, cluster=None):
    """Fit what the run folder does not hold yet, write provenance and rebuild the report
    unless it is current. Returns the execution summary and the files written (None:
    the report was current)."""
    from lkm.report import build_report
    from lkm.runner import dataset_provenance, execute, write_plan
    from lkm.spec import spec_to_yaml

    run_dir = store.root
    done = store.completed_ids() if not fresh else set()
    store.prepare(fresh=fresh)
    store.write_spec(spec_to_yaml(spec))
    write_plan(plan, store)
    for ds, msg in plan.unavailable.items():
        err_console.print(_line(("skipped", "yellow"), f" {ds}: {msg}"))
    todo = len(plan.task_ids - done)
    console.print(_line(
        (spec.name, "bold"), f": {len(plan.tasks)} fits ({len(plan.tasks) - todo} already recorded) "
        f"on {len(plan.datasets)} dataset(s), {spec.describe_protocol()} -> {run_dir}/",
    ))
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if todo:  # this process only waits while workers fit: import the figures' library meanwhile
        threading.Thread(target=importlib.import_module, args=("matplotlib.pyplot",), daemon=True).start()
    try:
        # SIGTERM is handled like Ctrl-C (the command runs under interrupt_on): execute()
        # kills its workers, then this message.
        with FitProgress(todo, enabled=progress) as bar:
            summary = execute(plan, store, jobs=jobs, on_progress=bar.advance, cluster=cluster)
    except KeyboardInterrupt as exc:
        raise _fail(LkmError(
            f"interrupted ({interrupt_name(exc)}); every finished fit is recorded in {run_dir}/records"
            " — run the same command again to resume"), interrupt_exit_code(exc)) from None
    store.write_provenance({
        "command": " ".join(shlex.quote(a) for a in ["lkm", *sys.argv[1:]]),
        "spec_source": source, "started_at": started, "seconds": round(summary.seconds, 3),
        **({"jobs": jobs} if cluster is None else {"jobs": None, "cluster": cluster.provenance()}),
        "seeds": {"protocol": getattr(spec.protocol, "seed", None)},
        "datasets": dataset_provenance(plan),
        "tasks": {"planned": summary.planned, "recorded_before": summary.skipped, "ran": summary.ran, "failed": summary.failed},
    })
    stamp = store.report_stamp(spec_to_yaml(spec), plan.task_ids)
    if summary.ran == 0 and summary.failed == 0 and store.report_is_current(stamp):
        return summary, None
    with console.status("writing tables and figures...", spinner="dots"):
        written = build_report(store, spec, plan.task_ids, plan.unavailable)
    store.mark_report(stamp, written)
    return summary, written


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


def _eta(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left at the average pace since the start; None before the first fit."""
    return elapsed / done * (total - done) if done > 0 else None


def progress_line(done: int, total: int, elapsed: float) -> str:
    """`[lkm] 120/390 fits (31%), 2m10s elapsed, ~4m40s left` (no estimate before the first fit)."""
    pct = 100 * done // total if total else 100
    left = _eta(done, total, elapsed)
    tail = f", ~{_duration(left)} left" if left is not None and done < total else ""
    return f"[lkm] {done}/{total} fits ({pct}%), {_duration(elapsed)} elapsed{tail}"


class FitProgress:
    """Per-fit progress of a run (``advance(n)`` after n more fits are recorded).

    On a terminal: a bar with fits done, elapsed time and an ETA at the average pace
    since the start (so it is sensible from the first recorded fit on). Otherwise (CI
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
            console.print(progress_line(self.done, self.total, self._last - self.start))

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
        elif self._plain:
            console.print(progress_line(self.done, self.total, time.monotonic() - self.start))


def _eta_column() -> Any:
    """A Rich progress column `ETA 4m40s` at the average pace since the start (Rich's own
    estimate needs a steady stream of updates and shows -:--:-- until then)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class EtaColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            left = _eta(int(task.completed), int(task.total or 0), task.elapsed or 0.0)
            return Text("ETA " + (_duration(left) if left is not None else "…"), style="progress.remaining")

    return EtaColumn()


# -- printing ------------------------------------------------------------------------
def _print_notes(spec) -> None:
    """What validation changed in the spec without refusing it (e.g. duplicate grid values removed)."""
    for note in spec.notes:
        err_console.print(_line(("note:", "yellow"), f" {note}"))


def _print_plan(plan, done: set[str], run_dir: Path) -> None:
    from lkm.runner import plan_table

    cols = ["dataset", "method", "splits", "settings", "fits", "recorded"]
    rows = plan_table(plan, done)
    print_rows(f"plan for {plan.spec.name} -> {run_dir}/ ({plan.spec.describe_protocol()})", cols,
                [[str(r[c]) for c in cols] for r in rows], right=set(cols[2:]))
    total = sum(r["fits"] for r in rows)
    recorded = sum(r["recorded"] for r in rows)
    console.print(f"{total} fits in all, {recorded} already recorded, {total - recorded} to run.")
    for ds, msg in plan.unavailable.items():
        console.print(_line(("unavailable", "yellow"), f" {ds}: {msg}"))


def _print_summary(run_dir: Path) -> None:
    """tables/summary.csv, every name in full."""
    import csv

    path = run_dir / "tables" / "summary.csv"
    if not path.is_file():
        return
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [[cell or "–" for cell in row] for row in csv.reader(fh)]
    if rows:
        print_rows("summary (at the selected setting)", rows[0], rows[1:])


def _print_failed_methods(store, task_ids: set[str]) -> None:
    """One line per method with failed fits in this plan (all datasets): how many, and the
    first error (a method whose every fit failed is marked failed). Printed with the
    summary, on stdout: stderr keeps the run's one error line."""
    from lkm.report.core import failed_fits

    failed = failed_fits(store.records_frame(task_ids))
    for method, g in failed.groupby("method", sort=False):
        n_failed, total = int(g["failed"].sum()), int(g["total"].sum())
        state = "failed" if n_failed == total else "partly failed"
        console.print(_line((f"{method}: {state}", "bold red"),
                            f", {n_failed} of {total} fits; first error: {g['error'].iloc[0]}"))


def _main_outputs(run_dir: Path, spec) -> list[tuple[str, Path]]:
    """The run folder, its main table (tables/summary.md, else the first table) and main
    figure (the first PNG of the spec's first figure output, else the first PNG)."""
    out: list[tuple[str, Path]] = [("run folder", run_dir)]
    tables = run_dir / "tables"
    table = tables / "summary.md"
    if not table.is_file():
        table = next(iter(sorted(tables.glob("*.md"))), None) if tables.is_dir() else None
    if table is not None:
        out.append(("table", table))
    figures = sorted((run_dir / "figures").glob("*.png")) if (run_dir / "figures").is_dir() else []
    named = [f for name in spec.outputs.figures for f in figures if f.stem == name or f.stem.startswith(f"{name}_")]
    figure = (named or figures or [None])[0]
    if figure is not None:
        out.append(("figure", figure))
    return out


def _files_line(written, run_dir: Path) -> str:
    """'12 files written under DIR/' and how many figures were kept (their inputs unchanged)."""
    reused = len(getattr(written, "reused", ()))
    kept = f" ({reused} unchanged figure file(s) kept)" if reused else ""
    return f"{len(written) - reused} files written under {run_dir}/{kept}"


def _print_report_warnings(written) -> None:
    """The report's warnings (a selected value at the edge of its grid, failed fits), once each."""
    for text in dict.fromkeys(getattr(written, "warnings", ())):
        err_console.print(_line(("warning:", "yellow"), f" {text}"))


def _print_outputs(run_dir: Path, spec) -> None:
    for label, path in _main_outputs(run_dir, spec):
        console.print(f"  {label + ':':<12}{path}{'/' if path.is_dir() else ''}")


@app.command()
def report(
    run_dir: Annotated[Path | None, typer.Argument(help="A run directory written by `lkm run` or `lkm sweep` (not with --all).", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Rebuild the report of every reproduction (RESULTS/report/: index.html, report.md, figures/) from the recorded runs, instead of one run's tables.")] = False,
    results: Annotated[Path, typer.Option("--results", help="With --all: the folder holding the run folders (what `lkm reproduce --results` wrote).")] = Path("results"),
    smoke: Annotated[bool, typer.Option("--smoke", help="With --all: the report of the smoke runs (`lkm reproduce all --smoke`), into RESULTS/report-smoke/.")] = False,
) -> None:
    """Rebuild tables and figures of RUN_DIR from its stored records, without refitting; or,
    with --all, the report of every reproduction.

    Refuses (exit 2) a folder whose spec.yaml changed since the run or that lost its
    plan.json: the tables would mix records of several spec versions.

    `--all` reads each paper's claims table, each run folder's tables, figures and
    provenance, and the cross-paper ranking, and writes RESULTS/report/index.html (static:
    open it in a browser, no server) and report.md; nothing is fitted (seconds). A run not
    made yet is listed in the report with the command that makes it.

    Examples: `lkm report results/quickstart`; `lkm report --all` (= `make report`);
    `lkm report --all --smoke --results /tmp/smoke` (after `lkm reproduce all --smoke --results /tmp/smoke`).
    """
    if all_:
        if run_dir is not None:
            raise _fail(LkmError(f"give either RUN_DIR ({run_dir}) or --all, not both"))
        _report_all(results, smoke)
        return
    if run_dir is None:
        raise _fail(LkmError("give a run directory (e.g. `lkm report results/quickstart`), or --all for the report of every reproduction"))
    if smoke:
        raise _fail(LkmError("--smoke goes with --all (a run directory's own spec says whether it is a smoke run)"))
    from lkm.report import build_report
    from lkm.spec import load_spec
    from lkm.store import RunStore

    try:
        if not (run_dir / "spec.yaml").is_file():
            raise LkmError(f"{run_dir}: not a run directory (no spec.yaml)")
        store = RunStore(run_dir)
        with store.lock(claim=False):
            plan = store.read_plan()  # spec.yaml as the run planned it, before trusting it
            spec = load_spec(run_dir / "spec.yaml", max_fits=sys.maxsize)  # the run it describes was already allowed
            written = build_report(store, spec)
            if not written:
                raise LkmError(f"{run_dir}: no finished fits recorded yet")
            if plan.get("task_ids"):
                spec_yaml = (run_dir / "spec.yaml").read_text(encoding="utf-8")
                store.mark_report(store.report_stamp(spec_yaml, set(plan["task_ids"])), written)
    except LkmError as exc:
        raise _fail(exc) from None
    _print_summary(run_dir)
    console.print(_files_line(written, run_dir))
    _print_report_warnings(written)
    _print_outputs(run_dir, spec)


def _report_all(results: Path, smoke: bool) -> None:
    """`lkm report --all`: the report folder from the recorded runs under ``results``."""
    from lkm.cli.reproduce import _print_site
    from lkm.report.site import build_site

    try:
        if not results.is_dir():
            raise LkmError(f"--results: {results} is not a folder (run `lkm reproduce all{' --smoke' if smoke else ''}` first)")
        started = time.perf_counter()
        written = build_site(results, smoke=smoke)
    except LkmError as exc:
        raise _fail(exc) from None
    _print_site(written)
    console.print(f"rebuilt in {time.perf_counter() - started:.1f} s from the recorded runs (nothing fitted)", highlight=False)
