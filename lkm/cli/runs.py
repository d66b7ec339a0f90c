"""`lkm run`, `lkm sweep` and `lkm report`: a spec's fits into a run folder, and its tables."""

from __future__ import annotations

import json
import re
import sys
import time
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
    app,
    console,
    exit_error,
    use_data_dir,
)
from lkm.cli.running import (
    cluster_label,
    engine,
    files_line,
    print_notes,
    print_outputs,
    print_report_warnings,
    print_site,
    print_summary,
    run_spec,
    spec_path,
)
from lkm.engine.workers import DEFAULT_JOBS
from lkm.errors import LkmError, SpecError, did_you_mean


@app.command()
def run(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="Experiment spec: a YAML file (e.g. configs/quickstart.yaml in a clone) or the name of a spec lkm ships (e.g. quickstart, lpl_vs_svm; `lkm specs list`).", show_default=False)],
    out: OutOpt = None,
    jobs: JobsOpt = DEFAULT_JOBS,
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

    Examples: `lkm run quickstart --jobs 2` (a spec lkm ships, from any folder);
    `lkm run quickstart --cluster local:2` (a dask cluster on this machine);
    `lkm run lpl_vs_svm --smoke`; `lkm run my_spec.yaml` (a file: `lkm specs show NAME --out my_spec.yaml`).
    """
    from lkm.spec import load_spec

    try:
        with engine(jobs, cluster, dry_run, cluster_label(ctx)) as on_cluster:
            use_data_dir(data_dir)
            path = spec_path(spec)
            s = load_spec(path, smoke=smoke, max_fits=max_fits)
            print_notes(s)
            run_spec(s, str(path), out, jobs, fresh, dry_run, progress, cluster=on_cluster)
    except LkmError as exc:
        raise exit_error(exc) from None


@app.command(cls=GridCommand)
def sweep(
    ctx: typer.Context,
    spec: Annotated[Path | None, typer.Argument(help="Spec to sweep: a YAML file or the name of a spec lkm ships (omit for an ad-hoc sweep of --method on --dataset).", show_default=False)] = None,
    sigma: Annotated[str | None, typer.Option("--sigma", metavar="[GRID]", help="Sigma grid, e.g. `0.5,1,2`, or START:STOP:COUNT for COUNT log-spaced values. Bare `--sigma`: the paper's grid `0.01:100:39` (39 values from 0.01 to 100).", show_default=False)] = None,
    k: Annotated[str | None, typer.Option("--k", metavar="[GRID]", help="Neighbour-count grid for local methods, e.g. `5,9,13,17` or `auto,5,9`. Bare `--k`: the paper's auto,5,9,13,17.", show_default=False)] = None,
    param: Annotated[list[str] | None, typer.Option("--param", metavar="NAME=GRID", help="Any other parameter of the methods, e.g. `--param beta=0.1,1,10`; `--beta 0.1,1,10` is the same.", show_default=False)] = None,
    method: Annotated[list[str] | None, typer.Option("--method", "-m", help="Ad-hoc sweep: estimator keys or dotted paths (default: pl, lpl, svm). See `lkm methods`.", show_default=False)] = None,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Ad-hoc sweep: dataset names (default: the quickstart data). See `lkm datasets list`.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (default: `results/<sweep name>`, a name made of the methods, datasets, swept parameters and a hash of the spec). Rerunning the same sweep resumes.")] = None,
    jobs: JobsOpt = DEFAULT_JOBS,
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
    * `lkm sweep lpl_k_diabetes --k 5,9,13,17 --sigma 1:100:20`
    """
    try:
        with engine(jobs, cluster, dry_run, cluster_label(ctx)) as on_cluster:
            _sweep(spec, sigma, k, param, method, dataset, out, jobs, data_dir, fresh, dry_run, progress, max_fits,
                   on_cluster)
    except LkmError as exc:
        raise exit_error(exc) from None


def _sweep(spec, sigma, k, param, method, dataset, out, jobs, data_dir, fresh, dry_run, progress, max_fits,
           cluster=None) -> None:
    """`lkm sweep`'s work, inside its error boundary and warm workers (or connected cluster)."""
    from lkm.spec import load_spec

    use_data_dir(data_dir)
    grids = _command_grids(sigma, k, param)
    if spec is not None:
        if method or dataset:
            raise SpecError("--method/--dataset are for ad-hoc sweeps without a SPEC; edit the spec instead")
        path = spec_path(spec)
        base, source = load_spec(path, max_fits=max_fits), str(path)
    else:
        base, source = None, "<ad-hoc sweep>"
    s = sweep_spec(base, grids, source, methods=method, datasets=dataset, max_fits=max_fits)
    print_notes(s)
    run_spec(s, source, out, jobs, fresh, dry_run, progress, cluster=cluster)


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
    from lkm.files import text_sha256
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
                condition = conditional_parameter(m.estimator, name)
                assert condition is not None  # unused_parameter gives a reason only for a conditional parameter
                other, values = condition
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


