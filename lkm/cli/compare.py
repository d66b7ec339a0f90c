"""`lkm compare`: rank a new classifier against the benchmark without refitting the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from lkm.cli.app import (
    ClusterOpt,
    DataDirOpt,
    DryOpt,
    JobsOpt,
    MaxFitsOpt,
    ProgressOpt,
    app,
    console,
    err_console,
    exit_error,
    print_rows,
    text_line,
    use_data_dir,
)
from lkm.cli.running import cluster_label, engine, run_spec
from lkm.engine.workers import DEFAULT_JOBS
from lkm.errors import LkmError, SpecError


@app.command()
def compare(
    ctx: typer.Context,
    estimator: Annotated[str, typer.Argument(help="The classifier to rank: a method key (`lkm methods`), a dotted path to any scikit-learn-style classifier (e.g. sklearn.neighbors.KNeighborsClassifier, mypackage.MyClassifier), or a YAML file holding one spec method entry ({name, estimator, params, tune}).", show_default=False)],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", metavar="NAME=GRID", help="A parameter: one value fixes it, several (`C=0.1,1,10`, or START:STOP:COUNT) are tuned by the benchmark's inner CV on each training part. Against a benchmark that draws each method's settings from ranges, the new method gets the same budget: the values' smallest and largest bound a log range (integers stay integers; text values are a choice) from which the benchmark's number of settings is drawn. Repeat for more.", show_default=False)] = None,
    name: Annotated[str | None, typer.Option("--name", help="The name shown in the tables (default: the class name).", show_default=False)] = None,
    against: Annotated[Path | None, typer.Option("--against", help="A run folder of the benchmark to rank against (default: the published results that ship with lkm, docs/runs/cross_paper, sha256-checked; with --smoke: results/cross_paper-smoke).", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run folder of the new method (default: results/compare/NAME, or NAME-smoke); rerunning resumes. The comparison goes to its comparison/ subfolder.", show_default=False)] = None,
    jobs: JobsOpt = DEFAULT_JOBS,
    data_dir: DataDirOpt = None,
    dry_run: DryOpt = False,
    progress: ProgressOpt = True,
    smoke: Annotated[bool, typer.Option("--smoke", help="Rank against the benchmark's smoke run (3 small sets, 3 folds) instead: checks a new method end to end in seconds. Not evidence.")] = False,
    cluster: ClusterOpt = None,
    max_fits: MaxFitsOpt = None,
    calibrate: Annotated[bool, typer.Option("--calibrate/--no-calibrate", help="Refit one benchmark method (SVM) now on the benchmark's 3 smallest data sets and scale its recorded seconds by the now / recorded ratio, so the seconds beside the new method's are this machine's (a few seconds: 15 fits on the published benchmark). --no-calibrate: the recorded seconds as they are, labelled with the machine and day of each.")] = True,
) -> None:
    """Rank ESTIMATOR against every method of the benchmark, fitting only ESTIMATOR.

    It runs on the benchmark's exact splits (data sets, subsample, outer folds, inner
    CV: copied from the reference run's spec.yaml) and is joined to the recorded results
    of the others: its rank and the critical difference, its wins/ties/losses,
    Wilcoxon–Holm p and Bayesian signed-rank probabilities (1-point ROPE) against each
    method, what its inner CV chose on each data set, and where it sits in accuracy
    against seconds (the benchmark's recorded seconds calibrated to this machine by one
    method refitted now; --no-calibrate leaves them as recorded, labelled). The number
    of fits is printed before any starts. A data set on which ESTIMATOR fails is
    recorded as failed and left out of the ranking, with a warning; when every fit
    fails, the command ends with the failures and exit 1.

    A local reference (--against, or the smoke run) is checked first, as `lkm report`
    checks a run: its spec.yaml must be the one its plan.json was written from, every
    planned fit recorded and the records consistent, and the spec a benchmark (two or more
    data sets, every method one setting per data set chosen by inner CV or fixed, a tuned
    method); otherwise it is refused in one line (exit 2).

    Examples: `lkm compare sklearn.neighbors.KNeighborsClassifier --param n_neighbors=1,3,5,9,15,25 --jobs 2`;
    `lkm compare svm --name SVM-default`; `lkm compare mine.yaml --smoke`.
    """
    from lkm.api import calibrate_timing, prepare_comparison, rank_against
    from lkm.report.compare import NoResult

    try:
        with engine(jobs, cluster, dry_run, cluster_label(ctx)) as on_cluster:
            use_data_dir(data_dir)
            plan = prepare_comparison(estimator, _grids(param), name=name, against=against, out=out, smoke=smoke,
                                      max_fits=max_fits)
            _announce(plan.spec, plan.reference, calibrate)
            failed = False
            try:
                run_spec(plan.spec, plan.source, plan.run_dir, jobs, False, dry_run, progress, cluster=on_cluster)
            except typer.Exit as exc:  # failed fits: rank on the rest, with a warning
                if exc.exit_code != 1:
                    raise
                failed = True
            if dry_run:
                return
            calibration = calibrate_timing(plan, jobs) if calibrate else None
            try:
                comparison = rank_against(plan, smoke, calibration)
            except NoResult as exc:
                if failed:  # run_spec printed the failures (its summary table) and their one error line
                    raise typer.Exit(1) from None
                raise exit_error(exc, 1) from None
            _report(comparison, failed)
    except LkmError as exc:
        raise exit_error(exc) from None


def _grids(param: list[str] | None) -> dict[str, list[Any]]:
    """NAME -> values from the --param NAME=GRID options (one value: fixed)."""
    from lkm.spec import parse_grid

    grids: dict[str, list[Any]] = {}
    for item in param or []:
        key, sep, grid = item.partition("=")
        if not sep or not key.isidentifier():
            raise SpecError(f"--param {item!r}: write NAME=GRID, e.g. n_neighbors=1,3,5")
        try:
            grids[key] = parse_grid(grid)
        except ValueError as exc:
            raise SpecError(f"--param {key}: {exc}") from None
    return grids


def _announce(spec: Any, reference: Path, calibrate: bool) -> None:
    from lkm.report.compare import CALIBRATION_METHOD, CALIBRATION_SETS, fit_count

    splits = json.loads((reference / "plan.json").read_text(encoding="utf-8")).get("splits") or {}
    tasks, per_task = fit_count(spec, {d.id: int(splits.get(d.id, 0)) for d in spec.datasets})
    fits = tasks * per_task
    m = spec.methods[0]
    if m.tune is None:
        how = "one fit each, parameters fixed"
    elif m.tune.grid is not None:
        how = (f"{per_task - 1} inner fits ({' × '.join(str(len(v)) for v in m.tune.grid.values())} settings × "
               f"{m.tune.cv} folds) + 1 refit each")
    else:
        how = (f"{m.tune.size} settings drawn from ranges, searched by {m.tune.cv}-fold inner CV"
               + (f" with successive halving (factor {m.tune.halving})" if m.tune.halving else "") + " + 1 refit each")
    _say(f"{m.name}: {tasks} outer folds on {len(spec.datasets)} data sets, {how}: {fits} model fits in all. "
         f"The other methods' results are read from {reference}, not refitted"
         + (f"; {CALIBRATION_METHOD} is refitted on the {CALIBRATION_SETS} smallest sets to time this machine "
            "(--no-calibrate skips it)." if calibrate else "."))


def _say(text: str, bold: int = 0) -> None:
    """A paragraph wrapped at the console's width (80 when piped, or $COLUMNS), its first
    ``bold`` characters in bold."""
    import textwrap

    from rich.text import Text

    line = Text(textwrap.fill(text, width=console.width, break_long_words=False, break_on_hyphens=False))
    line.stylize("bold", 0, bold)
    console.print(line, soft_wrap=True)


def _report(comparison: Any, failed: bool) -> None:
    """The new method's rank, its pairwise tests and where the comparison was written."""
    from lkm.report.ranking import ROPE

    payload, name = comparison.payload, comparison.name
    if comparison.selected:
        print_rows(f"{name}: chosen by the inner CV (most frequent value, folds)", ["dataset", "selected"],
                   [[d, s] for d, s in comparison.selected.items()])
    _say(f"{name}: rank {comparison.rank} of {comparison.n_methods} (average rank "
         f"{comparison.average_ranks[name]:.2f}) over {comparison.n_datasets} data sets; Nemenyi critical difference "
         f"{comparison.cd:.2f}", bold=len(name))
    _print_pairs(comparison.pairwise)
    _say(f"W / T / L: {name}'s wins, ties and losses over the data sets; better / ROPE / worse: Bayesian "
         f"probabilities (ROPE ±{ROPE:g} point; pairwise.md has their Monte Carlo errors).")
    if comparison.timing:
        _say(comparison.timing)
    _say(f"Comparison written to {comparison.folder}/ (ranking.md, pairwise.md, speed.md, "
         "critical_difference.png, accuracy_time.png)")
    if payload["failed_datasets"] or payload["dropped_datasets"]:
        gaps = payload["failed_datasets"] or payload["dropped_datasets"]
        err_console.print(text_line(("warning:", "yellow"), f" {name} has no result on {len(gaps)} data set(s), "
                                    f"ranked on the other {comparison.n_datasets}: "
                                    + "; ".join(f"{d}: {w}" for d, w in gaps.items())))
    elif failed:
        err_console.print(text_line(("warning:", "yellow"), " some fits failed; see the run's records"))


