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
    param: Annotated[list[str] | None, typer.Option("--param", "-p", metavar="NAME=GRID", help="A parameter: one value fixes it, several (`C=0.1,1,10`, or START:STOP:COUNT) are tuned by the benchmark's inner CV on each training part. Repeat for more.", show_default=False)] = None,
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
) -> None:
    """Rank ESTIMATOR against every method of the benchmark, fitting only ESTIMATOR.

    It runs on the benchmark's exact splits (data sets, subsample, outer folds, inner
    CV: copied from the reference run's spec.yaml) and is joined to the recorded results
    of the others: its rank and the critical difference, its wins/ties/losses,
    Wilcoxon–Holm p and Bayesian signed-rank probabilities (1-point ROPE) against each
    method, and where it sits in accuracy against seconds. The number of fits is printed
    before any starts. A data set on which ESTIMATOR fails is recorded as failed and left
    out of the ranking, with a warning; when every fit fails, the command ends with the
    failures and exit 1.

    A local reference (--against, or the smoke run) is checked first, as `lkm report`
    checks a run: its spec.yaml must be the one its plan.json was written from, every
    planned fit recorded and the records consistent, and the spec a benchmark (two or more
    data sets, every method one setting per data set chosen by inner CV or fixed, a tuned
    method); otherwise it is refused in one line (exit 2).

    Examples: `lkm compare sklearn.neighbors.KNeighborsClassifier --param n_neighbors=1,3,5,9,15,25 --jobs 2`;
    `lkm compare svm --name SVM-default`; `lkm compare mine.yaml --smoke`.
    """
    from lkm.api import prepare_comparison, rank_against
    from lkm.report.compare import NoResult

    try:
        with engine(jobs, cluster, dry_run, cluster_label(ctx)) as on_cluster:
            use_data_dir(data_dir)
            plan = prepare_comparison(estimator, _grids(param), name=name, against=against, out=out, smoke=smoke,
                                      max_fits=max_fits)
            _announce(plan.spec, plan.reference)
            failed = False
            try:
                run_spec(plan.spec, plan.source, plan.run_dir, jobs, False, dry_run, progress, cluster=on_cluster)
            except typer.Exit as exc:  # failed fits: rank on the rest, with a warning
                if exc.exit_code != 1:
                    raise
                failed = True
            if dry_run:
                return
            try:
                comparison = rank_against(plan, smoke)
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


def _announce(spec: Any, reference: Path) -> None:
    from lkm.report.compare import fit_count

    splits = json.loads((reference / "plan.json").read_text(encoding="utf-8")).get("splits") or {}
    tasks, per_task = fit_count(spec, {d.id: int(splits.get(d.id, 0)) for d in spec.datasets})
    fits = tasks * per_task
    m = spec.methods[0]
    how = (f"{per_task - 1} inner fits ({' × '.join(str(len(v)) for v in m.tune.grid.values())} settings × "
           f"{m.tune.cv} folds) + 1 refit each" if m.tune is not None else "one fit each, parameters fixed")
    console.print(f"{m.name}: {tasks} outer folds on {len(spec.datasets)} data sets, {how}: {fits} model fits in all. "
                  f"The other methods' results are read from {reference}, not refitted.")


def _report(comparison: Any, failed: bool) -> None:
    """The new method's rank, its pairwise tests and where the comparison was written."""
    from lkm.report.ranking import ROPE

    payload, name = comparison.payload, comparison.name
    console.print(text_line((f"{name}", "bold"), f": rank {comparison.rank} of {comparison.n_methods} "
                            f"(average rank {comparison.average_ranks[name]:.2f}) over {comparison.n_datasets} data sets; "
                            f"Nemenyi critical difference {comparison.cd:.2f}"))
    console.print(_pairs_table(comparison.pairwise))
    console.print(f"Bayesian probabilities with a ROPE of ±{ROPE:g} point; comparison written to {comparison.folder}/ "
                  "(ranking.md, pairwise.md, speed.md, critical_difference.png, accuracy_time.png)")
    if payload["failed_datasets"] or payload["dropped_datasets"]:
        gaps = payload["failed_datasets"] or payload["dropped_datasets"]
        err_console.print(text_line(("warning:", "yellow"), f" {name} has no result on {len(gaps)} data set(s), "
                                    f"ranked on the other {comparison.n_datasets}: "
                                    + "; ".join(f"{d}: {w}" for d, w in gaps.items())))
    elif failed:
        err_console.print(text_line(("warning:", "yellow"), " some fits failed; see the run's records"))


def _pairs_table(frame: Any) -> Any:
    """The pairwise tests as a narrow console table (pairwise.md has every column), from
    the cells as displayed (pairwise.json, the table writer's twin of pairwise.md)."""
    from rich.table import Table

    short = {"b": "against", "a wins / ties / losses": "W / T / L", "mean a − b (points)": "mean Δ",
             "Holm p": "Holm p", "P(a better)": "P(better)", "P(b better)": "P(worse)"}
    rope = next(c for c in frame.columns if c.startswith("P(|"))
    bayes = next(c for c in frame.columns if c.startswith("Bayes"))
    columns = ["b", "a wins / ties / losses", "mean a − b (points)", "Holm p", "P(a better)", rope, "P(b better)", bayes]
    table = Table(*[short.get(c, "P(ROPE)" if c == rope else "Bayes") for c in columns], box=None, pad_edge=False)
    for _, row in frame.iterrows():
        table.add_row(*(str(row[c]) for c in columns))
    return table