@app.command()
def report(
    run_dir: Annotated[Path | None, typer.Argument(help="A run directory written by `lkm run` or `lkm sweep` (not with --all).", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="The report of every reproduction (index.html, report.md, figures/, tables/) from recorded runs or from a results pack, instead of one run's tables.")] = False,
    results: Annotated[str, typer.Option("--results", metavar="FOLDER|PACK", help="With --all: the folder holding the run folders (what `lkm reproduce --results` wrote), or a results pack: `published`, the one that ships with lkm (from any folder; in a clone it is `docs/runs`, which works too), a pack folder, a pack archive (.tar.gz) or its URL (append #sha256=HEX, the archive's 64-hex-digit sha256, to check it). An archive may unpack to at most 1 GiB and weigh at most 256 MiB; LKM_PACK_MAX_BYTES sets the first (the second is a quarter of it).")] = "results",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="With --all: the report folder (default: RESULTS/report; for a pack, results/snapshot-report). A pack's report and its run tables are written there only, never into the pack.", show_default=False)] = None,
    smoke: Annotated[bool, typer.Option("--smoke", help="With --all: the report of the smoke runs (`lkm reproduce all --smoke`), into RESULTS/report-smoke/.")] = False,
    jobs: JobsOpt = DEFAULT_JOBS,
) -> None:
    """Rebuild tables and figures of RUN_DIR from its stored records, without refitting; or,
    with --all, the report of every reproduction.

    Refuses (exit 2) a folder whose spec.yaml changed since the run or that lost its
    plan.json: the tables would mix records of several spec versions.

    `--all` reads each paper's claims table, each run folder's tables, figures and
    provenance, and the cross-paper ranking, and writes RESULTS/report/index.html (static:
    open it in a browser, no server) and report.md; nothing is fitted (seconds). A run not
    made yet is listed in the report with the command that makes it.

    `--all --results published` builds the full report from the results that ship with
    lkm, from any folder (a results pack: records, specs and provenance, its manifest
    checked against lkm's pin and every file against the manifest's sha256; in a clone
    it is `docs/runs`): every run's tables and figures, every claim and the benchmark's
    ranking are computed from the records into --out (on --jobs processes: 25-60 s with --jobs 2
    on 2 cores; 3-13 s the second time), never into the pack.

    Examples: `lkm report results/quickstart`; `lkm report --all` (= `make report`);
    `lkm report --all --results published --out lkm-report` (from any folder);
    `lkm report --all --results docs/runs --out /tmp/lkm-report` (in a clone, = `make report-snapshot`);
    `lkm report --all --smoke --results /tmp/smoke` (after `lkm reproduce all --smoke --results /tmp/smoke`).
    """
    if all_:
        if run_dir is not None:
            raise exit_error(LkmError(f"give either RUN_DIR ({run_dir}) or --all, not both"))
        _report_all(results, out, smoke, jobs)
        return
    if run_dir is None:
        raise exit_error(LkmError("give a run directory (e.g. `lkm report results/quickstart`), or --all for the report of every reproduction"))
    if smoke or out is not None or results != "results":
        what = "--smoke" if smoke else "--out" if out is not None else "--results"
        raise exit_error(LkmError(f"{what} goes with --all (a run directory's tables are written into it)"))
    from lkm.engine.store import RunStore
    from lkm.report import build_report
    from lkm.spec import load_spec

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
        raise exit_error(exc) from None
    print_summary(run_dir)
    console.print(files_line(written, run_dir))
    print_report_warnings(written)
    print_outputs(run_dir, spec)


#: `--results published`: the results pack that ships with lkm (a folder named so: ./published).
PUBLISHED = "published"


def _report_all(results: str, out: Path | None, smoke: bool, jobs: int) -> None:
    """`lkm report --all`: the report folder from the recorded runs under ``results``, or
    the full report of a results pack (:func:`lkm.reproduction.rebuild.report_from_pack`)."""
    from lkm.engine.workers import interrupt_exit_code, interrupt_name
    from lkm.papers import CROSS_SPEC, PAPERS
    from lkm.report.pack import is_pack_source, open_pack, published_pack
    from lkm.reproduction.site import build_site

    started = time.perf_counter()
    folder = Path(results)
    try:
        if results == PUBLISHED or is_pack_source(results):
            if smoke:
                raise LkmError("--smoke: a results pack holds full runs, not smoke runs")
            pack = published_pack() if results == PUBLISHED else open_pack(results)
            report_dir = out or Path("results") / "snapshot-report"
            try:
                written = _report_pack(pack, report_dir, jobs, PAPERS, CROSS_SPEC, results)
            except KeyboardInterrupt as exc:  # SIGTERM too (interrupt_on): the workers are already killed
                raise exit_error(LkmError(
                    f"interrupted ({interrupt_name(exc)}); the steps already built are kept in {report_dir}"
                    " — run the same command again to finish the report"), interrupt_exit_code(exc)) from None
            where = f"{results} ({pack.root})" if results == PUBLISHED else results
            what = f"from the results pack {where} (version {pack.version}, {len(pack.runs)} runs)"
        else:
            if not folder.is_dir():
                raise LkmError(f"--results: {results} is not a folder (run `lkm reproduce all{' --smoke' if smoke else ''}` first"
                               f"{'' if smoke else ', or give --results published: the results that ship with lkm'})")
            written = build_site(folder, PAPERS, CROSS_SPEC, out=out, smoke=smoke)
            what = "from the recorded runs"
    except LkmError as exc:
        raise exit_error(exc) from None
    print_site(written)
    console.print(f"built in {time.perf_counter() - started:.1f} s {what} (nothing fitted)", highlight=False)


def _report_pack(pack: Any, out: Path, jobs: int, papers: Any, cross_spec: str, source: str) -> Any:
    """A pack's report with a progress bar (steps done, elapsed, ETA) on a terminal."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from lkm.engine.workers import effective_jobs
    from lkm.reproduction.rebuild import report_from_pack

    n_jobs = effective_jobs(jobs)  # -1: one per core
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    # no refresh thread: the steps run in forked processes, which must not inherit a running thread's locks
    with Progress(*columns, console=console, transient=True, auto_refresh=False,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(f"report of {len(pack.runs)} runs", total=None)

        def on_done(what: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=f"report: {what}")
            bar.refresh()

        return report_from_pack(pack, papers, cross_spec, out, jobs=n_jobs, on_done=on_done, shown_as=source)