#: The pairwise columns the terminal shows (pairwise.md has every column; a key ending in
#: "(|" or "Bayes" is the start of the column's name), by their short names.
PAIR_COLUMNS = {"b": "against", "a wins / ties / losses": "W / T / L", "mean a − b (points)": "mean Δ",
                "Holm p": "Holm p", "P(a better)": "better", "P(|": "ROPE", "P(b better)": "worse", "Bayes": "Bayes"}


def _print_pairs(frame: Any) -> None:
    """The pairwise tests in 80 columns, every name whole: the probabilities to three
    decimals without their Monte Carlo errors (the cells of pairwise.json, the table
    writer's twin of pairwise.md, cut at " ± ")."""
    columns = [key if key in frame.columns else next(c for c in frame.columns if c.startswith(key)) for key in PAIR_COLUMNS]
    rows = [[_short(str(row[c])) for c in columns] for _, row in frame.iterrows()]
    print_rows(None, list(PAIR_COLUMNS.values()), rows, right={"W / T / L", "mean Δ", "Holm p", "better", "ROPE", "worse"})


def _short(cell: str) -> str:
    """A probability "0.9496 ± 0.0002" as "0.950"; any other cell as it is."""
    head, sep, _ = cell.partition(" ± ")
    try:
        return f"{float(head):.3f}" if sep else cell
    except ValueError:
        return cell
