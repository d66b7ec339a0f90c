"""`lkm run`, `lkm sweep` and `lkm report`: a spec's fits into a run folder, and its tables."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from lkm.cli.app import (
    DataDirOpt,
    DryOpt,
    FreshOpt,
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
)
from lkm.errors import LkmError, SpecError
from lkm.workers import interrupt_exit_code, interrupt_name


@app.command()
def run(
    spec: Annotated[Path, typer.Argument(help="Experiment spec (YAML), e.g. configs/quickstart.yaml.", show_default=False)],
    out: OutOpt = None,
    jobs: JobsOpt = 1,
    data_dir: DataDirOpt = None,
    fresh: FreshOpt = False,
    dry_run: DryOpt = False,
    progress: ProgressOpt = True,
    smoke: SmokeOpt = False,
    max_fits: MaxFitsOpt = None,
) -> None:
    """Run every dataset x split x method x parameter setting of SPEC, then write tables and figures.

    Records are written as each fit finishes: interrupt at any time (even kill -9) and
    run the same command again to compute only what is missing.

    Example: `lkm run configs/quickstart.yaml --jobs 2`
    """
    from lkm.spec import load_spec

    try:
        _data_dir(data_dir)
        s = load_spec(spec, smoke=smoke, max_fits=max_fits)
        _print_notes(s)
        _run_spec(s, str(spec), out, jobs, fresh, dry_run, progress)
    except LkmError as exc:
        raise _fail(exc) from None


@app.command()
def sweep(
    spec: Annotated[Path | None, typer.Argument(help="Spec to sweep (omit for an ad-hoc sweep of --method on --dataset).", show_default=False)] = None,
    sigma: Annotated[str | None, typer.Option("--sigma", help="Sigma grid. Bare `--sigma`: the paper's 39 log-spaced values in [0.01, 100]. Write `0.01:100:39` (log-spaced) or `0.5,1,2`.", show_default=False)] = None,
    k: Annotated[str | None, typer.Option("--k", help="Neighbour-count grid for local methods, e.g. `5,9,13,17` or `auto,5,9`.", show_default=False)] = None,
    param: Annotated[list[str] | None, typer.Option("--param", help="Any other parameter as NAME=GRID; `--beta 0.1:10:5` is short for `--param beta=0.1:10:5`.", show_default=False)] = None,
    method: Annotated[list[str] | None, typer.Option("--method", "-m", help="Ad-hoc sweep: estimator keys (default: pl, lpl, svm). See `lkm methods`.", show_default=False)] = None,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Ad-hoc sweep: dataset names (default: the quickstart data). See `lkm datasets list`.", show_default=False)] = None,
    out: OutOpt = None,
    jobs: JobsOpt = 1,
    data_dir: DataDirOpt = None,
    fresh: FreshOpt = False,
    dry_run: DryOpt = False,
    progress: ProgressOpt = True,
    max_fits: MaxFitsOpt = None,
) -> None:
    """Run SPEC (or an ad-hoc spec) with one or more parameters swept over a grid.

    The swept values replace the spec's own sweep of that parameter for every method
    that has it. The spec actually used is saved in the run folder as spec.yaml.

    Examples:

    * `lkm sweep --sigma` — PL, LPL and SVM over the paper's sigma grid on the quickstart data
    * `lkm sweep configs/lpl_k_diabetes.yaml --k 5,9,13,17`
    * `lkm sweep -m lpl -d sonar --sigma 0.1:10:9 --k 3,7`
    """
    from lkm.spec import (
        DEFAULT_GRIDS,
        default_spec,
        load_spec,
        parse_grid,
        spec_from_dict,
        validate_run_name,
    )

    try:
        _data_dir(data_dir)
        grids: dict[str, str] = {}
        if sigma is not None:
            grids["sigma"] = sigma
        if k is not None:
            grids["k"] = k
        for item in param or []:
            name, sep, grid = item.partition("=")
            if not sep or not name:
                raise SpecError(f"--param {item!r}: write NAME=GRID, e.g. beta=0.1:10:5")
            grids[name] = grid
        if not grids:
            raise SpecError("sweep: name at least one parameter to sweep, e.g. --sigma or --k 5,9")
        parsed: dict[str, list[Any]] = {}
        for name, grid in grids.items():
            if grid in ("default", "paper"):
                if name not in DEFAULT_GRIDS:
                    raise SpecError(f"--{name}: give a grid (there is no default grid for {name!r}), e.g. --{name} 1,2,4")
                grid = DEFAULT_GRIDS[name]
            try:
                parsed[name] = parse_grid(grid)
            except ValueError as exc:
                raise SpecError(f"--{name}: {exc}") from None
        if spec is not None:
            if method or dataset:
                raise SpecError("--method/--dataset are for ad-hoc sweeps without a SPEC; edit the spec instead")
            base = load_spec(spec, max_fits=max_fits)
            source = str(spec)
        else:
            base = default_spec(dataset, method, name="sweep")
            source = "<ad-hoc sweep>"
        data = base.model_dump(mode="json")
        data["sweep"] = {**data.get("sweep", {}), **parsed}
        for m in data["methods"]:
            for name in parsed:
                m["sweep"].pop(name, None)
                m["params"].pop(name, None)
        data["name"] = validate_run_name(f"{base.name}-sweep-{'-'.join(parsed)}", "sweep", derived_from=base.name)
        try:
            s = spec_from_dict(data, source, max_fits=max_fits)
        except SpecError as exc:  # a bad swept value: name the option it came from
            culprit = next((n for n in parsed if f".{n} " in str(exc) or f".{n}:" in str(exc)), None)
            if culprit is None:
                raise
            raise SpecError(f"--{culprit} {grids[culprit]}: {exc}") from None
        _print_notes(s)
        _run_spec(s, source, out, jobs, fresh, dry_run, progress)
    except LkmError as exc:
        raise _fail(exc) from None


def _run_spec(spec, source: str, out: Path | None, jobs: int, fresh: bool, dry_run: bool, progress: bool) -> None:
    from lkm.runner import build_plan
    from lkm.store import RunStore

    run_dir = out or Path("results") / spec.name
    store = RunStore(run_dir)
    if not dry_run:
        store.claim(create=False)  # a file, or a folder lkm did not create: refuse before loading data
    with console.status("loading data and planning...", spinner="dots"):
        plan = build_plan(spec, data_dir=os.environ.get("LKM_DATA_DIR"), source=source)
    if dry_run:
        _print_plan(plan, store.completed_ids() if not fresh else set(), run_dir)
        return
    # Held while this process writes (released on return, on any error, or with the
    # process on a kill): a second run on this folder stops at once, naming this process.
    with store.lock():
        summary, written = _fit_and_report(spec, plan, store, source, jobs=jobs, fresh=fresh, progress=progress)
    _print_summary(run_dir)
    if written is None:
        console.print(f"nothing new to fit; tables and figures in {run_dir}/ are current (`lkm report {run_dir}` rebuilds them)")
        return
    console.print(f"{summary.ran} fits in {summary.seconds:.1f} s; {len(written)} files written under {run_dir}/", highlight=False)
    if summary.failed:
        raise _fail(LkmError(f"{summary.failed} fit(s) failed (recorded with status 'error'); first: {summary.first_error}"), 1)


def _fit_and_report(spec, plan, store, source: str, *, jobs: int, fresh: bool, progress: bool):
    """Fit what the run folder does not hold yet, write provenance and rebuild the report
    unless it is current. Returns the execution summary and the files written (None:
    the report was current)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

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
    try:
        # SIGTERM is handled like Ctrl-C (the command runs under interrupt_on): execute()
        # kills its workers, then this message.
        with Progress(
            TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console,
            disable=not progress, transient=False,
        ) as bar:
            tid = bar.add_task("fitting", total=todo)
            summary = execute(plan, store, jobs=jobs, on_progress=lambda n: bar.advance(tid, n))
    except KeyboardInterrupt as exc:
        raise _fail(LkmError(
            f"interrupted ({interrupt_name(exc)}); every finished fit is recorded in {run_dir}/records"
            " — run the same command again to resume"), interrupt_exit_code(exc)) from None
    store.write_provenance({
        "command": " ".join(shlex.quote(a) for a in ["lkm", *sys.argv[1:]]),
        "spec_source": source, "started_at": started, "seconds": round(summary.seconds, 3),
        "jobs": jobs, "seeds": {"protocol": getattr(spec.protocol, "seed", None)},
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


def _print_notes(spec) -> None:
    """What validation changed in the spec without refusing it (e.g. duplicate grid values removed)."""
    for note in spec.notes:
        err_console.print(_line(("note:", "yellow"), f" {note}"))


def _print_plan(plan, done: set[str], run_dir: Path) -> None:
    from lkm.runner import plan_table

    t = Table(title=f"plan for {plan.spec.name} -> {run_dir}/ ({plan.spec.describe_protocol()})")
    for col in ("dataset", "method", "splits", "settings", "fits", "recorded"):
        t.add_column(col, justify="left" if col in ("dataset", "method") else "right")
    rows = plan_table(plan, done)
    for r in rows:
        t.add_row(*(str(r[c]) for c in ("dataset", "method", "splits", "settings", "fits", "recorded")))
    console.print(t)
    total = sum(r["fits"] for r in rows)
    recorded = sum(r["recorded"] for r in rows)
    console.print(f"{total} fits in all, {recorded} already recorded, {total - recorded} to run.")
    for ds, msg in plan.unavailable.items():
        console.print(_line(("unavailable", "yellow"), f" {ds}: {msg}"))


def _print_summary(run_dir: Path) -> None:
    import pandas as pd

    path = run_dir / "tables" / "summary.csv"
    if not path.is_file():
        return
    df = pd.read_csv(path, dtype=str).fillna("–")
    t = Table(title="summary (accuracy % at the selected setting)")
    for col in df.columns:
        t.add_column(col)
    for row in df.itertuples(index=False):
        t.add_row(*row)
    console.print(t)




@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory written by `lkm run` or `lkm sweep`.", show_default=False)]) -> None:
    """Rebuild tables and figures of RUN_DIR from its stored records, without refitting.

    Refuses (exit 2) a folder whose spec.yaml changed since the run or that lost its
    plan.json: the tables would mix records of several spec versions."""
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
    console.print(f"{len(written)} files written under {run_dir}/")
