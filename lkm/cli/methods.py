"""`lkm methods` and `lkm bench`: the estimators, and their speed against reference libraries."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from lkm.cli.app import (
    DataDirOpt,
    app,
    console,
    exit_error,
    print_rows,
    use_data_dir,
)
from lkm.errors import LkmError


@app.command()
def methods() -> None:
    """List the estimators (spec key, kind, class, parameters with defaults, what it is),
    the NPPS sampler included. A spec may also name any scikit-learn classifier by dotted
    path (e.g. sklearn.neighbors.KNeighborsClassifier).

    A table on a terminal wide enough for it; otherwise (piped, narrow) one tab-separated
    line per estimator, never truncated.
    """
    from lkm.methods import describe_estimators

    columns = ["key", "kind", "class", "parameters (default)", "what it is"]
    rows = [[r["key"], r["kind"], r["class"], r["parameters"], r["doc"]] for r in describe_estimators()]
    note = ("methods[].estimator takes a key above or any scikit-learn classifier's dotted path, "
            "e.g. sklearn.neighbors.KNeighborsClassifier")
    print_rows(None, columns, rows, wrap={"parameters (default)", "what it is"}, sep="\t")
    print(note, file=console.file)


@app.command()
def bench(
    data_dir: DataDirOpt = None,
    repeats: Annotated[int, typer.Option(min=1, help="Timing repeats; the best of them is reported.")] = 3,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the results as JSON here.")] = None,
    tangent: Annotated[bool, typer.Option(
        "--tangent/--no-tangent",
        help="Include the tangent-distance 1-NN on the full USPS test set (about two minutes, "
        "timed once, absolute target 300 s); --no-tangent skips it.",
    )] = True,
    large: Annotated[bool, typer.Option(
        "--large/--no-large",
        help="Also SVMClassifier against SVC on MNIST 3-vs-8 (11,982 rows) and letter (16,000 rows, "
        "26 classes), and the breast-cancer case, each idle and with a busy second core (a CPU "
        "burner the bench starts and stops), and on MNIST even/odd at 20,000 and 32,000 rows, "
        "each with SVMClassifier(backend='intelex') as the modern-solver anchor where installed; "
        "approximate neighbours on all of MNIST; about half an hour.",
    )] = False,
    scaling: Annotated[bool, typer.Option(
        "--scaling",
        help="Instead: time and peak memory of PL, KernelRidge, LPL (exact, annoy), SVM (LIBSVM and "
        "intelex), NPPS+SVM and SVC against the training size n (500 up to the largest feasible) on "
        "MNIST 3-vs-8, MNIST even/odd and letter, each method in its own process; prints a table "
        "with log-log slopes and the svm/svc and pl/kernel_ridge ratios (about an hour on 2 cores).",
    )] = False,
    problems: Annotated[str | None, typer.Option(
        help="--scaling: comma-separated problems (mnist-3-8, mnist-even-odd, letter); default all.")] = None,
    methods: Annotated[str | None, typer.Option(
        "--methods", help="--scaling: comma-separated methods (svc, svm, svm_intelex, npps_svm, pl, "
        "lpl_exact, lpl_annoy, kernel_ridge); default all.")] = None,
    max_seconds: Annotated[float | None, typer.Option(
        min=1, help="--scaling: seconds one cell may take (default 300); a method stops growing past it. --cost: CPU "
        "seconds (default there 60).", show_default=False)] = None,
    max_n: Annotated[int | None, typer.Option(min=2, help="--scaling: cap every training pool (a quick run).")] = None,
    sizes: Annotated[str | None, typer.Option(
        help="--scaling: comma-separated training sizes to try (each problem's pool size is always "
        "tried last), e.g. 20000,32000 with --problems mnist-even-odd for the 60,000-image row; "
        "default 500,1000,2000,4000,8000,16000,20000,32000,60000. --cost: the rows each set is drawn to "
        "(default 500,2000,5000); with --from-cells, the caps the whole-benchmark table totals, e.g. "
        "500,700,1000,2000 (log-log between the measured sizes).")] = None,
    figure: Annotated[Path | None, typer.Option(help="--scaling: also draw the log-log figure here (PNG).")] = None,
    cost: Annotated[bool, typer.Option(
        "--cost",
        help="Instead: CPU seconds of ONE outer fold of the cross-paper benchmark per method (its spec's "
        "tuning grid under the inner CV, the refit, the test prediction) with the set drawn to 500, "
        "1,000, 2,000 and 5,000 rows, each cell in a fresh one-thread process; cells past --max-seconds "
        "are extrapolated and marked; prints a table per set and the whole benchmark's CPU-hours per cap "
        "(see `make bench-cost`).")] = False,
    datasets: Annotated[str | None, typer.Option(
        "--datasets", help="--cost: comma-separated benchmark sets; default letter-recognition, mnist, "
        "isolet, spambase.")] = None,
    jobs: Annotated[int, typer.Option(min=1, help="--cost: cells run side by side (one thread each).")] = 1,
    budget_minutes: Annotated[float | None, typer.Option(
        min=0, help="--cost: no new cell starts after this many minutes; the rest are extrapolated.")] = None,
    from_cells: Annotated[Path | None, typer.Option(
        "--from-cells", help="--cost: measure nothing; print the tables of the cells saved by an earlier "
        "run (its --out JSON, or the OUT.cells.jsonl it writes cell by cell).", show_default=False)] = None,
    cluster: Annotated[str | None, typer.Option(
        "--cluster", metavar="ADDRESS",
        help="Instead: a sweep of 540 fits run locally with --jobs 1 and on the dask cluster ADDRESS "
        "(`local:2`, or a scheduler's tcp://HOST:PORT), in the same run: the speed-up, the cluster's "
        "overhead per fit (local:N only) and a check that both give the same records; a few minutes.",
        show_default=False)] = None,
) -> None:
    """Speed ratios against reference libraries, measured in the same run: five
    comparisons on one spambase fold (and breast cancer), HKNN against k-NN on USPS, and
    the tangent-distance 1-NN on USPS (an absolute target; skip it with --no-tangent);
    with --large, SVM against SVC at scale, idle and with a busy second core.

    With --scaling: how time and memory grow with n instead (see `make bench-scaling`).
    With --cost: the benchmark's cost per method and outer fold at 500 to 5,000 rows (`make bench-cost`).
    With --cluster local:2: the dask cluster engine against local workers (`make bench-cluster`).

    Ratios (ours / reference) carry across machines; seconds do not.
    """
    if scaling:
        _bench_scaling(data_dir, problems, methods, 300.0 if max_seconds is None else max_seconds, max_n, figure,
                       out, sizes)
        return
    if cost:
        _bench_cost(data_dir, datasets, methods, sizes, max_seconds, jobs, budget_minutes, out, from_cells)
        return
    if cluster:
        _bench_cluster(data_dir, cluster, out)
        return
    from lkm.bench.speed import format_bench, run_bench

    try:
        use_data_dir(data_dir)
        results = run_bench(data_dir=os.environ.get("LKM_DATA_DIR"), repeats=repeats, tangent=tangent,
                             large=large)
    except LkmError as exc:
        raise exit_error(exc) from None
    console.print(format_bench(results))
    if out:
        out.write_text(json.dumps(results, indent=2, default=str) + "\n")


def _bench_cluster(data_dir, address: str, out: Path | None) -> None:
    """``lkm bench --cluster ADDRESS``: one line per engine as it finishes, then the measures."""
    from lkm.bench.cluster import format_cluster_bench, run_cluster_bench

    try:
        use_data_dir(data_dir)
        result = run_cluster_bench(address, data_dir=os.environ.get("LKM_DATA_DIR"),
                                   on_line=lambda line: console.print(line, markup=False, highlight=False))
    except LkmError as exc:
        raise exit_error(exc) from None
    console.print(format_cluster_bench(result), markup=False, highlight=False)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, default=str) + "\n")


def _bench_cost(data_dir, datasets, methods, sizes, max_seconds, jobs, budget_minutes, out, from_cells=None) -> None:
    """``lkm bench --cost``: one line per cell as it finishes, then the tables."""
    from lkm.api import published_folder
    from lkm.bench.cost import (
        DATASETS,
        MAX_SECONDS,
        SIZES,
        cost_report,
        costliest_first,
        read_cells,
        run_cost,
    )

    def listed(text: str | None) -> list[str] | None:
        return [t.strip() for t in text.split(",") if t.strip()] if text else None

    try:
        chosen_sizes = [int(t) for t in listed(sizes) or SIZES]
    except ValueError:
        raise exit_error(LkmError(f"--sizes: expected comma-separated whole numbers, got {sizes!r}")) from None
    caps = sorted(set(chosen_sizes))  # the sizes measured are the caps the hours table totals
    records = published_folder() / "cross_paper" / "records"
    if from_cells is not None:
        try:
            text, _ = cost_report(read_cells(from_cells), records, caps=caps)
        except (OSError, ValueError, KeyError) as exc:
            raise exit_error(LkmError(f"--from-cells {from_cells}: {exc}")) from None
        console.print(text, markup=False, highlight=False)
        return

    def show(cell: dict) -> None:
        what = (f"{cell['cpu_seconds']:.1f} CPU s, {cell['wall_seconds']:.1f} wall s, {cell.get('fits')} fits"
                + ("" if cell.get("measured") else " (estimated from a sample)")
                if cell.get("estimate") in ("full", "sampled") else
                f"{cell['status']}: {cell.get('message', cell.get('killed', ''))}"
                + (f"; extrapolated {cell['cpu_seconds']:.0f} CPU s" if cell.get("extrapolated") else ""))
        console.print(f"[cost] {cell['dataset']} {cell['method']} n = {cell['n']:,}: {what}", markup=False)

    progress = out.with_suffix(".cells.jsonl") if out else None
    if progress:
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.write_text("")

    def keep(cell: dict) -> None:
        show(cell)
        if progress:
            with progress.open("a") as fh:
                fh.write(json.dumps(cell, default=str) + "\n")

    try:
        use_data_dir(data_dir)
        chosen = listed(methods)
        if chosen is None:  # the costliest first, so that a spent budget leaves cheap cells
            chosen = costliest_first(records)
        cells = run_cost(listed(datasets) or DATASETS, chosen, chosen_sizes,
                         max_seconds=MAX_SECONDS if max_seconds is None else max_seconds,
                         jobs=jobs, budget_seconds=None if budget_minutes is None else 60 * budget_minutes,
                         data_dir=os.environ.get("LKM_DATA_DIR"), on_cell=keep)
        text, hours = cost_report(cells, records, caps=caps)
    except ValueError as exc:
        raise exit_error(LkmError(str(exc))) from None
    except LkmError as exc:
        raise exit_error(exc) from None
    console.print(text, markup=False, highlight=False)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"cells": cells, "hours": hours}, indent=2, default=str) + "\n")


def _bench_scaling(data_dir, problems, methods, max_seconds, max_n, figure, out, sizes=None) -> None:
    """``lkm bench --scaling``: one line per cell as it finishes, then the table."""
    from lkm.bench.scaling import (
        METHODS,
        PROBLEMS,
        SIZES,
        run_scaling,
        scaling_figure,
        scaling_markdown,
    )

    def names(text: str | None, known, what: str) -> list[str]:
        chosen = [t.strip() for t in text.split(",") if t.strip()] if text else list(known)
        unknown = [t for t in chosen if t not in known]
        if unknown:
            raise exit_error(LkmError(f"--{what}: unknown {', '.join(unknown)}; known: {', '.join(known)}"))
        return chosen

    chosen_problems = names(problems, PROBLEMS, "problems")
    chosen_methods = names(methods, METHODS, "methods")
    try:
        chosen_sizes = sorted({int(t) for t in sizes.split(",") if t.strip()}) if sizes else list(SIZES)
    except ValueError:
        raise exit_error(LkmError(f"--sizes: expected comma-separated whole numbers, got {sizes!r}")) from None
    if not chosen_sizes or min(chosen_sizes) < 2:
        raise exit_error(LkmError(f"--sizes: each size must be at least 2, got {sizes!r}"))

    def show(cell: dict) -> None:
        what = (f"{cell['seconds']:.2f} s, {cell['peak_bytes'] / 2**20:.0f} MiB peak, accuracy {cell['accuracy']:.4f}"
                if cell["status"] == "ok" else f"{cell['status']}: {cell.get('message', '')}")
        console.print(f"[scaling] {cell['problem']} {cell['method']} n = {cell['n']:,}: {what}")

    try:
        use_data_dir(data_dir)
        results = run_scaling(chosen_problems, chosen_methods, sizes=chosen_sizes, max_seconds=max_seconds,
                              data_dir=os.environ.get("LKM_DATA_DIR"), max_n=max_n, on_cell=show)
    except LkmError as exc:
        raise exit_error(exc) from None
    table = scaling_markdown(results)
    console.print(table, markup=False, highlight=False)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2, default=str) + "\n")
        out.with_suffix(".md").write_text(table + "\n")
    if figure:
        console.print(f"figure: {scaling_figure(results, figure)}")
