"""The `lkm` command line. Thin: parses options and calls the library.

Every error a user can cause ends as one line naming the file, key or dataset, and a
non-zero exit code (2); records already written are never touched by an error.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup
from typer.exceptions import Abort, TyperException

from lkm.errors import LkmError, SpecError, did_you_mean
from lkm.workers import interrupt_exit_code, interrupt_name, interrupt_on

# Markup off: user text (spec paths, dataset names, messages) is printed as written; styled
# words go through `_line`.
console = Console(markup=False, highlight=False, soft_wrap=True)
err_console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

DATA_DIR_HELP = "Read-only dataset mirror laid out `<dataset>/<file>` (default: $LKM_DATA_DIR); files are still sha256-verified."


#: Errors a user can cause besides LkmError: files (missing, unreadable, a folder, full
#: disk, read-only), undecodable text, and input nested or aliased beyond the parser.
USER_ERRORS: tuple[type[BaseException], ...] = (LkmError, OSError, UnicodeError, RecursionError, MemoryError)


class _SweepArgs(TyperGroup):
    """The `lkm` command group: the error boundary, and `lkm sweep`'s grid options.

    Every command runs inside :meth:`invoke`: an error a user can cause
    (:data:`USER_ERRORS`) ends as one line and exit 2; anything else is a bug in lkm and
    ends as one line and exit 1, with the traceback under `lkm --debug`.

    Click cannot give an option an optional value, so `lkm sweep`'s arguments are
    rewritten before parsing: a bare `--sigma`/`--k` gets the value 'default', and an
    unknown `--beta 0.1:10:5` becomes `--param beta=0.1:10:5`.
    """

    def invoke(self, ctx):  # type: ignore[override]
        try:
            with interrupt_on():  # SIGTERM anywhere ends the command like Ctrl-C
                return super().invoke(ctx)
        except (typer.Exit, TyperException, Abort):
            raise
        except KeyboardInterrupt as exc:
            raise _fail(LkmError("interrupted"), interrupt_exit_code(exc)) from None
        except USER_ERRORS as exc:
            if _debug():
                raise
            raise _fail(exc) from None
        except Exception as exc:
            if _debug():
                raise
            raise _fail(LkmError(
                f"internal error (a bug in lkm; please report it): {type(exc).__name__}: {exc} "
                "— `lkm --debug ...` shows the traceback"), 1) from None

    KNOWN = {"--method", "-m", "--dataset", "-d", "--out", "-o", "--jobs", "-j", "--data-dir",
             "--fresh", "--dry-run", "--param", "--help", "--no-progress"}
    GRID_OPTIONS = {"--sigma", "--k"}

    def parse_args(self, ctx, args):  # type: ignore[override]
        if args and args[0] == "sweep":
            args = [args[0], *self._rewrite(args[1:])]
        return super().parse_args(ctx, args)

    def _rewrite(self, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            nxt = args[i + 1] if i + 1 < len(args) else None
            has_value = nxt is not None and not (nxt.startswith("--") or (nxt.startswith("-") and nxt[1:2].isalpha()))
            if a in self.GRID_OPTIONS:
                out += [a, nxt if has_value else "default"]
                i += 2 if has_value else 1
            elif a.startswith("--") and "=" not in a and a not in self.KNOWN:
                out += ["--param", f"{a[2:]}={nxt if has_value else 'default'}"]
                i += 2 if has_value else 1
            else:
                out.append(a)
                i += 1
        return out


app = typer.Typer(
    cls=_SweepArgs,
    help=(
        "lkm — local kernel machines: rerun the experiments of five papers on local kernel "
        "methods from YAML specs, and compare the methods fairly.\n\n"
        "Start with `lkm run configs/quickstart.yaml` (offline data, under a minute), then "
        "`lkm sweep --sigma` for an ad-hoc sigma sweep. Results go to `results/<spec name>/`: "
        "tables/ (Markdown, CSV, LaTeX, with the paper's numbers beside ours), figures/ "
        "(PNG, PDF), results.csv/.parquet and provenance.json."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)


@app.callback()
def _options(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of unexpected errors (bugs in lkm) instead of one line; also LKM_DEBUG=1.")] = False,
) -> None:
    if debug:
        os.environ["LKM_DEBUG"] = "1"


def _debug() -> bool:
    return os.environ.get("LKM_DEBUG", "") not in ("", "0")


datasets_app = typer.Typer(help="List, describe, download and verify the registered datasets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")
docs_app = typer.Typer(help="README's and docs/' tables and figures from the committed run snapshot docs/runs/.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


def _fail(exc: BaseException, code: int = 2) -> typer.Exit:
    err_console.print(_line(("error:", "bold red"), f" {_one_line(exc)}"), soft_wrap=True)
    return typer.Exit(code)


def _line(*parts: str | tuple[str, str]) -> Text:
    """One printable line from plain strings and (text, style) pairs, never parsed as markup."""
    return Text.assemble(*parts)


def _one_line(exc: BaseException) -> str:
    """The message of an error a user caused, as one line."""
    text = str(exc) if not isinstance(exc, OSError) or not exc.strerror else (
        f"{exc.filename}: {exc.strerror}" if exc.filename is not None else exc.strerror)
    return " ".join(text.split()) or type(exc).__name__


def _data_dir(data_dir: Path | None) -> Path | None:
    if data_dir is not None:
        if not data_dir.is_dir():
            raise LkmError(f"--data-dir: {data_dir} is not a directory")
        os.environ["LKM_DATA_DIR"] = str(data_dir)  # worker processes read it too
    return data_dir


# -- run / sweep -------------------------------------------------------------------
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (default: `results/<spec name>`). Rerunning into it resumes.")]
def _check_jobs(value: int) -> int:
    if value == 0 or value < -1:
        raise LkmError(f"--jobs {value}: give a number of worker processes >= 1, or -1 for one per core")
    return value


JobsOpt = Annotated[int, typer.Option("--jobs", "-j", callback=_check_jobs, help="Parallel worker processes (-1: one per core).")]
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help=DATA_DIR_HELP)]
FreshOpt = Annotated[bool, typer.Option("--fresh/--resume", help="--fresh discards this run directory's earlier records; --resume (default) computes only what is missing.")]
DryOpt = Annotated[bool, typer.Option("--dry-run", help="Print the task plan (fits per dataset and method) and exit without fitting.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar with ETA.")]
MaxFitsOpt = Annotated[int | None, typer.Option("--max-fits", min=1, help="Refuse plans with more fits than this (default 100000, or $LKM_MAX_FITS): a typo in a grid cannot start millions of fits.", show_default=False)]
SmokeOpt = Annotated[bool, typer.Option("--smoke", help="Apply the spec's `smoke:` overrides (few settings, run into `<name>-smoke/`): checks that every output is produced, fast.")]


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
def reproduce(
    paper: Annotated[str, typer.Argument(help="Paper key: `lpl` (Tsuji, Kudo, Tanaka, Localized Projection Learning) `npps` (Shin, Cho, NPPS and kNN invariance) or `lrr` (Li, Chen, Tang, local risk regularization).", show_default=False)],
    results: Annotated[Path, typer.Option("--results", help="Folder holding one run folder per experiment.")] = Path("results"),
    jobs: JobsOpt = 2,
    data_dir: DataDirOpt = None,
    smoke: SmokeOpt = False,
    progress: ProgressOpt = True,
    max_fits: MaxFitsOpt = None,
) -> None:
    """Run every experiment of a paper, then check the paper's claims from our numbers.

    Each experiment is a spec under configs/ (run into `RESULTS/<spec name>/`, resumable);
    the runs the claims read are rerun with permuted training rows and another BLAS thread
    count (`RESULTS/<spec name>-perturbed/`, only the settings the claims read), and a claim
    whose verdict changes is marked fragile; the claims table and the paper-vs-ours timing
    table go to `RESULTS/<paper>_claims/`.
    With everything recorded, a rerun only rebuilds tables and figures.

    Examples: `lkm reproduce lpl` (= `make reproduce-lpl`), `lkm reproduce npps --smoke` (CI).
    """
    from lkm.papers import PAPERS
    from lkm.spec import load_spec

    try:
        _data_dir(data_dir)
        if paper not in PAPERS:
            raise LkmError(f"unknown paper {paper!r}{did_you_mean(paper, PAPERS)}; known: {', '.join(PAPERS)}")
        module = PAPERS[paper]
        failed = []
        for experiment in module.SPECS:
            if not Path(experiment.spec).is_file():
                raise LkmError(f"{experiment.spec}: not found; run `lkm reproduce` from the repository root (where configs/ is)")
            spec = load_spec(experiment.spec, smoke=smoke, max_fits=max_fits)
            _print_notes(spec)
            n_jobs = min(jobs, experiment.jobs) if experiment.jobs else jobs
            try:
                _run_spec(spec, experiment.spec, results / spec.name, n_jobs, False, False, progress)
            except typer.Exit as exc:  # a failed fit: report it, go on with the other experiments
                if exc.exit_code != 1:
                    raise
                failed.append(spec.name)
        # Fragility check (lkm.papers.common): the runs the claims read, rerun with
        # training rows permuted and another BLAS thread count, at the settings they read.
        from lkm.papers.common import perturbed_experiments

        for spec, source in perturbed_experiments(module, results, smoke):
            # workers x BLAS threads within the cores: oversubscribed small solves slow down many-fold
            threads = (spec.perturb.blas_threads if spec.perturb else None) or 1
            try:
                _run_spec(spec, source, results / spec.name, max(1, jobs // threads), False, False, progress)
            except typer.Exit as exc:
                if exc.exit_code != 1:
                    raise
                failed.append(spec.name)
        written = module.write_summary(results, smoke)
        claims = next(p for p in written if p.name == "claims.md")
        console.print(claims.read_text(), highlight=False, markup=False)
        console.print(f"claims and timing tables written under {claims.parent}/", highlight=False)
        if failed:
            raise LkmError(f"some fits failed in: {', '.join(failed)} (see their records)")
    except LkmError as exc:
        raise _fail(exc, 1 if "fits failed" in str(exc) else 2) from None


# -- report / methods / bench ---------------------------------------------------------
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


@app.command()
def methods() -> None:
    """List the estimators (spec key, class, paper) and their parameters with defaults."""
    from lkm.methods import METHODS

    t = Table(title="estimators (use the key in a spec's methods[].estimator)")
    t.add_column("key")
    t.add_column("class")
    t.add_column("parameters (default)")
    t.add_column("what it is")
    for key, cls in METHODS.items():
        params = ", ".join(f"{k}={v!r}" for k, v in cls().get_params().items())
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        t.add_row(key, cls.__name__, params, doc)
    console.print(t)


@app.command()
def bench(
    data_dir: DataDirOpt = None,
    repeats: Annotated[int, typer.Option(min=1, help="Timing repeats; the best of them is reported.")] = 3,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the results as JSON here.")] = None,
) -> None:
    """Speed ratios against reference libraries, measured in the same run on one spambase fold.

    Ratios (ours / reference) carry across machines; seconds do not.
    """
    from lkm.bench import format_bench, run_bench

    try:
        _data_dir(data_dir)
        results = run_bench(data_dir=os.environ.get("LKM_DATA_DIR"), repeats=repeats)
    except LkmError as exc:
        raise _fail(exc) from None
    console.print(format_bench(results))
    if out:
        out.write_text(json.dumps(results, indent=2, default=str) + "\n")


# -- datasets ---------------------------------------------------------------------------
@datasets_app.command("list")
def datasets_list() -> None:
    """All registered datasets: name, source, size, and whether they need downloading."""
    from lkm.data import list_datasets

    t = Table(title="registered datasets (`lkm datasets info NAME` for details)")
    for col in ("name", "source", "rows", "features", "classes", "aliases"):
        t.add_column(col)
    for info in list_datasets():
        n_cls = len(info.class_counts) if info.class_counts else "–"
        t.add_row(info.name, info.source, str(info.n_samples or "–"), str(info.n_features or "–"),
                  str(n_cls), ", ".join(info.aliases))
    console.print(t)


@datasets_app.command("info")
def datasets_info(
    name: Annotated[str, typer.Argument(help="Dataset name or alias.", show_default=False)],
    data_dir: DataDirOpt = None,
) -> None:
    """Rows, features, class counts, files, source and citation of one dataset."""
    from lkm.data import dataset_info

    try:
        _data_dir(data_dir)
        info = dataset_info(name)
    except LkmError as exc:
        raise _fail(exc) from None
    console.print(_line((info.name, "bold"), f" ({info.source})" + (f", aliases: {', '.join(info.aliases)}" if info.aliases else "")))
    console.print(info.description, highlight=False)
    console.print(f"rows: {info.n_samples}   features: {info.n_features}")
    if info.class_counts:
        console.print("classes: " + ", ".join(f"{k}: {v}" for k, v in info.class_counts.items()), highlight=False)
    for f in info.files:
        console.print(f"file: {f.dir}/{f.name}  {f.size} B  sha256 {f.sha256}\n      from {f.url or f.origin}", highlight=False)
    for k, v in (info.meta or {}).items():
        console.print(f"{k}: {v}", highlight=False)
    console.print(f"citation: {info.citation}", highlight=False)


@datasets_app.command("fetch")
def datasets_fetch(
    names: Annotated[list[str], typer.Argument(help="Dataset names.", show_default=False)],
    data_dir: DataDirOpt = None,
) -> None:
    """Download (or find in the mirror) and verify the files of NAMES."""
    from lkm.data import fetch

    failed = 0
    _data_dir(data_dir)
    for name in names:
        try:
            paths = fetch(name, data_dir=os.environ.get("LKM_DATA_DIR"))
            for p in paths:
                console.print(_line(("ok", "green"), f" {name}: {p}"))
        except LkmError as exc:
            failed += 1
            err_console.print(_line(("error:", "bold red"), f" {_one_line(exc)}"), soft_wrap=True)
    if failed:
        raise typer.Exit(2)


@datasets_app.command("verify")
def datasets_verify(data_dir: DataDirOpt = None) -> None:
    """Check the sha256 of every registered file found in the mirror or the download cache."""
    from lkm.data import verify

    _data_dir(data_dir)
    results = verify(data_dir=os.environ.get("LKM_DATA_DIR"))
    t = Table(title="dataset files")
    for col in ("dataset", "file", "status", "path"):
        t.add_column(col)
    bad = 0
    for r in results:
        style = {"ok": "green", "mismatch": "bold red", "missing": "yellow"}.get(r.status, "")
        bad += r.status == "mismatch"
        t.add_row(r.dataset, r.file, Text(r.status, style=style), str(r.path or "–"))
    console.print(t)
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "missing", "mismatch")}
    console.print(f"{counts['ok']} ok, {counts['missing']} missing, {counts['mismatch']} checksum mismatches")
    if bad:
        raise typer.Exit(1)
    if not counts["ok"]:
        from lkm.data.fetch import cache_dir, resolve_data_dir

        where = " or ".join(str(p) for p in (resolve_data_dir(None), cache_dir()) if p is not None)
        raise _fail(LkmError(f"no registered dataset file found in {where}: nothing was verified "
                             "(set LKM_DATA_DIR or --data-dir to a mirror, or `lkm datasets fetch NAME`)"), 1)


# -- docs -------------------------------------------------------------------------------
@docs_app.command("snapshot")
def docs_snapshot(
    results: Annotated[Path, typer.Option("--results", help="Folder holding the run folders (`lkm reproduce` writes them).")] = Path("results"),
    root: Annotated[Path, typer.Option("--root", help="Repository root (where README.md and docs/ are).")] = Path("."),
) -> None:
    """Copy the runs the docs cite from RESULTS into docs/runs/ (spec, provenance, lock
    file, the plan's records gzipped) and the figures the docs show into docs/figures/."""
    from lkm.report.docs import SNAPSHOT, snapshot

    report = snapshot(results, root)
    for name, n in report.runs.items():
        console.print(_line(("snapshot", "green"), f" {name}: {n} records"))
    for name in report.kept:
        err_console.print(_line(("kept", "yellow"), f" {name}: not in {results}/, the committed snapshot stays"))
    for name in report.absent:
        err_console.print(_line(("absent", "yellow"), f" {name}: neither in {results}/ nor in {SNAPSHOT}/ (run its reproduction)"))
    for name in report.removed:
        console.print(f"removed {name}: no longer cited", highlight=False)
    for fig in report.missing_figures:
        err_console.print(_line(("missing figure", "yellow"), f" {fig}: not in the run folder's figures/"))
    console.print(f"{len(report.figures)} figures copied; {root / SNAPSHOT}/ is {report.bytes / 1e6:.2f} MB", highlight=False)


@docs_app.command("build")
def docs_build(
    root: Annotated[Path, typer.Option("--root", help="Repository root (where README.md and docs/ are).")] = Path("."),
) -> None:
    """Rewrite every generated table (`<!-- lkm:begin ID -->` blocks) of README.md and
    docs/reproductions/ from docs/runs/."""
    from lkm.report.docs import build

    try:
        changed = build(root)
    except LkmError as exc:
        raise _fail(exc, 1) from None
    console.print(f"rewrote {', '.join(changed)}" if changed else "every generated table is current", highlight=False)


@docs_app.command("check")
def docs_check(
    root: Annotated[Path, typer.Option("--root", help="Repository root (where README.md and docs/ are).")] = Path("."),
) -> None:
    """Exit 1 listing every generated table that differs from what docs/runs/ gives (and
    every missing figure); `lkm docs build` rewrites them."""
    from lkm.report.docs import check

    problems = check(root)
    for p in problems:
        err_console.print(p, highlight=False, markup=False, soft_wrap=True)
    if problems:
        err_console.print(f"{len(problems)} problem(s); `make docs-figures` (or `lkm docs build`) regenerates the tables",
                          highlight=False)
        raise typer.Exit(1)
    console.print("every generated table matches docs/runs/")


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
